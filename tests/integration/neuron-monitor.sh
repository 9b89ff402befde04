#!/bin/sh
# The sysfs backend merged with neuron-monitor: the daemon runs a fake
# neuron-monitor printing documents written from the user guide's schema
# (tests/data/neuron-monitor/run.jsonl) over the trn1 sysfs fixture. A
# runtime's series appear with the document that lists it and go with the
# one that does not; ratios are percent/100 and per-period counts add up;
# a malformed line and a killed monitor leave the daemon serving, and the
# monitor is started again.
. "$(dirname "$0")/lib.sh"
need curl

lines=$top_srcdir/tests/data/neuron-monitor/run.jsonl
fake=$top_srcdir/tests/fakes/fake-neuron-monitor.sh
step=$TEST_TMP/step
pidfile=$TEST_TMP/monitor.pid
# The step moves by rename: the monitor never reads a half-written file.
set_step() { echo "$1" >"$step.new" && mv "$step.new" "$step"; }
set_step 1
# The spec is at most 255 bytes: the command and the sysfs root go in by
# short names under TEST_TMP, whatever the length of the source path.
printf '#!/bin/sh\nexec sh "%s" "%s" "%s" "%s"\n' "$fake" "$lines" "$step" "$pidfile" >"$TEST_TMP/monitor"
ln -s "$top_srcdir/tests/data/trn1" "$TEST_TMP/sysfs"
start_daemon --backend "sysfs:$TEST_TMP/sysfs,monitor=sh $TEST_TMP/monitor" \
  --interval 250ms --log-level debug

present() { [ -n "$(metric_value "$1")" ]; }
absent() { [ -z "$(metric_value "$1")" ]; }
at_least() { _v=$(metric_value "$1"); [ -n "$_v" ] && awk -v v="$_v" -v min="$2" 'BEGIN { exit !(v >= min) }'; }

info='neuron_runtime_info{runtime_tag="train",pid="4242"}'
completed='execution_status_total{runtime_tag="train",status_type="completed"}'
wait_until 20 present "$info" || fail "the training runtime did not appear"
metric_is 'neuroncore_utilization_ratio{neuron_device="0",neuroncore="0",runtime_tag="train"}' 0.5 ||
  fail "utilization is not percent/100: $(metric_value 'neuroncore_utilization_ratio{neuron_device="0",neuroncore="0",runtime_tag="train"}')"
metric_is 'neuron_runtime_vcpu_usage_ratio{runtime_tag="train",usage_type="user"}' 0.425 || fail "runtime vCPU"
metric_is 'execution_latency_seconds{runtime_tag="train",percentile="p50"}' 0.014 || fail "latency p50"
metric_is 'neuroncore_memory_usage_constants{neuron_device="0",neuroncore="0",runtime_tag="train"}' 193986816 ||
  fail "memory of a held core"
present 'neuroncore_memory_usage_constants{neuron_device="3",neuroncore="3"}' || fail "sysfs's memory of a free core"
absent 'execution_status_total{neuron_device="0",neuroncore="0",status_type="completed"}' ||
  fail "sysfs's execution counters next to the runtime's count executions twice"
# One document every 0.2 s, 100 executions each: the counter adds them.
first=$(metric_value "$completed")
wait_until 10 at_least "$completed" "$((first + 300))" || fail "the execution counter does not add up: $(metric_value "$completed")"
[ $(($(metric_value "$completed") % 100)) -eq 0 ] || fail "a period counted in part: $(metric_value "$completed")"

set_step 2
wait_until 10 present 'neuron_runtime_info{runtime_tag="5151",pid="5151"}' || fail "the second runtime did not appear"
absent 'execution_latency_seconds{runtime_tag="5151",percentile="p50"}' || fail "latency of a runtime without executions"

set_step 3
wait_until 10 file_has "$DAEMON_LOG" "a line skipped: not a JSON object" || fail "the malformed line is not in the log"
present 'neuron_runtime_info{runtime_tag="5151",pid="5151"}' || fail "a malformed line dropped the runtimes"

set_step 4
wait_until 10 absent 'neuron_runtime_info{runtime_tag="5151",pid="5151"}' || fail "the exited runtime's series stayed"
absent 'neuroncore_utilization_ratio{neuron_device="3",neuroncore="2",runtime_tag="5151"}' || fail "its core's series stayed"
wait_until 10 absent 'neuroncore_utilization_ratio{neuron_device="0",neuroncore="0",runtime_tag="train"}' ||
  fail "a group with an error still served"
wait_until 10 file_has "$DAEMON_LOG" "runtime train: neuroncore_counters: failed to read" || fail "the group's error is not in the log"

first_pid=$(cat "$pidfile")
kill -KILL "$first_pid"
wait_until 10 file_has "$DAEMON_LOG" "neuron-monitor exited with status\|neuron-monitor was killed" ||
  fail "the monitor's end is not in the log"
restarted() { [ "$(cat "$pidfile")" != "$first_pid" ]; }
wait_until 20 restarted || fail "the monitor was not started again"
wait_until 20 present "$info" || fail "the runtime did not come back after the restart"
http_status /healthz | grep -q 200 || fail "the daemon does not answer"
stop_daemon
