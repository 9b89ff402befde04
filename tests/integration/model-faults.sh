#!/bin/sh
# Faults injected at run time through the admin endpoint, over curl on
# 127.0.0.1, show up in /metrics while everything else keeps serving.
. "$(dirname "$0")/lib.sh"
need curl

# metric_value SERIES: the value of one exact series on /metrics, or "".
metric_value() {
  http /metrics | awk -v s="$1" 'index($0, s " ") == 1 { print $2 }'
}

# wait_until WHAT COMMAND...: retries COMMAND for up to 20 s of wall time
# (the model runs sped up, so that is many simulated ticks).
wait_until() {
  what=$1
  shift
  i=0
  while [ $i -lt 200 ]; do
    "$@" && return 0
    sleep 0.1
    i=$((i + 1))
  done
  fail "timed out waiting until $what"
}

admin="/api/v1/admin/faults"

# Off by default: the endpoint does not exist.
start_daemon --backend model:trn1.32xlarge,scenario=training
code=$(curl -s --max-time 10 -o /dev/null -w '%{http_code}' -X POST "http://127.0.0.1:$PORT$admin?fault=device_down:3")
[ "$code" = 404 ] || fail "admin endpoint answered $code while disabled"
stop_daemon

# speed=10: a simulated second every 100 ms of wall time.
start_daemon --backend model:trn1.32xlarge,scenario=training,speed=10 --enable-admin

post() {
  out=$(curl -s --max-time 10 -w ' %{http_code}' -X POST "http://127.0.0.1:$PORT$admin?fault=$1")
  case $out in *' 200') ;; *) fail "POST fault=$1 answered: $out" ;; esac
}
device_up_is() { [ "$(metric_value "neuron_device_up{neuron_device=\"3\"}")" = "$1" ]; }
core_series_absent() { ! curl -sf --max-time 10 "http://127.0.0.1:$PORT/metrics" | grep -q '^neuroncore_utilization_ratio{neuron_device="3",'; }
util_is_zero() { [ "$(metric_value 'neuroncore_utilization_ratio{neuron_device="2",neuroncore="5"}')" = 0 ]; }
ecc_is() { [ "$(metric_value 'hardware_ecc_events_total{neuron_device="1",event_type="sram_ecc_uncorrected"}')" = "$1" ]; }
failures_at_least() {
  v=$(metric_value 'execution_errors_total{neuron_device="0",neuroncore="1",error_type="generic"}')
  [ -n "$v" ] && [ "$v" -ge "$1" ]
}
link_value() { metric_value 'neuron_link_transmit_bytes_total{neuron_device="4",peer_device="5"}'; }

# Bad requests are refused with a reason.
code=$(curl -s --max-time 10 -o "$TEST_TMP/body" -w '%{http_code}' -X POST "http://127.0.0.1:$PORT$admin?fault=device_down:16")
[ "$code" = 400 ] && grep -q 'device 16 does not exist' "$TEST_TMP/body" || fail "out-of-range device: $code $(cat "$TEST_TMP/body")"
code=$(curl -s --max-time 10 -o /dev/null -w '%{http_code}' -X PUT "http://127.0.0.1:$PORT$admin")
[ "$code" = 405 ] || fail "PUT answered $code"
# A web page's cross-site post carries Origin: refused, nothing injected.
code=$(curl -s --max-time 10 -o /dev/null -w '%{http_code}' -H 'Origin: http://example.test' -X POST \
  "http://127.0.0.1:$PORT$admin?fault=device_down:2")
[ "$code" = 403 ] || fail "POST with Origin answered $code"
curl -s --max-time 10 "http://127.0.0.1:$PORT$admin" | grep -q 'device_down:2' && fail "a refused POST injected a fault"

# A device disappears (a '+' in the query may come as a space) and returns.
post "device_down:3%2B3s"
wait_until "device 3 is down" device_up_is 0
core_series_absent || fail "device 3's core series still served while it is down"
curl -sf --max-time 10 "http://127.0.0.1:$PORT/healthz" >/dev/null || fail "/healthz while a device is down"
wait_until "device 3 is back" device_up_is 1

post "device_down:3"
wait_until "device 3 is down again" device_up_is 0
curl -sf --max-time 10 "http://127.0.0.1:$PORT$admin" | grep -q '"fault":"device_down:3","state":"active"' || fail "GET $admin lists the fault"
curl -sf --max-time 10 -X DELETE "http://127.0.0.1:$PORT$admin" >/dev/null || fail "DELETE $admin"
wait_until "device 3 is back after DELETE" device_up_is 1

# A core stuck at 0 % keeps its memory.
post "core_stuck:5"
wait_until "core 5 is stuck" util_is_zero
mem=$(metric_value 'neuroncore_memory_used_bytes{neuron_device="2",neuroncore="5"}')
[ -n "$mem" ] && [ "$mem" -gt 0 ] || fail "stuck core 5 holds no memory ($mem)"

# ECC events, a link that drops to zero, an execution error burst.
post "ecc:1:sram_ecc_uncorrected"
wait_until "one ECC event" ecc_is 1
post "link_down:4:5"
post "exec_errors:1:200+5s"
wait_until "failed executions" failures_at_least 1000
before=$(link_value)
sleep 1
after=$(link_value)
[ -n "$before" ] && [ "$before" = "$after" ] || fail "link 4->5 still moves bytes: $before -> $after"
moving=$(metric_value 'neuron_link_transmit_bytes_total{neuron_device="5",peer_device="6"}')
[ -n "$moving" ] && [ "$moving" -gt 0 ] || fail "other links stopped too"

stop_daemon
