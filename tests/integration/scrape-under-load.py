"""Scrapes under hostile load, for tests/integration/http-load.sh and
bench/http-load.sh. The daemon runs the largest model fast (a tick per two
simulated minutes at speed=43200); once it has stored seven simulated
days, QUERIES clients run 7-day range queries over every core back to back
and IDLE connections are held open (opened again when the server closes
them), while /metrics is scraped every half second the way Prometheus does
(gzip, a 10 s timeout) and /healthz every second; the daemon's resident
memory is sampled meanwhile. Prints one JSON object: every scrape's and
health check's status and latency, the queries' statuses, and the peak
resident memory.

usage: scrape-under-load.py PORT PID SECONDS QUERIES IDLE
"""
import json
import multiprocessing
import select
import socket
import sys
import threading
import time
import urllib.error
import urllib.request

port, pid, seconds, n_queries, n_idle = sys.argv[1:6]
port, pid, seconds, n_queries, n_idle = int(port), int(pid), float(seconds), int(n_queries), int(n_idle)
base = f"http://127.0.0.1:{port}"


def status():
    with urllib.request.urlopen(base + "/api/v1/status", timeout=10) as r:
        return json.load(r)["data"]


# Seven simulated days stored: about 15 s.
started = status()["started"]
give_up = time.monotonic() + 90
while status()["last_tick"] - started < 7 * 86400:
    if time.monotonic() > give_up:
        sys.exit("seven simulated days took more than 90 s")
    time.sleep(0.2)
end = status()["last_tick"]
query_path = f"/api/v1/query_range?metric=neuroncore_utilization_ratio&start={end - 7 * 86400}&end={end}"
with urllib.request.urlopen(base + query_path, timeout=60) as r:
    if r.status != 200:
        sys.exit(f"the 7-day query answered {r.status}")

stop_at = time.monotonic() + seconds
lock = threading.Lock()
result = {"scrapes": [], "healthz": [], "rss_mib_max": 0}
# The queries and the idle connections run in processes of their own, so
# that the scrapes' timing does not include waits for Python's lock. Each
# sends its counts back through a pipe when it ends: multiprocessing's
# shared values need POSIX semaphores in /dev/shm, which a machine may lack
# or have full.


def get(path, headers=None, timeout=10):
    """(status, seconds); status 0 when no answer came in time."""
    start = time.monotonic()
    request = urllib.request.Request(base + path, headers=headers or {})
    try:
        with urllib.request.urlopen(request, timeout=timeout) as r:
            r.read()
            status = r.status
    except urllib.error.HTTPError as e:
        status = e.code
    except OSError:
        status = 0
    return status, time.monotonic() - start


def querier(answer):
    counts = {"200": 0, "503": 0, "other": 0}  # 503: no place within the wait
    while time.monotonic() < stop_at:
        status, _ = get(query_path, {"Accept-Encoding": "gzip"}, timeout=60)
        counts[str(status) if status in (200, 503) else "other"] += 1
        if status != 200:
            time.sleep(0.5)
    answer.send(counts)


def idler(answer):
    held, reopened = [], 0
    while time.monotonic() < stop_at:
        # Connections the server closed (its header timeout) are opened again.
        readable = select.select(held, [], [], 0)[0] if held else []
        for s in readable:
            held.remove(s)
            s.close()
            reopened += 1
        while len(held) < n_idle:
            try:
                held.append(socket.create_connection(("127.0.0.1", port), timeout=5))
            except OSError:
                break
        time.sleep(0.5)
    for s in held:
        s.close()
    answer.send(reopened)


def rss_mib():
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return 0


def sampler():
    while time.monotonic() < stop_at:
        rss = rss_mib()
        with lock:
            result["rss_mib_max"] = max(result["rss_mib_max"], rss)
        time.sleep(0.25)


def start_process(target):
    """Starts target(answer) in a process; returns the process and the pipe
    end its answer comes from (EOFError if it ends without one)."""
    answer, send_end = multiprocessing.Pipe(duplex=False)
    process = multiprocessing.Process(target=target, args=(send_end,))
    process.start()
    send_end.close()
    return process, answer


queriers = [start_process(querier) for _ in range(n_queries)]
idle_process = start_process(idler)
sampler_thread = threading.Thread(target=sampler)
sampler_thread.start()
time.sleep(1)  # the load first
next_health = 0.0
while time.monotonic() < stop_at:
    tick = time.monotonic()
    status, took = get("/metrics", {"Accept": "application/openmetrics-text;version=1.0.0", "Accept-Encoding": "gzip"})
    result["scrapes"].append([status, took])
    if tick >= next_health:
        result["healthz"].append(list(get("/healthz")))
        next_health = tick + 1
    time.sleep(max(0.0, 0.5 - (time.monotonic() - tick)))
result["queries"] = {"200": 0, "503": 0, "other": 0}
for _, answer in queriers:
    for status, n in answer.recv().items():
        result["queries"][status] += n
result["idle_reopened"] = idle_process[1].recv()
for process, _ in queriers + [idle_process]:
    process.join()
sampler_thread.join()
print(json.dumps(result))
