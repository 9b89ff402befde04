#!/bin/sh
# Driver strings that are not UTF-8 (a damaged or hostile driver): in a
# copy of the Trn1 fixture the device name, the instance type and the
# serial number hold bytes that are not UTF-8, and quotes. A real Prometheus
# scrapes the daemon every half second while the test runs its held clock a
# tick per scrape, for ten: the target must stay up through every one (it
# drops a whole scrape for one label value that is not UTF-8), and
# /metrics and the API must be valid UTF-8 with the bad bytes as U+FFFD.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/receivers.sh"

cp -R "$top_srcdir/tests/data/trn1" "$TEST_TMP/trn1"
chmod -R u+w "$TEST_TMP/trn1"
arch=$TEST_TMP/trn1/devices/virtual/neuron_device/neuron0/info/architecture
printf 'Train\344ium\377"1\n' >"$arch/device_name"
printf 'trn1.\300\25732xl"arge\n' >"$arch/instance_type"
# A UTF-16 surrogate, which UTF-8 may not encode.
printf 'SN\355\240\200-7\n' >"$TEST_TMP/trn1/devices/virtual/neuron_device/neuron0/info/serial_number"
start_daemon --backend "sysfs:$TEST_TMP/trn1" --interval 500ms --enable-admin
hold_ticks

# Every half second (every five under valgrind, where a scrape takes longer).
scrape=$((SLOW * 500))ms
cat >"$TEST_TMP/prom.yml" <<YML
global:
  scrape_interval: $scrape
  scrape_timeout: $scrape
scrape_configs:
  - job_name: neurond
    static_configs:
      - targets: ['127.0.0.1:$PORT']
YML
start_prometheus_receiver prom
# scraped STAMP: Prometheus's latest successful scrape saw the tick stamped STAMP.
scraped() {
  _seen=$(rx_value prom 'neurond_last_poll_timestamp_seconds{job="neurond"}')
  [ -n "$_seen" ] && awk -v a="$_seen" -v b="$1" 'BEGIN { exit !(a == b) }'
}
rounds=0
while [ "$rounds" -lt 10 ]; do
  run_ticks 1
  stamp=$(http /api/v1/admin/ticks | sed -n 's/.*"timestamp":\([0-9.]*\).*/\1/p')
  wait_until 20 scraped "$stamp" || fail "Prometheus did not scrape tick $TICK: $(curl -sS "$(receiver_url prom)/api/v1/targets")"
  rounds=$((rounds + 1))
done
# Every scrape since the first, successful ones or not.
up=$(rx_value prom "min_over_time(up{job=\"neurond\"}[5m])")
scrapes=$(rx_value prom "count_over_time(up{job=\"neurond\"}[5m])")
[ "$up" = 1 ] || fail "up was not 1 throughout: '$up'; $(curl -sS "$(receiver_url prom)/api/v1/targets")"
[ "${scrapes:-0}" -ge 10 ] || fail "only '$scrapes' scrapes"
[ "$(rx_value prom 'count(neurond_build_info{job="neurond",instance_type="trn1.\uFFFD\uFFFD32xl\"arge"})')" = 1 ] ||
  fail "build_info's instance_type in Prometheus: $(rx_query prom 'neurond_build_info')"

python3 - "$URL" <<'PY' || fail "answers: see above"
import json, sys, urllib.request
url = sys.argv[1]
metrics = urllib.request.urlopen(url + "/metrics").read().decode("utf-8")  # strict: fails on a bad byte
assert 'instance_type="trn1.\ufffd\ufffd32xl\\"arge"' in metrics, [l for l in metrics.splitlines() if "build_info{" in l]
device = json.loads(urllib.request.urlopen(url + "/api/v1/devices/0").read().decode("utf-8"))["data"]["device"]
assert device["name"] == "Train\ufffdium\ufffd\"1", device["name"]
assert device["serial_number"] == "SN\ufffd\ufffd\ufffd-7", device["serial_number"]
PY
stop_receiver prom
stop_daemon
echo "PASS: up stayed 1 through $scrapes scrapes of ten ticks with driver strings that are not UTF-8"
