#!/bin/sh
# Faults injected at run time through the admin endpoint, over curl on
# 127.0.0.1, show up in /metrics while everything else keeps serving.
. "$(dirname "$0")/lib.sh"
need curl

admin="/api/v1/admin/faults"

# Off by default: the endpoint does not exist.
start_daemon --backend model:trn1.32xlarge,scenario=training
code=$(curl -s --max-time 10 -o /dev/null -w '%{http_code}' -X POST "$URL$admin?fault=device_down:3")
[ "$code" = 404 ] || fail "admin endpoint answered $code while disabled"
stop_daemon

# speed=10: a simulated second every 100 ms of wall time.
start_daemon --backend model:trn1.32xlarge,scenario=training,speed=10 --enable-admin

post() {
  out=$(curl -s --max-time 10 -w ' %{http_code}' -X POST "$URL$admin?fault=$1")
  case $out in *' 200') ;; *) fail "POST fault=$1 answered: $out" ;; esac
}
# Waits are 20 s of wall time: the model runs sped up, so that is many
# simulated ticks.
device3_up='neuron_device_up{neuron_device="3"}'
# One answer says device 3 is down and has no core series. The fault lasts
# 30 simulated seconds, 3 s of wall time: a scrape under valgrind takes a
# good part of a second, and a shorter fault was missed.
device3_down_without_cores() {
  http /metrics >"$TEST_TMP/metrics" &&
    grep -q "^$device3_up 0\$" "$TEST_TMP/metrics" &&
    ! grep -q '^neuroncore_utilization_ratio{neuron_device="3",' "$TEST_TMP/metrics"
}
# Failed executions count against the runtime holding the core: training
# runs one runtime across every core.
failures_at_least() {
  v=$(metric_value 'execution_errors_total{runtime_tag="training-0",error_type="generic"}')
  [ -n "$v" ] && [ "$v" -ge "$1" ]
}
link_value() { metric_value 'neuron_link_transmit_bytes_total{neuron_device="4",peer_device="5"}'; }

# Bad requests are refused with a reason.
code=$(curl -s --max-time 10 -o "$TEST_TMP/body" -w '%{http_code}' -X POST "$URL$admin?fault=device_down:16")
[ "$code" = 400 ] && grep -q 'device 16 does not exist' "$TEST_TMP/body" || fail "out-of-range device: $code $(cat "$TEST_TMP/body")"
code=$(curl -s --max-time 10 -o /dev/null -w '%{http_code}' -X PUT "$URL$admin")
[ "$code" = 405 ] || fail "PUT answered $code"
# A web page's cross-site post carries Origin: refused, nothing injected.
code=$(curl -s --max-time 10 -o /dev/null -w '%{http_code}' -H 'Origin: http://example.test' -X POST \
  "$URL$admin?fault=device_down:2")
[ "$code" = 403 ] || fail "POST with Origin answered $code"
curl -s --max-time 10 "$URL$admin" | grep -q 'device_down:2' && fail "a refused POST injected a fault"

# A device disappears (a '+' in the query may come as a space) and returns.
post "device_down:3%2B30s"
wait_until 20 device3_down_without_cores || fail "timed out waiting until device 3 is down, without its core series"
curl -sf --max-time 10 "$URL/healthz" >/dev/null || fail "/healthz while a device is down"
wait_until 20 metric_is "$device3_up" 1 || fail "timed out waiting until device 3 is back"

post "device_down:3"
wait_until 20 metric_is "$device3_up" 0 || fail "timed out waiting until device 3 is down again"
curl -sf --max-time 10 "$URL$admin" | grep -q '"fault":"device_down:3","state":"active"' || fail "GET $admin lists the fault"
curl -sf --max-time 10 -X DELETE "$URL$admin" >/dev/null || fail "DELETE $admin"
wait_until 20 metric_is "$device3_up" 1 || fail "timed out waiting until device 3 is back after DELETE"

# A core stuck at 0 % keeps its memory.
post "core_stuck:5"
wait_until 20 metric_is 'neuroncore_utilization_ratio{neuron_device="2",neuroncore="5",runtime_tag="training-0"}' 0 ||
  fail "timed out waiting until core 5 is stuck"
mem=$(metric_value 'neuroncore_memory_used_bytes{neuron_device="2",neuroncore="5"}')
[ -n "$mem" ] && [ "$mem" -gt 0 ] || fail "stuck core 5 holds no memory ($mem)"

# ECC events, a link that drops to zero, an execution error burst.
post "ecc:1:sram_ecc_uncorrected"
wait_until 20 metric_is 'hardware_ecc_events_total{neuron_device_index="1",event_type="sram_ecc_uncorrected"}' 1 ||
  fail "timed out waiting until one ECC event"
post "link_down:4:5"
post "exec_errors:1:200+5s"
wait_until 20 failures_at_least 1000 || fail "timed out waiting until failed executions"
before=$(link_value)
sleep 1
after=$(link_value)
[ -n "$before" ] && [ "$before" = "$after" ] || fail "link 4->5 still moves bytes: $before -> $after"
moving=$(metric_value 'neuron_link_transmit_bytes_total{neuron_device="5",peer_device="6"}')
[ -n "$moving" ] && [ "$moving" -gt 0 ] || fail "other links stopped too"

stop_daemon
