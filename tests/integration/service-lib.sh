# Helpers for the service-*.sh tests; sourced, never run.
# Needs NEUROND, WEB_ROOT and top_srcdir from the test environment;
# NEUROND_BIN is the built binary when NEUROND is a wrapper (valgrind).

set -eu

: "${NEUROND:?}" "${WEB_ROOT:?}" "${top_srcdir:?}"

TMP=$(mktemp -d "${TMPDIR:-/tmp}/neurond-test.XXXXXX")
PIDS=
cleanup() {
        for p in $PIDS; do kill "$p" 2>/dev/null || true; done
        for p in $PIDS; do wait "$p" 2>/dev/null || true; done
        rm -rf "$TMP"
}
trap cleanup EXIT INT TERM

fail() { echo "FAIL: $*" >&2; exit 1; }
skip() { echo "SKIP: $*" >&2; exit 77; }
need_libsystemd() { ldd "${NEUROND_BIN:-$NEUROND}" | grep -q libsystemd || skip "neurond was built without libsystemd"; }
need() { command -v "$1" >/dev/null 2>&1 || skip "$1 is not installed"; }

# Waits are ten times longer when the daemon runs under a wrapper
# (tests/valgrind-neurond.sh: memcheck slows its start-up most).
SLOW=1
[ -z "${NEUROND_WRAPPER:-}" ] || SLOW=10

# wait_for FILE PATTERN: waits up to 20 s (times SLOW) for PATTERN to appear in FILE.
wait_for() {
        i=0
        while ! grep -q -- "$2" "$1" 2>/dev/null; do
                i=$((i + 1))
                [ "$i" -le $((200 * SLOW)) ] || { cat "$1" >&2 || true; fail "timed out waiting for '$2' in $1"; }
                sleep 0.1
        done
}

# start_neurond NAME ARGS...: starts the daemon on 127.0.0.1:0 with a database
# in $TMP, logging to $TMP/NAME.log; sets PID and PORT.
start_neurond() {
        name=$1; shift
        "$NEUROND" --allow-root --listen 127.0.0.1:0 --db "$TMP/$name.db" --web-root "$WEB_ROOT" "$@" \
                >"$TMP/$name.out" 2>"$TMP/$name.log" &
        PID=$!
        PIDS="$PIDS $PID"
        wait_for "$TMP/$name.log" "listening on port"
        PORT=$(sed -n 's/.*listening on port \([0-9]*\).*/\1/p' "$TMP/$name.log" | head -n 1)
}

# stop_neurond PID: SIGTERM, and the daemon must exit 0.
stop_neurond() {
        kill -TERM "$1"
        rc=0
        wait "$1" || rc=$?
        PIDS=$(echo "$PIDS" | sed "s/ $1\$//; s/ $1 / /")
        [ "$rc" -eq 0 ] || fail "neurond (pid $1) exited with $rc after SIGTERM"
}

# free_port: a port that was free a moment ago, for tools that cannot bind port 0.
free_port() {
        python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

fetch() { curl -sS --fail --max-time 10 "$@"; }
