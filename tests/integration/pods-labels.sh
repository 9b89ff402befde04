#!/bin/sh
# Pod labels from the test suite's kubelet (tests/integration/fake-kubelet.py,
# a real gRPC server on a unix socket): the series of the cores and devices
# it assigns carry pod, namespace and container on /metrics and the REST
# API, and follow its reassignments within one refresh; a core nobody holds
# has no such labels;
# when the kubelet is slow or goes away, neurond goes on polling and
# serving, says why in /api/v1/pods, and drops the labels after three
# intervals; they come back with the kubelet. pod_labels = false never asks.
# The kubelet is asked on the pod-resources thread's own clock, in real
# time; that the tick loop goes on meanwhile is shown by running ticks
# through the admin endpoint, which answers once they are stored.
. "$(dirname "$0")/lib.sh"
need curl
/usr/bin/python3 -c 'import grpc, grpc_tools' 2>/dev/null || skip "python3-grpcio or python3-grpc-tools is not installed"

socket=$TEST_TMP/kubelet.sock
calls=$TEST_TMP/calls
# Refreshes with a deadline that the test suite's kubelet meets even on a
# loaded machine or under valgrind.
interval_ms=$((SLOW > 1 ? 3000 : 1000))
printf '[neurond]\npod_resources_socket = %s\npod_resources_interval = %dms\n' "$socket" "$interval_ms" >"$TEST_TMP/on.conf"

# assign JSON: what the kubelet answers from its next call on.
assign() {
        printf '%s\n' "$1" >"$TEST_TMP/pods.json.new" && mv "$TEST_TMP/pods.json.new" "$TEST_TMP/pods.json"
}
start_kubelet() {
        : >"$calls"
        start_helper /usr/bin/python3 "$top_srcdir/tests/integration/fake-kubelet.py" "$top_srcdir/kube/podresources.proto" \
                "$socket" "$TEST_TMP/pods.json" "$calls"
        KUBELET=$HELPER_PID
        wait_until 30 test -S "$socket" || fail "the fake kubelet did not listen on $socket"
}
stop_kubelet() {
        kill -TERM "$KUBELET"
        wait_helper "$KUBELET" || true
        [ ! -e "$socket" ] || fail "the fake kubelet left its socket"
}
# ticks_run N: the loop runs N ticks (driven) within 30 s.
ticks_run() {
        _out=$(curl -sS --max-time $((30 * SLOW)) -X POST "$URL/api/v1/admin/ticks?run=$1" 2>&1) &&
                case $_out in *'"status":"success"'*) ;; *) false ;; esac
}
n_calls() {
        wc -l <"$calls"
}
calls_at_least() {
        [ "$(n_calls)" -ge "$1" ]
}
# latest QUERY: the current values /api/v1/latest answers for QUERY.
latest() {
        http "/api/v1/latest?$1" --fail >"$TEST_TMP/latest" || fail "/api/v1/latest?$1 failed"
}
# core_pod CORE: the pod label of the core's utilization, "-" when it has none.
core_pod() {
        latest "metric=neuroncore_utilization_ratio&neuroncore=$1"
        sed -n 's/.*"pod":"\([^"]*\)".*/\1/p' "$TEST_TMP/latest" | grep . || echo -
}
core_pod_is() {
        [ "$(core_pod "$1")" = "$2" ]
}
# metrics_core_pod CORE: the pod label of the core's memory used on
# /metrics, "-" when it has none.
metrics_core_pod() {
        http /metrics --fail >"$TEST_TMP/metrics" || fail "/metrics failed"
        sed -n 's/^neuroncore_memory_used_bytes{[^}]*neuroncore="'"$1"'",pod="\([^"]*\)".*/\1/p' "$TEST_TMP/metrics" |
                grep . || echo -
}

# trn1.32xlarge: 16 devices of 2 cores; core N is on device N/2.
assign '{"pods": [
  {"namespace": "ml", "name": "train-0", "containers": [{"name": "worker",
    "devices": [{"resource": "aws.amazon.com/neuroncore", "ids": ["0", "1", "5"]}]}]},
  {"namespace": "serve", "name": "infer-0", "containers": [{"name": "server",
    "devices": [{"resource": "aws.amazon.com/neuron", "ids": ["3"]}]}]},
  {"namespace": "batch", "name": "job-0", "containers": [{"name": "main",
    "devices": [{"resource": "aws.amazon.com/neurondevice", "ids": ["9"]},
                {"resource": "nvidia.com/gpu", "ids": ["GPU-1"]}]}]}]}'
start_kubelet
start_daemon --backend model:trn1.32xlarge,seed=3 --config "$TEST_TMP/on.conf" --enable-admin
wait_until 30 core_pod_is 0 train-0 || fail "core 0 never carried train-0: $(cat "$TEST_TMP/latest")"

# Who holds what.
http /api/v1/pods --fail >"$TEST_TMP/pods" || fail "/api/v1/pods failed"
for held in '"namespace":"ml","pod":"train-0","container":"worker","neuroncores":\[0,1,5\],"neuron_devices":\[0\]' \
        '"pod":"infer-0","container":"server","neuroncores":\[6,7\],"neuron_devices":\[3\],"assigned":{"neuroncores":\[\],"neuron_devices":\[3\]}' \
        '"pod":"job-0","container":"main","neuroncores":\[18,19\],"neuron_devices":\[9\]' '"state":"ok"'; do
        grep -q "$held" "$TEST_TMP/pods" || fail "/api/v1/pods lacks $held: $(cat "$TEST_TMP/pods")"
done
# Every series of a held core or device, and no other, carries the labels.
latest "pod=infer-0&namespace=serve&container=server"
grep -q '"__name__":"neuron_device_memory_total_bytes","neuron_device":"3","pod":"infer-0","namespace":"serve","container":"server"' \
        "$TEST_TMP/latest" || fail "device 3's series are not infer-0's: $(cat "$TEST_TMP/latest")"
grep -o '"neuron_device":"[0-9]*"' "$TEST_TMP/latest" | sort -u | grep -qvx '"neuron_device":"3"' &&
        fail "infer-0 labels series of another device: $(cat "$TEST_TMP/latest")"
# The same on /metrics, where Prometheus reads them.
http /metrics --fail >"$TEST_TMP/metrics" || fail "/metrics failed"
for held in 'neuroncore_memory_used_bytes{neuron_device="0",neuroncore="0",pod="train-0",namespace="ml",container="worker"} ' \
        'neuroncore_memory_used_bytes{neuron_device="2",neuroncore="5",pod="train-0",namespace="ml",container="worker"} ' \
        'neuron_device_memory_total_bytes{neuron_device="3",pod="infer-0",namespace="serve",container="server"} ' \
        'neuroncore_memory_used_bytes{neuron_device="9",neuroncore="19",pod="job-0",namespace="batch",container="main"} ' \
        'neuroncore_memory_used_bytes{neuron_device="2",neuroncore="4"} ' \
        'neuron_device_memory_total_bytes{neuron_device="2"} '; do
        grep -qF "$held" "$TEST_TMP/metrics" || fail "/metrics lacks $held"
done
grep -q 'neuroncore="4"[^}]*,pod=' "$TEST_TMP/metrics" && fail "core 4, unheld, has pod labels on /metrics"
# Device 2 has core 5 held, core 4 not: the device is nobody's.
latest "metric=neuron_device_memory_total_bytes&neuron_device=2"
grep -q '"pod"' "$TEST_TMP/latest" && fail "device 2, half held, carries a pod: $(cat "$TEST_TMP/latest")"
core_pod_is 5 train-0 || fail "core 5 is not train-0's"
# Unheld: absent, not empty.
latest "metric=neuroncore_memory_used_bytes&neuroncore=4"
grep -q '"neuroncore":"4"' "$TEST_TMP/latest" || fail "no memory series of core 4"
grep -Eq '"(pod|namespace|container)"' "$TEST_TMP/latest" && fail "core 4, unheld, has pod labels: $(cat "$TEST_TMP/latest")"

# Reassignments follow within one refresh: the kubelet names train-N after
# its Nth call, and whatever neurond shows was answered by the call before
# the last one started, or by that one. It runs one call at a time and
# publishes each answer before it starts the next.
assign '{"pods": [{"namespace": "ml", "name": "train-{call}", "containers": [{"name": "worker",
  "devices": [{"resource": "aws.amazon.com/neuroncore", "ids": ["0", "1"]}]}]}]}'
start=$(n_calls)
wait_until 30 calls_at_least $((start + 3)) || fail "the kubelet was not asked again"
for sample in 1 2 3 4 5; do
        before=$(n_calls)
        pod=$(core_pod 0)
        shown=${pod#train-}
        [ "$pod" != "$shown" ] || fail "core 0 shows '$pod', not a train-N pod"
        [ "$shown" -ge $((before - 1)) ] ||
                fail "core 0 shows the answer of call $shown while call $before had started: more than one refresh behind"
        before=$(n_calls)
        pod=$(metrics_core_pod 0)
        shown=${pod#train-}
        [ "$pod" != "$shown" ] || fail "core 0 shows '$pod' on /metrics, not a train-N pod"
        [ "$shown" -ge $((before - 1)) ] ||
                fail "core 0 shows the answer of call $shown on /metrics while call $before had started"
        # The next sample after the kubelet's next answer.
        wait_until 10 calls_at_least $((before + 1)) || fail "the kubelet was not asked again"
done
# Released: the labels go with the next answer.
assign '{"pods": []}'
wait_until 30 core_pod_is 0 - || fail "core 0 kept a pod after the kubelet released it"
core_pod_is 6 - || fail "core 6 kept infer-0"
http /metrics --fail | grep -q 'pod=' && fail "/metrics kept pod labels after the kubelet released every core"

# A slow kubelet: the call times out, polling and serving go on.
assign '{"pods": [{"namespace": "ml", "name": "train-0", "containers": [{"name": "worker",
  "devices": [{"resource": "aws.amazon.com/neuroncore", "ids": ["0"]}]}]}], "delay": '"$((interval_ms * 4 / 1000 + 2))"'}'
wait_until 60 file_has "$DAEMON_LOG" "pod-resources: .*Deadline Exceeded" || fail "neurond did not log the slow kubelet"
[ "$(http_status /healthz)" = 200 ] || fail "/healthz fails while the kubelet is slow"
ticks_run 3 || fail "polling stopped while the kubelet was slow: $_out"
http /api/v1/pods | grep -q '"state":"error","socket":"[^"]*","error":"[^"]*Deadline Exceeded' ||
        fail "/api/v1/pods does not say the kubelet is slow: $(http /api/v1/pods)"

# The kubelet goes away: labels stay three intervals, then go; the log and
# /api/v1/pods say why; they come back with the kubelet.
assign '{"pods": [{"namespace": "ml", "name": "train-0", "containers": [{"name": "worker",
  "devices": [{"resource": "aws.amazon.com/neuroncore", "ids": ["0"]}]}]}]}'
wait_until 60 core_pod_is 0 train-0 || fail "core 0 is not train-0's once the kubelet is fast again"
stop_kubelet
wait_until 60 core_pod_is 0 - || fail "core 0 kept its pod label after the kubelet went away"
http /api/v1/pods | grep -q '"state":"error".*"error":"[^"]*kubelet.sock: No such file or directory"' ||
        fail "/api/v1/pods does not say the socket is gone: $(http /api/v1/pods)"
file_has "$DAEMON_LOG" "pod-resources: no kubelet socket at $socket" || fail "neurond did not log the missing socket"
ticks_run 3 || fail "polling stopped without the kubelet: $_out"
[ "$(http_status /metrics)" = 200 ] || fail "/metrics fails without the kubelet"
start_kubelet
wait_until 60 core_pod_is 0 train-0 || fail "the labels did not come back with the kubelet"
stop_daemon

# The driver lists its devices only after neurond started (sysfs): the
# cores the kubelet assigned get their pod labels without a restart.
mkdir -p "$TEST_TMP/late/devices/virtual"
start_daemon late --backend "sysfs:$TEST_TMP/late" --enable-admin --config "$TEST_TMP/on.conf"
hold_ticks
cp -R "$top_srcdir/tests/data/trn1/devices/virtual/neuron_device" "$TEST_TMP/late/devices/virtual/"
chmod -R u+w "$TEST_TMP/late"
run_ticks 1
metrics_core_pod_is() {
        [ "$(metrics_core_pod "$1")" = "$2" ]
}
wait_until 30 metrics_core_pod_is 0 train-0 ||
        fail "core 0 of devices found after start never carried train-0: $(grep neuroncore_memory_used "$TEST_TMP/metrics")"
stop_daemon late

# pod_labels = false: the kubelet is never asked, and nothing is labelled.
printf '[neurond]\npod_labels = false\npod_resources_socket = %s\n' "$socket" >"$TEST_TMP/off.conf"
before=$(n_calls)
start_daemon off --backend model:trn1.32xlarge,seed=3 --config "$TEST_TMP/off.conf" --enable-admin
ticks_run 2 || fail "no ticks with pod_labels off: $_out"
http /api/v1/pods | grep -q '"state":"off","socket":null' || fail "/api/v1/pods is not off: $(http /api/v1/pods)"
core_pod_is 0 - || fail "core 0 carries a pod with pod_labels off"
http /metrics --fail | grep -q 'pod=' && fail "/metrics has pod labels with pod_labels off"
[ "$(http_status '/api/v1/latest?pod=train-0')" = 400 ] || fail "pod= filters with pod_labels off"
stop_daemon off
# Over the daemon's whole life: a refresh thread would have asked at once.
[ "$(n_calls)" -eq "$before" ] || fail "neurond asked the kubelet with pod_labels off"
stop_kubelet
echo "pod labels follow the kubelet within one refresh, are absent on unheld cores, and survive its slowness and absence"
