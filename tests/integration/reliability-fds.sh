#!/bin/sh
# The file-descriptor limit: the running daemon's RLIMIT_NOFILE is lowered
# to what it uses plus its reserve and room for 30 connections, then 300
# idle connections flood it. The server sheds connections beyond what the
# limit leaves (the longest-waiting first), so the sysfs collector, which
# opens files on every tick, keeps reading: no "Too many open files", the
# collectors stay up, ticks go on and are stored; scrapes are answered
# throughout, and after the flood.
. "$(dirname "$0")/lib.sh"
need curl
need python3
need prlimit

start_daemon --backend "sysfs:$top_srcdir/tests/data/trn1" --interval 200ms
http /metrics >/dev/null
used=$(ls "/proc/$DAEMON_PID/fd" | wc -l)
limit=$((used + 128 + 30)) # web/conns.h: CONNS_FD_RESERVE is 128
prlimit --pid "$DAEMON_PID" --nofile="$limit:$limit" || skip "cannot lower the daemon's fd limit"
sleep 1 # the server reads the limit twice a second

before=$(healthz_tick)
stored_before=$(metric_value neurond_samples_stored_total)
python3 - "$PORT" "$DAEMON_PID" "$limit" <<'PY' >"$TEST_TMP/flood.out" 2>&1 || fail "$(cat "$TEST_TMP/flood.out")"
import os, socket, sys, time, urllib.request
port, pid, limit = int(sys.argv[1]), sys.argv[2], int(sys.argv[3])
held, most, failed, scrapes = [], 0, [], 0
end = time.monotonic() + 6
while time.monotonic() < end:
    # Keep 300 idle connections open, opening again those the server shed.
    held = [s for s in held if s.fileno() >= 0]
    while len(held) < 300:
        held.append(socket.create_connection(("127.0.0.1", port)))
    most = max(most, len(os.listdir(f"/proc/{pid}/fd")))
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10) as r:
            scrapes += 1
            if b'neurond_collector_up{collector="backend"} 1' not in r.read():
                failed.append("backend down")
    except OSError as e:
        failed.append(str(e))
    # Those the server closed read as ended; close them on this side.
    for s in held:
        try:
            if s.recv(1, socket.MSG_PEEK | socket.MSG_DONTWAIT) == b"":
                s.close()
        except BlockingIOError:
            pass
        except OSError:
            s.close()
    time.sleep(0.2)
print(f"{scrapes} scrapes, the daemon held at most {most} fds of {limit}")
assert not failed, f"scrapes failed: {failed[:5]}"
assert most < limit, f"the daemon reached its limit of {limit} fds"
PY
kill -0 "$DAEMON_PID" 2>/dev/null || fail "the daemon died at the fd limit"
grep -qi "too many open files" "$DAEMON_LOG" && fail "the limit was reached: $(grep -i 'too many open' "$DAEMON_LOG" | head -3)"
after=$(healthz_tick)
[ "$after" -gt $((before + 3)) ] || fail "the loop did not tick through the flood ($before, then $after)"
[ "$(metric_value 'neurond_collector_up{collector="backend"}')" = 1 ] || fail "the sysfs collector is down"
stored_after=$(metric_value neurond_samples_stored_total)
[ "$stored_after" -gt "$stored_before" ] || fail "nothing stored through the flood"
[ "$(http_status /healthz)" = 200 ] || fail "/healthz after the flood"
stop_daemon
echo "reliability-fds: ok ($(cat "$TEST_TMP/flood.out"); ticks $before -> $after)"
