#!/bin/sh
# Slow readers of large answers cost the daemon no more than their socket
# buffers: 40 clients ask for a range query's matrix (megabytes, more than
# the kernel buffers between them and the daemon), /metrics, /api/v1/latest
# or /api/v1/series, and read a kilobyte every half second, asking again
# when an answer ends or is refused. For SLOW_READER_SECONDS (25; the issue
# measured 90, which `make soak-slow-readers` runs) the daemon's resident
# memory must stay under 64 MiB, and a scrape every second must be
# answered 200.
. "$(dirname "$0")/lib.sh"
need curl
need python3
SECONDS_READING=${SLOW_READER_SECONDS:-25}
# AddressSanitizer's shadow memory and quarantine multiply resident memory:
# the bound is for the daemon as built, and not checked under it.
rss_limit=64
! grep -q AddressSanitizer "$NEUROND_BIN" || rss_limit=0

# About 25 simulated minutes stored at 1 s of 128 NeuronCores (lnc=1: each
# physical core its own): a matrix of a few megabytes.
# A loaded machine stores fewer ticks a second: ask again every 3 s, for up
# to 3 minutes, until the matrix is that large.
start_daemon --backend model:trn2.48xlarge,seed=5,speed=100,lnc=1 --interval 1s
sleep 15
tries=60
while :; do
  status=$(http /api/v1/status) || fail "/api/v1/status got no answer"
  window=$(echo "$status" |
    python3 -c "import json, sys; d = json.load(sys.stdin)['data']; print(f\"start={d['started']}&end={d['last_tick']}\")")
  query="/api/v1/query_range?metric=neuroncore_utilization_ratio&$window&step=1s"
  bytes=$(curl -sS --max-time 60 "$URL$query" | wc -c)
  [ "$bytes" -gt 4000000 ] && break
  tries=$((tries - 1))
  [ "$tries" -gt 0 ] || fail "the matrix is only $bytes bytes after 3 minutes"
  sleep 3
done

python3 - "$PORT" "$DAEMON_PID" "$SECONDS_READING" "$query" "$rss_limit" <<'PY' >"$TEST_TMP/out" 2>&1 || fail "$(cat "$TEST_TMP/out")"
import multiprocessing, socket, sys, time, urllib.request
port, pid, seconds, query, rss_limit = int(sys.argv[1]), int(sys.argv[2]), float(sys.argv[3]), sys.argv[4], float(sys.argv[5])
paths = [query, query, "/metrics", "/api/v1/latest", "/api/v1/series"]
until = time.monotonic() + seconds


def reader(i, answer):
    answers = [0, 0]  # 200, other (503: no place for another query)
    while time.monotonic() < until:
        s = socket.socket()
        s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
        s.connect(("127.0.0.1", port))
        s.sendall(f"GET {paths[i % len(paths)]} HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n".encode())
        s.settimeout(30)
        try:
            head = s.recv(1024)
            answers[0 if head.startswith(b"HTTP/1.1 200") else 1] += 1
            while time.monotonic() < until and s.recv(1024):
                time.sleep(0.5)
        except OSError:
            pass
        s.close()
    answer.send(answers)


def rss_mib():
    for line in open(f"/proc/{pid}/status"):
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024


# Each reader sends its counts through a pipe when it ends: multiprocessing's
# shared values need /dev/shm, which a machine may lack or have full.
readers = []
for i in range(40):
    answer, send_end = multiprocessing.Pipe(duplex=False)
    readers.append((multiprocessing.Process(target=reader, args=(i, send_end)), answer))
    readers[-1][0].start()
    send_end.close()
peak, failed, scrapes, next_scrape = 0, [], 0, 0.0
while time.monotonic() < until:
    peak = max(peak, rss_mib())
    if time.monotonic() >= next_scrape:
        next_scrape = time.monotonic() + 1
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10) as r:
                r.read()
                scrapes += 1
        except OSError as e:
            failed.append(str(e))
    time.sleep(0.25)
answers = [sum(n) for n in zip(*(answer.recv() for _, answer in readers))]
for process, _ in readers:
    process.join()
print(f"40 slow readers for {seconds:.0f} s: peak RSS {peak:.1f} MiB; answers begun: {answers[0]} 200, "
      f"{answers[1]} other; {scrapes} scrapes")
assert not failed, f"scrapes failed: {failed[:5]}"
assert not rss_limit or peak < rss_limit, f"resident memory reached {peak:.1f} MiB"
PY
stop_daemon
echo "PASS: $(cat "$TEST_TMP/out")"
