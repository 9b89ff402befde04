#!/bin/sh
# A real Prometheus server scrapes neurond over HTTPS with basic auth, the
# way README.md tells users to set it up, every second for 32 s; then its
# own API must show up == 1 and every core's neuroncore_utilization_ratio.
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
start_daemon --backend model:trn1.32xlarge,seed=9 --config "$TEST_TMP/neurond.conf"

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

sleep 32
up=$(rx_value prom 'up{job="neurond"}')
[ "$up" = 1 ] || fail "up is '$up'; targets: $(curl -sS --max-time 10 "$(receiver_url prom)/api/v1/targets")"
cores=$(rx_value prom 'count(count by (neuron_device, neuroncore) (neuroncore_utilization_ratio{job="neurond"}))')
[ "$cores" = 32 ] || fail "Prometheus has $cores cores of neuroncore_utilization_ratio, expected 32"
scrapes=$(rx_value prom 'count_over_time(up{job="neurond"}[40s])')
[ "${scrapes:-0}" -ge 2 ] || fail "only '$scrapes' scrapes recorded"
# The counter family arrived through OpenMetrics with its _total samples.
dma=$(rx_value prom 'count(neuron_device_dma_bytes_total{job="neurond"})')
[ -n "$dma" ] && [ "$dma" -gt 0 ] || fail "no neuron_device_dma_bytes_total in Prometheus"
stop_receiver prom
stop_daemon
echo "PASS: up=1, $cores cores, $scrapes scrapes in 40 s"
