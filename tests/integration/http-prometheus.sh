#!/bin/sh
# A real Prometheus server scrapes neurond over HTTPS with basic auth, the
# way README.md tells users to set it up, every second until it has stored
# two scrapes; then its own API must show up == 1 and every core's
# neuroncore_utilization_ratio, each the value neurond serves: the test
# holds the daemon's clock, so that every scrape is of that one tick.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/receivers.sh"
need openssl
make_tls_cert
make_users_file "$TEST_TMP/users" prometheus scrape-pw
printf 'scrape-pw\n' >"$TEST_TMP/password"
cat >"$TEST_TMP/neurond.conf" <<CONF
[neurond]
tls_cert = $TLS_CERT
tls_key = $TLS_KEY
basic_auth_users = $TEST_TMP/users
CONF
start_daemon --backend model:trn1.32xlarge,seed=9 --config "$TEST_TMP/neurond.conf" --enable-admin
# https_get PATH [CURL-ARGS...]: as Prometheus asks, over TLS with the password.
https_get() {
  _path=$1
  shift
  curl -sS --max-time 10 --cacert "$TLS_CERT" -u prometheus:scrape-pw "$@" "https://127.0.0.1:$PORT$_path"
}
held=$(https_get '/api/v1/admin/ticks?hold=true' -X POST)
case $held in *'"held":true'*) ;; *) fail "hold: $held" ;; esac

cat >"$TEST_TMP/prom.yml" <<YML
global:
  scrape_interval: 1s
  scrape_timeout: 1s
scrape_configs:
  - job_name: neurond
    scheme: https
    tls_config:
      ca_file: $TLS_CERT
    basic_auth:
      username: prometheus
      password_file: $TEST_TMP/password
    static_configs:
      - targets: ['127.0.0.1:$PORT']
YML
start_prometheus_receiver prom

two_scrapes() {
  scrapes=$(rx_value prom 'count_over_time(up{job="neurond"}[40s])')
  [ "${scrapes:-0}" -ge 2 ]
}
wait_until 30 two_scrapes || fail "only '$scrapes' scrapes recorded; targets: $(curl -sS --max-time 10 "$(receiver_url prom)/api/v1/targets")"
up=$(rx_value prom 'min_over_time(up{job="neurond"}[40s])')
[ "$up" = 1 ] || fail "up is '$up'; targets: $(curl -sS --max-time 10 "$(receiver_url prom)/api/v1/targets")"
cores=$(rx_value prom 'count(count by (neuron_device, neuroncore) (neuroncore_utilization_ratio{job="neurond"}))')
[ "$cores" = 32 ] || fail "Prometheus has $cores cores of neuroncore_utilization_ratio, expected 32"
# Each core's utilization as Prometheus scraped it is neurond's, of the held tick.
rx_query prom 'neuroncore_utilization_ratio{job="neurond"}' >"$TEST_TMP/prom-util"
https_get '/api/v1/latest?metric=neuroncore_utilization_ratio' --fail >"$TEST_TMP/util.json" || fail "GET /api/v1/latest"
python3 - "$TEST_TMP/prom-util" "$TEST_TMP/util.json" <<'PY' || fail "Prometheus's utilization is not neurond's (above)"
import json, re, sys
prom = {}
for line in open(sys.argv[1]):
    labels, value = line.rsplit(" ", 1)
    prom[re.search(r"neuroncore=([0-9]+)", labels).group(1)] = float(value)
own = {r["metric"]["neuroncore"]: float(r["value"][1]) for r in json.load(open(sys.argv[2]))["data"]["result"]}
if prom != own:
    print("cores that differ:", sorted((k, prom.get(k), own.get(k)) for k in set(prom) | set(own) if prom.get(k) != own.get(k))[:5])
    sys.exit(1)
PY
# The counter family arrived through OpenMetrics with its _total samples.
dma=$(rx_value prom 'count(neuron_device_dma_bytes_total{job="neurond"})')
[ -n "$dma" ] && [ "$dma" -gt 0 ] || fail "no neuron_device_dma_bytes_total in Prometheus"
stop_receiver prom
stop_daemon
echo "PASS: up=1, $cores cores as neurond serves them, $scrapes scrapes"
