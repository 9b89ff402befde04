# Helpers for the sysfs integration tests: start the built daemon on
# 127.0.0.1 port 0 with a temporary database, scrape it, stop it.
# Sourced; expects $NEUROND and $top_srcdir (set by `make check`).

: "${NEUROND:?run through make check}"
: "${top_srcdir:?run through make check}"
command -v curl >/dev/null || { echo "curl not installed"; exit 77; }

work=$(mktemp -d /tmp/neurond-sysfs-test.XXXXXX)
daemon_pid=
cleanup() {
  [ -n "$daemon_pid" ] && kill "$daemon_pid" 2>/dev/null && wait "$daemon_pid" 2>/dev/null
  rm -rf "$work"
}
trap cleanup EXIT

# start_daemon NAME ARGS...: starts neurond, waits for its port (at most
# 10 s), sets $port and $daemon_pid; its log is $work/NAME.log.
start_daemon() {
  name=$1; shift
  : > "$work/$name.log" # the child opens it only once it runs
  "$NEUROND" --allow-root --listen 127.0.0.1:0 --db "$work/$name.db" --web-root "$top_srcdir/web/static" \
    --log-level debug "$@" > "$work/$name.log" 2>&1 &
  daemon_pid=$!
  port=
  i=0
  while [ $i -lt 100 ] && [ -z "$port" ]; do
    port=$(sed -n 's/.*listening on port \([0-9]*\).*/\1/p' "$work/$name.log" | head -n 1)
    [ -n "$port" ] && break
    kill -0 "$daemon_pid" 2>/dev/null || break
    sleep 0.1
    i=$((i + 1))
  done
  if [ -z "$port" ]; then
    echo "neurond did not start:"; cat "$work/$name.log"
    exit 1
  fi
}

# stop_daemon: SIGTERM, then checks that it exited cleanly.
stop_daemon() {
  kill -TERM "$daemon_pid"
  status=0
  wait "$daemon_pid" || status=$?
  daemon_pid=
  if [ "$status" -ne 0 ]; then
    echo "neurond exited with status $status:"; cat "$work/$name.log"
    exit 1
  fi
}

scrape() { curl -fsS "http://127.0.0.1:$port$1"; }

# The exposition without what changes from run to run: the daemon's own
# neurond_* families (timing, build, root path) and the host's system_*.
stable_metrics() {
  scrape /metrics | grep -Ev '^(# (HELP|TYPE) )?(neurond_|system_)'
}

# metrics_has PATTERN: whether the current /metrics has a matching line.
metrics_has() {
  scrape /metrics > "$work/scrape"
  grep -q "$1" "$work/scrape"
}
