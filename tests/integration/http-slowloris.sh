#!/bin/sh
# Slowloris: 2,000 connections send half a request head, then one more
# byte every second, which keeps libmicrohttpd's idle timer from ever
# running out. Meanwhile /metrics is scraped every half second: every
# scrape must be answered (a new connection always finds room, shedding a
# trickling one), and once header_timeout (3 s here) has passed, the server
# must have closed the trickling connections. Clients that finish their
# head within the timeout are served.
# Latencies are printed (the goal is under 1 s); they are not asserted,
# because a test must not fail on a slow machine.
. "$(dirname "$0")/lib.sh"
PYTHON=/usr/bin/python3
[ -x "$PYTHON" ] || skip "python3 is not installed"

printf '[neurond]\nheader_timeout = 3s\n' >"$TEST_TMP/neurond.conf"
start_daemon --backend model:trn1.32xlarge --interval 200ms --config "$TEST_TMP/neurond.conf"
"$PYTHON" - "$PORT" "$SLOW" <<'PY' >"$TEST_TMP/out" 2>&1 || fail "$(cat "$TEST_TMP/out")"
import resource, socket, sys, time, urllib.request

port, slow = int(sys.argv[1]), int(sys.argv[2])
soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
if soft < 2300:
    resource.setrlimit(resource.RLIMIT_NOFILE, (min(hard, 2300), hard))


def still_open(s):
    """Not closed by the server: nothing to read, not even the end."""
    s.settimeout(None)  # a socket with a timeout would not report "nothing yet" as such
    try:
        return s.recv(1, socket.MSG_PEEK | socket.MSG_DONTWAIT) != b""
    except BlockingIOError:
        return True
    except OSError:
        return False


# The trickle: 2,000 heads that never end.
trickling = []
for i in range(2000):
    s = socket.create_connection(("127.0.0.1", port), timeout=5)
    s.sendall(b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: ")
    trickling.append(s)
latencies, failed = [], []
start = time.monotonic()
next_trickle = start
while time.monotonic() - start < 6 * slow:
    tick = time.monotonic()
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10) as r:
            body = r.read()
            if r.status != 200 or b"neuroncore_utilization_ratio{" not in body:
                failed.append(r.status)
    except OSError as e:
        failed.append(str(e))
    latencies.append(time.monotonic() - tick)
    if tick >= next_trickle:
        for s in trickling:
            try:
                s.send(b"a")
            except OSError:
                pass
        next_trickle = tick + 1
    time.sleep(max(0.0, 0.5 - (time.monotonic() - tick)))
assert not failed, f"{len(failed)} of {len(latencies)} scrapes failed: {failed[:5]}"
# Past the header timeout (3 s) and the server's next check (0.5 s), every
# trickling connection is closed.
time.sleep(1)
left = sum(1 for s in trickling if still_open(s))
for s in trickling:
    s.close()
assert left == 0, f"{left} of 2000 trickling connections are still open after {time.monotonic() - start:.0f} s"

# Heads that are slow but end in time are served.
held = []
for i in range(100):
    s = socket.create_connection(("127.0.0.1", port), timeout=10)
    s.sendall(b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: ")
    held.append(s)
time.sleep(1)
served = 0
for s in held:
    s.sendall(b"1\r\nConnection: close\r\n\r\n")
for s in held:
    served += s.recv(64).startswith(b"HTTP/1.1 200")
    s.close()
assert served == 100, f"only {served} of 100 slow heads that ended in time were served"
latencies.sort()
print(f"{len(latencies)} scrapes with 2000 trickling connections: median {latencies[len(latencies) // 2] * 1000:.1f} ms, "
      f"max {latencies[-1] * 1000:.1f} ms; all trickling connections closed by the header timeout")
PY
stop_daemon
echo "PASS: $(cat "$TEST_TMP/out")"
