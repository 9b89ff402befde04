#!/bin/sh
# End to end: the daemon on the model, scraped and queried with real
# clients, stopped with SIGTERM, its database intact. Its clock is held and
# moved tick by tick (/api/v1/admin/ticks): what the test reads follows
# from the ticks it ran, however slowly the daemon runs.
. "$(dirname "$0")/lib.sh"
need curl
need promtool
need sqlite3

start_daemon --backend model:trn1.32xlarge,seed=5 --interval 200ms --enable-admin
hold_ticks

# /metrics: the right content type, clean for promtool, every core present.
ctype=$(curl -sS --max-time 10 -o "$TEST_TMP/metrics" -w '%{content_type}' "$URL/metrics")
[ "$ctype" = "text/plain; version=0.0.4; charset=utf-8" ] || fail "/metrics content type '$ctype'"
promtool check metrics <"$TEST_TMP/metrics" >"$TEST_TMP/promtool.out" 2>&1 || fail "promtool: $(cat "$TEST_TMP/promtool.out")"
[ ! -s "$TEST_TMP/promtool.out" ] || fail "promtool reported: $(cat "$TEST_TMP/promtool.out")"
cores=$(grep -c '^neuroncore_utilization_ratio{' "$TEST_TMP/metrics")
[ "$cores" -eq 32 ] || fail "expected 32 cores in /metrics, got $cores"
for family in neuron_device_memory_used_bytes neuron_device_memory_total_bytes neuron_device_dma_bytes_total \
  neuron_link_transmit_bytes_total neuron_link_receive_bytes_total neurond_build_info; do
  grep -q "^# TYPE $family " "$TEST_TMP/metrics" || fail "/metrics lacks $family"
done
grep -q '^neuron_device_memory_total_bytes{neuron_device="0"} 34359738368$' "$TEST_TMP/metrics" ||
  fail "device 0 capacity is not 32 GiB"

# The page changes from tick to tick: the scrape above read the tick held,
# the next one the tick after it.
first=$(grep '^neuron_device_dma_bytes_total{neuron_device="0",direction="device_to_device"}' "$TEST_TMP/metrics")
run_ticks 1
second=$(http /metrics | grep '^neuron_device_dma_bytes_total{neuron_device="0",direction="device_to_device"}')
[ "$first" != "$second" ] || fail "DMA counter did not move between scrapes: $first"

# query_range returns stored values for the filtered series: two seconds of
# ticks after the one held, a point for each second they fall in.
held=$TICK_TIME
run_ticks 10
body=$(http "/api/v1/query_range?metric=neuroncore_utilization_ratio&neuroncore=3&start=$held&end=$TICK_TIME&step=1s")
echo "$body" | grep -q '"status":"success"' || fail "query_range: $body"
echo "$body" | grep -q '"neuroncore":"3"' || fail "query_range lacks core 3: $body"
points=$(echo "$body" | grep -o '\[[0-9.]*,"[0-9.e+-]*"\]' | wc -l)
want=$((${TICK_TIME%.*} - ${held%.*} + 1))
[ "$points" -eq "$want" ] || fail "query_range returned $points points, not $want: $body"
echo "$body" | grep -q '"neuroncore":"4"' && fail "query_range ignored the label filter"

# Bad parameters: 400 with Prometheus-style error JSON naming the parameter.
code=$(http_status "/api/v1/query_range?metric=neuroncore_utilization_ratio&step=banana")
[ "$code" = 400 ] || fail "bad step gave $code"
body=$(http "/api/v1/query_range?metric=neuroncore_utilization_ratio&step=banana")
echo "$body" | grep -q '"status":"error","errorType":"bad_data","error":"parameter '"'"'step'"'" ||
  fail "bad step body: $body"
[ "$(http_status '/api/v1/query_range?metric=no_such_metric')" = 400 ] || fail "unknown metric not 400"

# Inventory, health, latest, status, dashboard, errors.
http /api/v1/devices | grep -q '"instance_type":"trn1.32xlarge"' || fail "/api/v1/devices"
http /api/v1/devices | grep -q '"peers":\[1,3,4,12\]' || fail "/api/v1/devices: device 0 torus peers"
[ "$(http_status /healthz)" = 200 ] || fail "/healthz not 200"
http /healthz | grep -q '"status":"ok"' || fail "/healthz body"
http "/api/v1/latest?metric=neuron_device_memory_used_bytes&neuron_device=2" | grep -q '"neuron_device":"2"' ||
  fail "/api/v1/latest filter"
http /api/v1/status | grep -q '"backend":"model:trn1.32xlarge"' || fail "/api/v1/status"
http / | grep -q '<title>neurond</title>' || fail "dashboard index"
[ "$(http_status /app.js)" = 200 ] || fail "dashboard script"
[ "$(http_status /nope)" = 404 ] || fail "unknown path not 404"
[ "$(http_status /api/v1/nope)" = 404 ] || fail "unknown API path not 404"
[ "$(http_status /../../etc/passwd --path-as-is)" = 404 ] || fail "path traversal not refused"
[ "$(http_status /%2e%2e/%2e%2e/etc/passwd --path-as-is)" = 404 ] || fail "encoded traversal not refused"
[ "$(http_status /metrics -X POST)" = 405 ] || fail "POST not 405"
[ "$(http_status /metrics -X DELETE)" = 405 ] || fail "DELETE not 405"

stop_daemon
grep -q "received SIGTERM" "$DAEMON_LOG" || fail "SIGTERM not logged"
[ "$(sqlite3 "$TEST_TMP/neurond.db" 'PRAGMA integrity_check')" = ok ] || fail "integrity_check"
# A clean stop moves every tick into chunks (docs/storage.md): a series
# present at every tick has a sample of each, the start-up tick first.
stored=$(sqlite3 "$TEST_TMP/neurond.db" "SELECT max(n) FROM (SELECT sum(count) AS n FROM chunks GROUP BY series_id)")
[ "$stored" = "$TICK" ] || fail "$stored ticks stored of the $TICK the daemon ran"
echo "smoke: ok ($stored ticks stored)"
