#!/bin/sh
# Device health through the real interfaces: every fault kind of the model,
# injected one after another through the admin endpoint, shows as the right
# state with the right reason on the right device within one tick of the
# first sample that shows the fault, ends when the fault ends, and is an
# event in /api/v1/events; then the model's scenarios run for simulated
# hours without a fault and raise no degraded or unhealthy state. Ticks are
# driven (run_ticks), 10 simulated seconds apart, so a fault's second has
# passed by the next tick.
. "$(dirname "$0")/lib.sh"
need curl python3

admin=/api/v1/admin/faults
start_daemon --backend model:trn1.32xlarge,scenario=training --interval 10s --enable-admin
hold_ticks

post() {
  _out=$(curl -s --max-time 10 -w ' %{http_code}' -X POST "$URL$admin?fault=$1")
  case $_out in *' 200') ;; *) fail "POST fault=$1 answered: $_out" ;; esac
}

# health DEVICE: "<state> <kind>,<kind>..." of the device's health, the
# kinds of its findings that tripped (not those it could not evaluate).
health() {
  http "/api/v1/devices/$1" --fail | python3 -c '
import json, sys
h = json.load(sys.stdin)["data"]["device"]["health"]
print(h["state"], ",".join(r["kind"] for r in h["reasons"] if r["state"] != "unknown") or "-")'
}

# host_health: "<worst state> <healthy count> <not healthy devices>".
host_health() {
  http /api/v1/health --fail | python3 -c '
import json, sys
d = json.load(sys.stdin)["data"]
print(d["state"], d["counts"]["healthy"], ",".join(str(x["device"]) for x in d["not_healthy"]) or "-")'
}

# events DEVICE KIND: the phases of the stored events of that device and kind, in order.
events() {
  http "/api/v1/events?device=$1&kind=$2&start=-1d" --fail | python3 -c '
import json, sys
print(" ".join(e["phase"] for e in json.load(sys.stdin)["data"]["events"]) or "-")'
}

expect_host() {
  got=$(host_health)
  [ "$got" = "$1" ] || fail "tick $TICK: /api/v1/health says '$got', expected '$1'"
}

# The first tick (the daemon's own, at start) has no earlier one to take
# rates from: unknown. The second is healthy, every device.
expect_host "unknown 0 0,1,2,3,4,5,6,7,8,9,10,11,12,13,14,15"
run_ticks 1
expect_host "healthy 16 -"

# shows FAULT DEVICE STATE KIND EVIDENCE...: injects FAULT, then ticks one
# at a time until EVIDENCE (a command) sees it in the samples (at most 3
# ticks); DEVICE must then be STATE by KIND at that tick or the next.
shows() {
  _fault=$1 _dev=$2 _state=$3 _kind=$4
  shift 4
  post "$_fault"
  _n=0
  while :; do
    run_ticks 1
    ! "$@" || break
    _n=$((_n + 1))
    [ $_n -lt 3 ] || fail "$_fault: no sample showed it after 3 ticks"
  done
  _seen=$TICK
  _got=$(health "$_dev")
  if [ "$_got" != "$_state $_kind" ]; then
    run_ticks 1
    _got=$(health "$_dev")
  fi
  [ "$_got" = "$_state $_kind" ] ||
    fail "$_fault: device $_dev is '$_got' at tick $TICK, the fault's first sample was tick $_seen"
  echo "$_fault: first sample at tick $_seen, device $_dev $_got at tick $TICK"
}

# back DEVICE KIND: the fault is over: within two ticks the device is
# healthy again (one to see it gone, one more where its rates had no
# earlier sample), and its events are a begin and an end.
back() {
  run_ticks 1
  [ "$(health "$1")" = "healthy -" ] || run_ticks 1
  [ "$(health "$1")" = "healthy -" ] || fail "device $1 is '$(health "$1")' at tick $TICK after its $2 fault ended"
  [ "$(events "$1" "$2")" = "begin end" ] || fail "device $1's $2 events: $(events "$1" "$2")"
  http "/api/v1/events?device=$1&kind=state&start=-1d" --fail | grep -q '"state":"healthy"' ||
    fail "device $1 has no event of its return to healthy"
}

# A device disappears.
device3_gone() { metric_is 'neuron_device_up{neuron_device="3"}' 0; }
shows device_down:3 3 unhealthy device_down device3_gone
expect_host "unhealthy 15 3"
http /api/v1/health --fail | grep -q '"action":"reset: ' || fail "no reset action for a device that is gone"
curl -sf --max-time 10 -X DELETE "$URL$admin" >/dev/null || fail "DELETE $admin"
back 3 device_down

# A core hangs with its memory held: core 5 is device 2's.
core5_idle() {
  metric_is 'neuroncore_utilization_ratio{neuron_device="2",neuroncore="5",runtime_tag="training-0"}' 0
}
shows core_stuck:5 2 degraded core_stuck core5_idle
http /api/v1/devices/2 --fail | grep -q '{"neuroncore":5,"state":"degraded"' || fail "core 5 is not degraded"
curl -sf --max-time 10 -X DELETE "$URL$admin" >/dev/null
back 2 core_stuck

# A NeuronLink stops both ways: both ends are degraded.
link_value() { metric_value 'neuron_link_transmit_bytes_total{neuron_device="4",peer_device="5"}'; }
link_still() {
  _now=$(link_value)
  _was=${_last_link:-}
  _last_link=$_now
  [ -n "$_was" ] && [ "$_now" = "$_was" ]
}
_last_link=$(link_value)
shows link_down:4:5 4 degraded link_down link_still
[ "$(health 5)" = "degraded link_down" ] || fail "the other end of the link is '$(health 5)'"
curl -sf --max-time 10 -X DELETE "$URL$admin" >/dev/null
back 4 link_down

# A burst of failed executions, 200 a second for 30 s, on a core the
# training runtime holds: its devices are degraded (the runtime's counters
# cannot say which of its devices failed: all of them).
errors() { metric_value 'execution_errors_total{runtime_tag="training-0",error_type="generic"}'; }
errors_rise() {
  _now=$(errors)
  [ "${_now:-0}" -gt "${_base_errors:-0}" ]
}
_base_errors=$(errors)
shows exec_errors:1:200+30s 0 degraded exec_errors errors_rise
http /api/v1/devices/0 --fail | grep -q '"reason":"execution errors at a high rate (runtime training-0)"' ||
  fail "the reason does not name the runtime"
run_ticks 3
back 0 exec_errors

# A storm of corrected ECC errors, 5 a second for 20 s.
corrected() { metric_value 'hardware_ecc_events_total{neuron_device_index="6",event_type="mem_ecc_corrected"}'; }
corrected_rise() { [ "$(corrected)" -gt 0 ]; }
shows ecc:6:mem_ecc_corrected:5+20s 6 degraded ecc_corrected corrected_rise
run_ticks 2
back 6 ecc_corrected

# Device memory fills up.
hbm_full() {
  http /metrics | awk '
    index($0, "neuron_device_memory_used_bytes{neuron_device=\"7\"} ") == 1 { u = $2 }
    index($0, "neuron_device_memory_total_bytes{neuron_device=\"7\"} ") == 1 { t = $2 }
    END { exit !(t > 0 && u / t > 0.95) }'
}
shows hbm_full:7 7 degraded hbm_full hbm_full
curl -sf --max-time 10 -X DELETE "$URL$admin" >/dev/null
back 7 hbm_full

# An uncorrected ECC error: unhealthy, and held for an hour after it.
uncorrected() { metric_is 'hardware_ecc_events_total{neuron_device_index="1",event_type="sram_ecc_uncorrected"}' 1; }
shows ecc:1:sram_ecc_uncorrected 1 unhealthy ecc_uncorrected uncorrected
http /api/v1/devices/1 --fail | grep -q '"action":"replace: ' || fail "no replace action for an uncorrected ECC error"
run_ticks 350
[ "$(health 1)" = "unhealthy ecc_uncorrected" ] || fail "the ECC error was forgotten within the hour: $(health 1)"
run_ticks 10
back 1 ecc_uncorrected
expect_host "healthy 16 -"

# What /metrics counts: the events above, by kind and severity.
count() { metric_value "neurond_health_events_total{kind=\"$1\",severity=\"$2\"}"; }
[ "$(count device_down critical)" = 1 ] || fail "device_down critical events: $(count device_down critical)"
[ "$(count link_down warning)" = 2 ] || fail "link_down warning events: $(count link_down warning)"
[ "$(count ecc_uncorrected critical)" = 1 ] || fail "ecc_uncorrected events: $(count ecc_uncorrected critical)"
[ "$(count hbm_full info)" = 1 ] || fail "hbm_full end events: $(count hbm_full info)"
metric_is 'neuron_device_health{neuron_device="1",state="healthy"}' 1 || fail "neuron_device_health of device 1"
stop_daemon

# Normal load, for simulated hours: a tick a minute (and a quarter of an
# hour second by second), every scenario (the
# inference servers' hourly redeploys, the training all-reduce, MoE's
# uneven experts, the mixed jobs' idle devices) and a NeuronSwitch
# instance; not one degraded or unhealthy state.
soak() {
  _name=$1 _spec=$2 _ticks=$3 _interval=${4:-60s}
  start_daemon "$_name" --backend "$_spec" --interval "$_interval" --enable-admin
  hold_ticks
  _i=0
  while [ $_i -lt "$_ticks" ]; do
    run_ticks 60
    _i=$((_i + 60))
  done
  _bad=$(http "/api/v1/events?start=-1d&severity=warning" --fail | grep -o '"reason":"[^"]*"' | head -n 3)
  [ -z "$_bad" ] || fail "$_spec: warnings over $_ticks ticks of $_interval: $_bad"
  _bad=$(http "/api/v1/events?start=-1d&severity=critical" --fail | grep -o '"reason":"[^"]*"' | head -n 3)
  [ -z "$_bad" ] || fail "$_spec: critical events over $_ticks ticks of $_interval: $_bad"
  got=$(host_health)
  case $got in "healthy "*) ;; *) fail "$_spec: the host is '$got' after $_ticks ticks of $_interval" ;; esac
  echo "$_spec: $_ticks ticks of $_interval, $got"
  stop_daemon "$_name"
}
for scenario in steady training inference moe mixed idle; do
  soak "soak_$scenario" "model:trn1.32xlarge,scenario=$scenario,seed=7" 240
done
soak soak_trn2 model:trn2.48xlarge,scenario=mixed,seed=3 180
soak soak_switch model:trn3-gen1-ultraserver,scenario=inference,seed=5 120
# Second by second, the bursts and phases a minute's rate smooths.
soak soak_fine_inference model:trn1.32xlarge,scenario=inference,seed=7 900 1s
soak soak_fine_moe model:trn2.48xlarge,scenario=moe,seed=3 600 1s
