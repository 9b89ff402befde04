#!/bin/sh
# The REST API: every endpoint's shape, and every parameter validated with
# a 400 and a Prometheus-style error that names the parameter.
. "$(dirname "$0")/lib.sh"
need curl

start_daemon --backend model:trn1.32xlarge,seed=4 --interval 200ms --enable-admin
run_ticks 5

# expect PATH STATUS PATTERN: GET PATH answers STATUS with a body matching PATTERN.
expect() {
  code=$(curl -sS --max-time 10 -o "$TEST_TMP/body" -w '%{http_code}' "$URL$1")
  [ "$code" = "$2" ] || fail "$1: status $code, expected $2: $(cat "$TEST_TMP/body")"
  grep -q -- "$3" "$TEST_TMP/body" || fail "$1: body does not match '$3': $(cat "$TEST_TMP/body")"
}

expect /api/v1/devices 200 '"devices":\[{"index":0,'
expect /api/v1/devices/5 200 '"device":{"index":5,.*"neuron_device":"5"'
expect /api/v1/devices/16 404 '"errorType":"not_found"'
expect /api/v1/devices/abc 400 "device id 'abc'"
expect /api/v1/devices/05 400 "device id '05'"
expect '/api/v1/devices/1?x=1' 400 "parameter 'x'"
expect /api/v1/latest 200 '"resultType":"vector"'
expect '/api/v1/latest?metric=neuroncore_utilization_ratio&neuroncore=7' 200 '"neuroncore":"7"'
n=$(grep -o '"__name__"' "$TEST_TMP/body" | wc -l)
[ "$n" -eq 1 ] || fail "latest with metric and neuroncore filters returned $n series"
# Every answer says which tick it was read from; held, that is the last one run.
grep -q "^{\"status\":\"success\",\"tick\":$TICK," "$TEST_TMP/body" || fail "latest is not of tick $TICK: $(cat "$TEST_TMP/body")"
# Several families from one tick; a label filter keeps the series that have
# the label, and must be a label of one of the families.
expect "/api/v1/latest?metric=neuron_device_memory_used_bytes&metric=neuron_device_memory_total_bytes&neuron_device=2" \
  200 '"__name__":"neuron_device_memory_total_bytes","neuron_device":"2"'
[ "$(grep -o '"__name__"' "$TEST_TMP/body" | wc -l)" -eq 2 ] || fail "two families of device 2: $(cat "$TEST_TMP/body")"
expect "/api/v1/latest?metric=neuron_device_memory_used_bytes&metric=neuroncore_utilization_ratio&neuroncore=3" \
  200 '"__name__":"neuroncore_utilization_ratio",.*"neuroncore":"3"'
[ "$(grep -o '"__name__"' "$TEST_TMP/body" | wc -l)" -eq 1 ] || fail "only core 3's series has neuroncore: $(cat "$TEST_TMP/body")"
expect "/api/v1/latest?metric=neuron_device_up&metric=neuron_device_up" 400 "parameter 'metric' given more than once"
expect "/api/v1/latest?metric=neuron_device_up&metric=neuron_device_memory_used_bytes&neuroncore=1" 400 \
  "parameter 'neuroncore': not a label of any metric asked for"
expect /api/v1/status 200 '"version":"[0-9.]*".*"backend":"model:trn1.32xlarge".*"uptime_seconds":'
grep -q '"store":{"used_bytes":[1-9][0-9]*,"size_cap_bytes":1073741824,"degraded":false,"retention_seconds":{"raw":172800,"1m":2592000,"1h":31536000}}' \
  "$TEST_TMP/body" || fail "/api/v1/status lacks the store: $(cat "$TEST_TMP/body")"

expect /healthz 200 '"status":"ok"'
expect '/healthz?verbose=1' 400 "parameter 'verbose'"

now=$(date +%s)
iso=$(date -u -d "@$((now - 60))" +%Y-%m-%dT%H:%M:%SZ)
expect "/api/v1/query_range?metric=neuroncore_utilization_ratio&neuroncore=1&start=$iso&end=$now&step=5s" 200 '"resultType":"matrix"'
expect "/api/v1/query_range?metric=neuroncore_utilization_ratio&start=$((now - 3600))&end=$now&step=1m" 200 '"status":"success"'
expect "/api/v1/query_range?metric=neuroncore_utilization_ratio&start=$((now - 3600)).5&end=$now&step=1h" 200 '"status":"success"'

# Validation: each kind of bad input, named.
q="/api/v1/query_range?metric=neuroncore_utilization_ratio"
expect "/api/v1/query_range" 400 "parameter 'metric' is required"
expect "/api/v1/query_range?metric=nope_total" 400 "parameter 'metric': unknown metric"
expect "$q&start=yesterday" 400 "parameter 'start'"
expect "$q&end=2026-13-01T00:00:00Z" 400 "parameter 'end'"
expect "$q&start=99999999999999" 400 "parameter 'start'"
expect "$q&start=$now&end=$((now - 10))" 400 "parameter 'start': start is after end"
expect "$q&step=-5s" 400 "parameter 'step'"
expect "$q&step=fast" 400 "parameter 'step'"
expect "$q&start=$((now - 86400))&end=$now&step=1s" 400 "parameter 'step': exceeded maximum resolution"
expect "$q&bogus=1" 400 "parameter 'bogus': not a parameter nor a label"
expect "$q&neuroncore=1&neuroncore=2" 400 "parameter 'neuroncore' given more than once"
expect "$q&agg=median" 400 "parameter 'agg'"
long=$(head -c 300 /dev/zero | tr '\0' 7)
expect "$q&neuroncore=$long" 400 "parameter 'neuroncore': value longer than 256 bytes"
expect "/api/v1/latest?metric=nope" 400 "parameter 'metric': unknown metric"
expect "/api/v1/latest?nolabel=1" 400 "parameter 'nolabel'"
expect "/api/v1/latest?metric=neuron_device_memory_used_bytes&neuroncore=1" 400 "parameter 'neuroncore': not a label of"
expect "/api/v1/status?verbose=1" 400 "parameter 'verbose'"
expect "/api/v1/devices?x=1" 400 "parameter 'x'"
# Every error is the Prometheus shape.
grep -q '^{"status":"error","errorType":"bad_data","error":"' "$TEST_TMP/body" || fail "error shape: $(cat "$TEST_TMP/body")"

# CORS is off by default...
curl -sS --max-time 10 -D "$TEST_TMP/h" -o /dev/null "$URL/api/v1/status"
! grep -qi '^access-control-allow-origin' "$TEST_TMP/h" || fail "CORS header sent by default"
[ "$(http_status /api/v1/status -X OPTIONS)" = 405 ] || fail "OPTIONS without CORS is not 405"
stop_daemon

# ...and on when configured, preflight included.
printf '[neurond]\ncors_origin = https://grafana.example\n' >"$TEST_TMP/cors.conf"
start_daemon --backend model:trn1.2xlarge --config "$TEST_TMP/cors.conf"
curl -sS --max-time 10 -D "$TEST_TMP/h" -o /dev/null "$URL/api/v1/status"
grep -qi '^access-control-allow-origin: https://grafana.example' "$TEST_TMP/h" || fail "no CORS header: $(cat "$TEST_TMP/h")"
[ "$(http_status /api/v1/status -X OPTIONS -H 'Origin: https://grafana.example')" = 204 ] || fail "preflight"
stop_daemon
echo PASS
