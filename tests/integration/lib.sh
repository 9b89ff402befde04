# Shared helpers for integration tests: start the built daemon on loopback
# with a temporary database, wait for its port, stop it cleanly.
# Tests source this file; $NEUROND, $WEB_ROOT and $top_srcdir come from make.

set -eu

: "${NEUROND:?run through make check}"
TEST_TMP=$(mktemp -d "${TMPDIR:-/tmp}/neurond-test.XXXXXX")
DAEMON_PID=
PORT=
# The bounds on the daemon's start and stop are ten times longer when it
# runs under a wrapper (tests/valgrind-neurond.sh: memcheck starts the
# 144-device model in about 10 s).
SLOW=1
[ -z "${NEUROND_WRAPPER:-}" ] || SLOW=10

cleanup() {
  if [ -n "$DAEMON_PID" ] && kill -0 "$DAEMON_PID" 2>/dev/null; then
    kill -KILL "$DAEMON_PID" 2>/dev/null || true
  fi
  rm -rf "$TEST_TMP"
}
trap cleanup EXIT

# mount_small_tmpfs SIZE: a tmpfs of SIZE at $TEST_TMP/small, unmounted at
# exit once the daemon is gone. The first call re-runs the test (without
# arguments; what came before runs twice) in a private mount namespace, so
# that the mount is the test's alone; where that is not allowed, it skips.
mount_small_tmpfs() {
  if [ -z "${NEUROND_TEST_NS:-}" ]; then
    unshare --mount true 2>/dev/null || skip "cannot make a mount namespace"
    rm -rf "$TEST_TMP"
    NEUROND_TEST_NS=1 exec unshare --mount --propagation private sh "$0"
  fi
  mkdir "$TEST_TMP/small"
  mount -t tmpfs -o "size=$1" tmpfs "$TEST_TMP/small" || skip "cannot mount a tmpfs"
  trap unmount_then_cleanup EXIT
}
unmount_then_cleanup() {
  status=$?
  if [ -n "$DAEMON_PID" ]; then
    kill -KILL "$DAEMON_PID" 2>/dev/null || true
    wait "$DAEMON_PID" 2>/dev/null || true
  fi
  umount "$TEST_TMP/small" 2>/dev/null || true
  cleanup
  exit $status
}

fail() {
  echo "FAIL: $*" >&2
  if [ -f "$TEST_TMP/daemon.log" ]; then
    echo "--- daemon log" >&2
    tail -n 30 "$TEST_TMP/daemon.log" >&2
  fi
  exit 1
}

skip() {
  echo "SKIP: $*" >&2
  exit 77
}

need() {
  command -v "$1" >/dev/null 2>&1 || skip "$1 is not installed"
}

# start_daemon [ARGS...]: starts neurond on 127.0.0.1:0 with a temporary
# database (unless --db is given) and sets PORT from its log, within 10 s
# (times SLOW).
start_daemon() {
  : > "$TEST_TMP/daemon.log"
  "$NEUROND" --allow-root --listen 127.0.0.1:0 --web-root "$WEB_ROOT" --db "$TEST_TMP/neurond.db" "$@" \
    >"$TEST_TMP/daemon.log" 2>&1 &
  DAEMON_PID=$!
  PORT=
  i=0
  while [ $i -lt $((100 * SLOW)) ]; do
    PORT=$(sed -n 's/.*listening on port \([0-9]*\).*/\1/p' "$TEST_TMP/daemon.log" | head -n 1)
    [ -n "$PORT" ] && return 0
    kill -0 "$DAEMON_PID" 2>/dev/null || fail "daemon exited at start-up"
    sleep 0.1
    i=$((i + 1))
  done
  fail "daemon did not log its port within $((10 * SLOW)) s"
}

# stop_daemon: SIGTERM, then expect exit status 0 within 10 s (times SLOW).
stop_daemon() {
  kill -TERM "$DAEMON_PID"
  i=0
  while kill -0 "$DAEMON_PID" 2>/dev/null; do
    [ $i -lt $((100 * SLOW)) ] || fail "daemon did not exit within $((10 * SLOW)) s of SIGTERM"
    sleep 0.1
    i=$((i + 1))
  done
  status=0
  wait "$DAEMON_PID" || status=$?
  DAEMON_PID=
  [ "$status" -eq 0 ] || fail "daemon exited with status $status after SIGTERM"
}

# http PATH: GET with bounded time; prints the body.
http() {
  curl -sS --max-time 10 "http://127.0.0.1:$PORT$1"
}

# http_status PATH [CURL-ARGS...]: prints only the status code.
http_status() {
  path=$1
  shift
  curl -sS --max-time 10 -o /dev/null -w '%{http_code}' "$@" "http://127.0.0.1:$PORT$path"
}
