#!/bin/sh
# A wrong-password flood denies no one else: for 30 s, eight processes on
# 127.0.0.2 send basic credentials with wrong passwords as fast as they
# can, while a scraper on 127.0.0.1 (verified before the flood) scrapes
# every half second and a second client on 127.0.0.3, another user, first
# asks in the middle of the flood, so its password must be hashed then. Every scrape of both must be answered 200 within
# Prometheus's 10 s timeout; the flood gets 401 (or 503 when the queue of
# password checks is full), never 200.
. "$(dirname "$0")/lib.sh"
need curl
need python3

make_users_file "$TEST_TMP/users" prometheus scrape-pw 12
make_users_file "$TEST_TMP/users2" grafana graph-pw 12
cat "$TEST_TMP/users2" >>"$TEST_TMP/users"
printf '[neurond]\nbasic_auth_users = %s\n' "$TEST_TMP/users" >"$TEST_TMP/auth.conf"
start_daemon --backend model:trn1.2xlarge --config "$TEST_TMP/auth.conf"
[ "$(http_status /metrics -u prometheus:scrape-pw)" = 200 ] || fail "the right password before the flood"

python3 - "$PORT" <<'PY' >"$TEST_TMP/flood.out" 2>&1 || fail "$(cat "$TEST_TMP/flood.out")"
import base64, http.client, multiprocessing, os, socket, struct, sys, time

port = int(sys.argv[1])
SECONDS = 30


def ask(source, credentials, timeout=10):
    """The status of GET /metrics from source with user:password; 0 for none."""
    token = base64.b64encode(credentials.encode()).decode()
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout, source_address=(source, 0))
    try:
        c.connect()
        # Closed with a reset, not left in TIME_WAIT: the flood opens more
        # connections in 30 s than there are ephemeral ports, and would take
        # the ports that the tests running beside it need.
        c.sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        c.request("GET", "/metrics", headers={"Authorization": f"Basic {token}", "Accept-Encoding": "gzip"})
        r = c.getresponse()
        r.read()
        return r.status
    except OSError:
        return 0
    finally:
        c.close()


def flood(until, answer):
    counts = [0, 0, 0]  # 401, 503, anything else
    while time.monotonic() < until:
        status = ask("127.0.0.2", "prometheus:" + os.urandom(8).hex(), timeout=10)
        counts[0 if status == 401 else 1 if status == 503 else 2] += 1
    answer.send(counts)


def scrape(source, credentials, start, until, answer):
    results = []
    time.sleep(max(0.0, start - time.monotonic()))
    while time.monotonic() < until:
        tick = time.monotonic()
        results.append((ask(source, credentials), time.monotonic() - tick))
        time.sleep(max(0.0, 0.5 - (time.monotonic() - tick)))
    answer.send(results)


def start_process(target, *args):
    """Starts target(*args, answer) in a process; returns the process and the
    pipe end its answer comes from. Not multiprocessing's shared values: they
    need /dev/shm, which a machine may lack or have full."""
    answer, send_end = multiprocessing.Pipe(duplex=False)
    process = multiprocessing.Process(target=target, args=(*args, send_end))
    process.start()
    send_end.close()
    return process, answer


now = time.monotonic()
until = now + SECONDS
flooders = [start_process(flood, until) for _ in range(8)]
scrapers = [
    start_process(scrape, "127.0.0.1", "prometheus:scrape-pw", now + 1, until),
    start_process(scrape, "127.0.0.3", "grafana:graph-pw", now + SECONDS / 2, until),
]
counts = [sum(n) for n in zip(*(answer.recv() for _, answer in flooders))]
first, second = (answer.recv() for _, answer in scrapers)
for process, _ in flooders + scrapers:
    process.join()
problems = []
for name, results in (("verified before the flood", first), ("first asking during the flood", second)):
    bad = [r for r in results if r[0] != 200]
    slowest = max((r[1] for r in results), default=0)
    print(f"scraper {name}: {len(results)} scrapes, {len(bad)} failed, slowest {slowest * 1000:.0f} ms")
    if bad or len(results) < 10:
        problems.append(f"scraper {name}: {bad[:5]} of {len(results)}")
print(f"flood: {counts[0]} answered 401, {counts[1]} 503, {counts[2]} other")
if counts[2] or counts[0] < 100:
    problems.append(f"the flood was not refused as expected: {counts}")
for p in problems:
    print("FAIL:", p)
sys.exit(1 if problems else 0)
PY
kill -0 "$DAEMON_PID" 2>/dev/null || fail "the daemon died in the flood"
[ "$(http_status /metrics -u prometheus:scrape-pw)" = 200 ] || fail "the right password after the flood"
stop_daemon
echo "PASS: $(tr '\n' ';' <"$TEST_TMP/flood.out")"
