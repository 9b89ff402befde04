#!/bin/sh
# The file-descriptor limit: the daemon's RLIMIT_NOFILE is lowered to a few
# above what it uses, then more clients connect than it can accept. It
# keeps ticking and storing meanwhile, and serves again once they leave.
. "$(dirname "$0")/lib.sh"
need curl
need python3
need prlimit

start_daemon --backend model:trn1.2xlarge --interval 200ms --log-level debug
http /metrics >/dev/null
used=$(ls "/proc/$DAEMON_PID/fd" | wc -l)
limit=$((used + 6))
prlimit --pid "$DAEMON_PID" --nofile="$limit:$limit" || skip "cannot lower the daemon's fd limit"

before=$(healthz_tick)
# 40 idle connections (the server holds each until its timeout) plus
# requests on top, while ticks go on.
python3 - "$PORT" "$DAEMON_PID" "$limit" <<'PY' || fail "at the limit: see above"
import os, socket, sys, time
port, pid, limit = int(sys.argv[1]), sys.argv[2], int(sys.argv[3])
held = []
for _ in range(40):
    s = socket.socket()
    s.settimeout(5)
    s.connect(("127.0.0.1", port))  # completes in the kernel's backlog even when not accepted
    held.append(s)
time.sleep(1.5)
print(f"daemon holds {len(os.listdir(f'/proc/{pid}/fd'))} fds with a limit of {limit}")
for s in held:
    s.close()
PY
kill -0 "$DAEMON_PID" 2>/dev/null || fail "the daemon died at the fd limit"
grep -qi "too many open files" "$DAEMON_LOG" || fail "the limit was not reached (no EMFILE logged)"

# Recovery: served again, and the loop kept ticking throughout.
serving() { [ "$(http_status /healthz 2>/dev/null)" = 200 ]; }
wait_until serving || fail "not serving again after the clients left"
after=$(healthz_tick)
[ "$after" -gt $((before + 3)) ] || fail "the loop did not tick at the fd limit ($before, then $after)"
http /metrics | grep -q '^neurond_build_info' || fail "/metrics after recovery"
stop_daemon
echo "reliability-fds: ok (limit $limit, ticks $before -> $after)"
