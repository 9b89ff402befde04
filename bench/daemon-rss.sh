#!/bin/sh
# make bench: the whole daemon's resident memory per instance type.
# Usage: bench/daemon-rss.sh  (NEUROND=path/to/neurond; run by hand from
# the top of the tree, the built daemon and sources there)
set -eu
: "${NEUROND:=$PWD/daemon/neurond}" "${WEB_ROOT:=$PWD/web/static}" "${top_srcdir:=$PWD}"
. "$(dirname "$0")/../tests/integration/lib.sh"

echo "machine: $(uname -m), $(nproc) cores, $(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -n 1)"
# RSS of the whole daemon after ten simulated minutes at 1 s (several
# chunk flushes and rollups), per instance type the model knows.
for spec in model:trn2.48xlarge,scenario=training model:trn3-gen2-ultraserver model:trn1.32xlarge; do
        start_daemon --backend "$spec,speed=60"
        sleep 10
        kill -0 "$DAEMON_PID" 2>/dev/null || fail "the daemon exited while running $spec"
        rss=$(sed -n 's/^VmRSS:[[:space:]]*\([0-9]*\) kB/\1/p' "/proc/$DAEMON_PID/status")
        goal="< 16384"
        case $spec in *trn3*) goal="< 49152" ;; *trn1*) goal="(no goal; trn2 stand-in)" ;; esac
        printf '%-52s %12s   %s\n' "daemon RSS kB, ${spec#model:}" "$rss" "$goal"
        stop_daemon
        rm -f "$TEST_TMP"/neurond.db*
done

# Pod attribution's cost: the trn2.48xlarge of above with the test suite's
# kubelet answering every second for 16 pods holding all 128 cores (gRPC's
# library and threads, the refresh thread), against pod_labels = false.
if /usr/bin/python3 -c 'import grpc, grpc_tools' 2>/dev/null; then
        /usr/bin/python3 - "$TEST_TMP/pods.json" <<'PY'
import json, sys
pods = [{"namespace": "ml", "name": "train-%d" % p,
         "containers": [{"name": "worker", "devices": [{"resource": "aws.amazon.com/neuroncore",
                                                        "ids": [str(8 * p + i) for i in range(8)]}]}]}
        for p in range(16)]
json.dump({"pods": pods}, open(sys.argv[1], "w"))
PY
        start_helper /usr/bin/python3 "$top_srcdir/tests/integration/fake-kubelet.py" "$top_srcdir/kube/podresources.proto" \
                "$TEST_TMP/kubelet.sock" "$TEST_TMP/pods.json" "$TEST_TMP/calls"
        wait_until 30 test -S "$TEST_TMP/kubelet.sock" || fail "the fake kubelet did not start"
        printf '[neurond]\npod_labels = false\n' >"$TEST_TMP/off.conf"
        printf '[neurond]\npod_resources_socket = %s\npod_resources_interval = 1s\n' "$TEST_TMP/kubelet.sock" \
                >"$TEST_TMP/on.conf"
        for labels in off on; do
                start_daemon --backend model:trn2.48xlarge,scenario=training,speed=60 --config "$TEST_TMP/$labels.conf"
                sleep 10
                rss=$(sed -n 's/^VmRSS:[[:space:]]*\([0-9]*\) kB/\1/p' "/proc/$DAEMON_PID/status")
                threads=$(ls "/proc/$DAEMON_PID/task" | wc -l)
                printf '%-52s %12s   %s\n' "daemon RSS kB, trn2.48xlarge, pod labels $labels" "$rss" "($threads threads)"
                stop_daemon
                rm -f "$TEST_TMP"/neurond.db*
        done
fi
