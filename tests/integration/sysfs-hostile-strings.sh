#!/bin/sh
# Driver strings that are not UTF-8 (a damaged or hostile driver): in a
# copy of the Trn1 fixture the device name, the instance type and the
# serial number hold bytes that are not UTF-8, and quotes. A real Prometheus
# scrapes the daemon every second for 12 s: the target must stay up (it
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
start_daemon --backend "sysfs:$TEST_TMP/trn1" --interval 500ms

# Every second (every ten under valgrind, where a scrape takes longer).
cat >"$TEST_TMP/prom.yml" <<YML
global:
  scrape_interval: ${SLOW}s
  scrape_timeout: ${SLOW}s
scrape_configs:
  - job_name: neurond
    static_configs:
      - targets: ['127.0.0.1:$PORT']
YML
start_prometheus_receiver prom
sleep $((12 * SLOW))
up=$(rx_value prom "min_over_time(up{job=\"neurond\"}[$((10 * SLOW))s])")
[ "$up" = 1 ] || fail "up was not 1 throughout: '$up'; $(curl -sS "$(receiver_url prom)/api/v1/targets")"
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
echo "PASS: up stayed 1 with driver strings that are not UTF-8"
