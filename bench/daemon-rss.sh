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
        case $spec in *trn3*) goal="< 65536" ;; *trn1*) goal="(no goal; trn2 stand-in)" ;; esac
        printf '%-52s %12s   %s\n' "daemon RSS kB, ${spec#model:}" "$rss" "$goal"
        stop_daemon
        rm -f "$TEST_TMP"/neurond.db*
done
