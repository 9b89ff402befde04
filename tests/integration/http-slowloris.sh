#!/bin/sh
# 1,000 connections held open with half-sent requests (slowloris style)
# while /metrics is scraped 20 times: every scrape must succeed, and the
# held connections are answered (or closed by the idle timeout, never left
# hanging) when they finally finish.
# Latencies are printed (the issue's goal is under 1 s); they are not
# asserted, because a test must not fail on a slow machine.
. "$(dirname "$0")/lib.sh"
PYTHON=/usr/bin/python3
[ -x "$PYTHON" ] || skip "python3 is not installed"

start_daemon --backend model:trn1.32xlarge --interval 200ms
"$PYTHON" - "$PORT" <<'PY' >"$TEST_TMP/out" 2>&1 || fail "$(cat "$TEST_TMP/out")"
import resource, socket, sys, time, urllib.request

port = int(sys.argv[1])
soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
if soft < 1100:
    resource.setrlimit(resource.RLIMIT_NOFILE, (min(hard, 1100), hard))
held = []
for i in range(1000):
    s = socket.create_connection(("127.0.0.1", port), timeout=5)
    s.sendall(b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: ")
    held.append(s)
latencies = []
for i in range(20):
    t = time.monotonic()
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10) as r:
        body = r.read()
        assert r.status == 200 and b"neuroncore_utilization_ratio{" in body, r.status
    latencies.append(time.monotonic() - t)
    time.sleep(0.1)
# Finishing the held requests: each is answered, or was closed by the
# server's idle timeout on a slow run (that is the defence working); none
# may hang.
served = closed = hung = 0
for s in held:
    try:
        s.sendall(b"1\r\nConnection: close\r\n\r\n")
    except OSError:
        pass
for s in held:
    try:
        head = s.recv(64)
        if head.startswith(b"HTTP/1.1 200"):
            served += 1
        else:
            closed += 1
    except socket.timeout:
        hung += 1
    except OSError:
        closed += 1
    s.close()
assert hung == 0, f"{hung} held connections got neither an answer nor a close"
assert served >= 900, f"only {served} of 1000 held connections were served ({closed} closed)"
latencies.sort()
print(f"20 scrapes with 1000 idle connections held: median {latencies[10] * 1000:.1f} ms, "
      f"max {latencies[-1] * 1000:.1f} ms; {served} held connections served, {closed} closed")
PY
stop_daemon
echo "PASS: $(cat "$TEST_TMP/out")"
