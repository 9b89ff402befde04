# Helpers for the device model's integration tests: start the built daemon
# on 127.0.0.1 with a throw-away database, talk to it, stop it cleanly.
# Sourced; exit codes follow automake: 0 pass, 1 fail, 77 skip.

NEUROND=${NEUROND:-$(pwd)/daemon/neurond}
WEB_ROOT=${WEB_ROOT:-$(pwd)/web/static}
work=$(mktemp -d)
pid=
port=
base=

cleanup() {
  if [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null; then
    kill -TERM "$pid" 2>/dev/null
    wait "$pid" 2>/dev/null
  fi
  rm -rf "$work"
}
trap cleanup EXIT

fail() {
  echo "FAIL: $*" >&2
  [ -f "$work/log" ] && sed 's/^/  log: /' "$work/log" >&2
  exit 1
}

need() {
  for tool in "$@"; do
    command -v "$tool" >/dev/null 2>&1 || { echo "SKIP: $tool not installed"; exit 77; }
  done
}

# start_daemon ARGS...: runs neurond, waits (bounded) for its port.
start_daemon() {
  rm -f "$work/db" "$work/log"
  "$NEUROND" --listen 127.0.0.1:0 --db "$work/db" --web-root "$WEB_ROOT" "$@" >"$work/log" 2>&1 &
  pid=$!
  port=
  for _ in $(seq 1 200); do
    port=$(sed -n 's/.*listening on port \([0-9]*\).*/\1/p' "$work/log")
    [ -n "$port" ] && break
    kill -0 "$pid" 2>/dev/null || fail "neurond exited at start"
    sleep 0.1
  done
  [ -n "$port" ] || fail "neurond did not report its port"
  base="http://127.0.0.1:$port"
}

# stop_daemon: SIGTERM, and the daemon must exit 0.
stop_daemon() {
  kill -TERM "$pid"
  wait "$pid"
  rc=$?
  pid=
  [ "$rc" -eq 0 ] || fail "neurond exited with $rc on SIGTERM"
}

# metric_value NAME_AND_LABELS: the value of one exact series in /metrics, or "".
metric_value() {
  curl -sf "$base/metrics" | awk -v s="$1" 'index($0, s " ") == 1 { print $2 }'
}

# wait_until DESCRIPTION COMMAND...: retries COMMAND for up to 20 s of wall
# time (the model runs sped up, so this is many simulated ticks).
wait_until() {
  what=$1
  shift
  for _ in $(seq 1 200); do
    "$@" && return 0
    sleep 0.1
  done
  fail "timed out waiting until $what"
}
