#!/bin/sh
# contrib/kubernetes/neurond.yaml's pod started the way the kubelet starts
# it (tests/integration/kube-pod.py), on a node laid out as a fresh one is:
# the hostPath of the state made by the kubelet, root's with mode 0755; the
# kubelet's pod-resources socket root's, mode 0755, in a directory of mode
# 0750 (here the test suite's kubelet, tests/integration/fake-kubelet.py);
# the driver's sysfs (a fixture tree) read only. The init container hands
# the state to 65534, neurond starts as 65534 without capabilities on a
# read-only root, passes its probes, serves, and reaches the kubelet
# through the relay; a second start on the same node keeps the
# database. Without the relay, uid 65534 could not connect to the socket.
. "$(dirname "$0")/lib.sh"
need python3 setpriv chroot unshare curl socat
/usr/bin/python3 -c 'import yaml, grpc, grpc_tools' 2>/dev/null ||
        skip "python3-yaml, python3-grpcio or python3-grpc-tools is not installed"
[ "$(id -u)" -eq 0 ] || skip "running the pod's containers as their users on roots of their own needs root"
enter_mount_namespace net
manifest=$top_srcdir/contrib/kubernetes/neurond.yaml
containerfile=$top_srcdir/contrib/container/Containerfile

need_image_prefix
install_into "$TEST_TMP/image"

# The node.
node=$TEST_TMP/node
mkdir -p "$node/sys" "$node/var/lib/kubelet"
mount --bind "$top_srcdir/tests/data/trn1" "$node/sys" && mount -o remount,bind,ro "$node/sys" ||
        fail "cannot mount the sysfs fixture"
mkdir -m 0750 "$node/var/lib/kubelet/pod-resources"
socket=$node/var/lib/kubelet/pod-resources/kubelet.sock
cat >"$TEST_TMP/pods.json" <<'EOF'
{"pods": [{"namespace": "ml", "name": "train-0",
           "containers": [{"name": "worker",
                           "devices": [{"resource": "aws.amazon.com/neuroncore", "ids": ["0", "1"]}]}]}]}
EOF
(umask 022 && exec /usr/bin/python3 "$top_srcdir/tests/integration/fake-kubelet.py" "$top_srcdir/kube/podresources.proto" \
        "$socket" "$TEST_TMP/pods.json" "$TEST_TMP/calls") &
HELPER_PIDS="$HELPER_PIDS $!"
wait_until 30 test -S "$socket" || fail "the fake kubelet did not listen on $socket"
[ "$(stat -c %a "$socket")" = 755 ] || fail "the kubelet's socket has mode $(stat -c %a "$socket"), not 755"

# What the relay is for: the socket refuses uid 65534.
if setpriv --reuid 65534 --regid 65534 --clear-groups /usr/bin/python3 -c '
import socket, sys
socket.socket(socket.AF_UNIX).connect(sys.argv[1])' "$socket" 2>/dev/null; then
        fail "uid 65534 connects to the kubelet's socket: the relay would not be needed"
fi

# start_pod: runs the DaemonSet's pod until stop_pod; sets URL.
start_pod() {
        rm -rf "$TEST_TMP/pod"
        mkdir "$TEST_TMP/pod"
        start_helper /usr/bin/python3 "$top_srcdir/tests/integration/kube-pod.py" \
                pod "$containerfile" "$TEST_TMP/image" "$TEST_TMP/pod" "$manifest" "$node"
        POD=$HELPER_PID
        wait_until 90 pod_ready "$POD" || fail "the pod's probes did not pass: $(tail -n 20 "$TEST_TMP"/pod/*.log)"
        URL=http://127.0.0.1:$(cat "$TEST_TMP/pod/ready")
}
stop_pod() {
        kill -TERM "$POD"
        wait_helper "$POD" >"$TEST_TMP/stop.log" ||
                fail "neurond did not exit cleanly: $(cat "$TEST_TMP/stop.log"; tail -n 20 "$TEST_TMP"/pod/neurond.log)"
}

start_pod
[ "$(stat -c '%u:%g %a' "$node/var/lib/neurond")" = "65534:65534 750" ] ||
        fail "the state directory is $(stat -c '%u:%g %a' "$node/var/lib/neurond"), not 65534's with mode 0750"
[ "$(stat -c %u "$node/var/lib/neurond/neurond.db")" = 65534 ] || fail "the database is not 65534's"
[ "$(http_status /healthz)" = 200 ] || fail "/healthz does not answer 200"
http /metrics >"$TEST_TMP/metrics"
grep -q '^neuron_device_up{neuron_device="3"} 1' "$TEST_TMP/metrics" || fail "the sysfs backend does not see the node's devices"
grep -q "running as root" "$TEST_TMP"/pod/neurond.log && fail "neurond runs as root"
wait_until 30 file_has "$TEST_TMP/pod/neurond.log" "kubelet at /run/neurond/kubelet.sock answers; 1 containers" ||
        fail "neurond does not reach the kubelet through the relay: $(tail -n 5 "$TEST_TMP/pod/neurond.log")"
# The pods' labels reach /metrics: cores 0 and 1 are train-0's.
core_held() {
        http /metrics | grep -q "neuroncore=\"$1\",pod=\"train-0\",namespace=\"ml\",container=\"worker\"}"
}
wait_until 30 core_held 1 || fail "core 1's series on /metrics do not carry train-0's labels"
# Device 3's first core (2: the fixture has devices 0 and 3), unheld: its
# series are there, without pod labels.
http /metrics >"$TEST_TMP/metrics"
grep -q 'neuroncore="2"} ' "$TEST_TMP/metrics" || fail "no series of core 2"
grep -q 'neuroncore="2",pod=' "$TEST_TMP/metrics" && fail "core 2, unheld, carries pod labels"
tick=$(healthz_tick)
stop_pod

# A restart of the pod (a DaemonSet update): the state directory is 65534's
# already, and the database is still there.
start_pod
[ "$(http_status /healthz)" = 200 ] || fail "/healthz does not answer 200 after the restart"
sqlite3 "$node/var/lib/neurond/neurond.db" 'SELECT COUNT(*) FROM series' >/dev/null || fail "the database is not readable"
stop_pod
echo "the DaemonSet's pod starts as 65534 on a fresh node, serves, reaches the kubelet through the relay, and starts again (tick $tick)"
