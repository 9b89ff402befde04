#!/bin/sh
# Faults injected at run time through the admin endpoint, over curl on
# 127.0.0.1, show up in /metrics while everything else keeps serving. The
# test holds the daemon's clock and moves it tick by tick: a fault lasts a
# number of ticks, whatever instrument slows the daemon.
. "$(dirname "$0")/lib.sh"
need curl

admin="/api/v1/admin/faults"

# Off by default: the endpoint does not exist.
start_daemon --backend model:trn1.32xlarge,scenario=training
code=$(curl -s --max-time 10 -o /dev/null -w '%{http_code}' -X POST "$URL$admin?fault=device_down:3")
[ "$code" = 404 ] || fail "admin endpoint answered $code while disabled"
stop_daemon

start_daemon --backend model:trn1.32xlarge,scenario=training --enable-admin
hold_ticks

post() {
  out=$(curl -s --max-time 10 -w ' %{http_code}' -X POST "$URL$admin?fault=$1")
  case $out in *' 200') ;; *) fail "POST fault=$1 answered: $out" ;; esac
}
device3_up='neuron_device_up{neuron_device="3"}'
# One answer says device 3 is down and has no core series.
device3_down_without_cores() {
  http /metrics >"$TEST_TMP/metrics" &&
    grep -q "^$device3_up 0\$" "$TEST_TMP/metrics" &&
    ! grep -q '^neuroncore_utilization_ratio{neuron_device="3",' "$TEST_TMP/metrics"
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

# A device disappears for 30 s (a '+' in the query may come as a space)
# and returns. A fault begins on the next whole simulated second from the
# tick that takes it; driven ticks are stamped on whole seconds (the
# interval's grid), so the first tick after it is injected begins it, the
# 30th is its last, and the 31st sees the device back.
post "device_down:3%2B30s"
run_ticks 1
device3_down_without_cores || fail "device 3 is not down without its core series at the first tick of its fault"
curl -sf --max-time 10 "$URL/healthz" >/dev/null || fail "/healthz while a device is down"
run_ticks 29
metric_is "$device3_up" 0 || fail "device 3 came back before its 30 s were over"
run_ticks 1
metric_is "$device3_up" 1 || fail "device 3 is not back after its 30 s"

post "device_down:3"
run_ticks 2
metric_is "$device3_up" 0 || fail "device 3 is not down again"
curl -sf --max-time 10 "$URL$admin" | grep -q '"fault":"device_down:3","state":"active"' || fail "GET $admin lists the fault"
curl -sf --max-time 10 -X DELETE "$URL$admin" >/dev/null || fail "DELETE $admin"
run_ticks 1
metric_is "$device3_up" 1 || fail "device 3 is not back at the tick after DELETE"

# A core stuck at 0 % keeps its memory.
post "core_stuck:5"
run_ticks 2
metric_is 'neuroncore_utilization_ratio{neuron_device="2",neuroncore="5",runtime_tag="training-0"}' 0 ||
  fail "core 5 is not stuck"
mem=$(metric_value 'neuroncore_memory_used_bytes{neuron_device="2",neuroncore="5"}')
[ -n "$mem" ] && [ "$mem" -gt 0 ] || fail "stuck core 5 holds no memory ($mem)"

# ECC events, a link that drops to zero, an execution error burst: 200
# failed executions a second for 5 s count against the runtime holding the
# cores (training runs one runtime across every core). Counters count a
# fault's second once it has passed: the third tick after the injection
# has, wherever the ticks fall in their second.
post "ecc:1:sram_ecc_uncorrected"
run_ticks 3
metric_is 'hardware_ecc_events_total{neuron_device_index="1",event_type="sram_ecc_uncorrected"}' 1 ||
  fail "not one ECC event"
post "link_down:4:5"
post "exec_errors:1:200+5s"
failures() { metric_value 'execution_errors_total{runtime_tag="training-0",error_type="generic"}'; }
before_errors=$(failures)
run_ticks 7
after_errors=$(failures)
[ -n "$after_errors" ] && [ $((after_errors - ${before_errors:-0})) -eq 1000 ] ||
  fail "failed executions went from $before_errors to $after_errors over the burst, not 1000 more"
before=$(link_value)
run_ticks 1
after=$(link_value)
[ -n "$before" ] && [ "$before" = "$after" ] || fail "link 4->5 still moves bytes: $before -> $after"
moving=$(metric_value 'neuron_link_transmit_bytes_total{neuron_device="5",peer_device="6"}')
[ -n "$moving" ] && [ "$moving" -gt 0 ] || fail "other links stopped too"

stop_daemon
