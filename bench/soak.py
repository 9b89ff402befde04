"""Soak benchmark driver (make soak): runs neurond on the largest device
model, scrapes /metrics every second from several clients, runs
dashboard-style range queries, sends SIGHUP every minute, and prints
resident memory, open file descriptors and scrape latency once per report
period, then the growth of each from the end of the first period (the
warm-up) to the end, and the range of resident memory from the warm-up on.

Usage: soak.py NEUROND WEB_ROOT SECONDS [REPORT_SECONDS]"""
import os
import re
import signal
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request

neurond, web_root, seconds = sys.argv[1], sys.argv[2], int(sys.argv[3])
report_s = int(sys.argv[4]) if len(sys.argv) > 4 else 60
SCRAPERS, QUERIERS = 4, 2
HUP_S = min(60, report_s)

tmp = tempfile.mkdtemp(prefix="neurond-soak.")
log = open(f"{tmp}/daemon.log", "w+")
args = [neurond, "--listen", "127.0.0.1:0", "--db", f"{tmp}/soak.db", "--web-root", web_root,
        "--backend", "model:trn3-gen2-ultraserver,scenario=mixed", "--interval", "1s"]
if os.geteuid() == 0:
    args.append("--allow-root")
daemon = subprocess.Popen(args, stdout=log, stderr=log)
port = None
for _ in range(200):
    log.seek(0)
    m = re.search(r"listening on port (\d+)", log.read())
    if m:
        port = int(m.group(1))
        break
    if daemon.poll() is not None:
        sys.exit("neurond exited at start-up")
    time.sleep(0.05)
if not port:
    sys.exit("neurond did not log its port")
base = f"http://127.0.0.1:{port}"

lock = threading.Lock()
latencies, errors, stop = [], [0], threading.Event()


def fetch(path):
    with urllib.request.urlopen(base + path, timeout=10) as r:
        r.read()
        return r.status


def scraper():
    while not stop.is_set():
        t0 = time.monotonic()
        try:
            ok = fetch("/metrics") == 200
        except OSError:
            ok = False
        dt = time.monotonic() - t0
        with lock:
            if ok:
                latencies.append(dt)
            else:
                errors[0] += 1
        stop.wait(max(0.0, 1.0 - dt))


QUERIES = ["/api/v1/query_range?metric=neuroncore_utilization_ratio&neuron_device=0&start={s}&end={e}&step=5s",
           "/api/v1/query_range?metric=neuron_device_memory_used_bytes&start={s}&end={e}&step=15s",
           "/api/v1/latest?metric=neuron_device_power_utilization_ratio"]


def querier(k):
    i = k
    while not stop.is_set():
        now = int(time.time())
        try:
            ok = fetch(QUERIES[i % len(QUERIES)].format(s=now - 900, e=now)) == 200
        except OSError:
            ok = False
        if not ok:
            with lock:
                errors[0] += 1
        i += 1
        stop.wait(2)


def proc_figures(pid):
    with open(f"/proc/{pid}/status") as f:
        rss_kib = int(re.search(r"VmRSS:\s+(\d+)", f.read()).group(1))
    return rss_kib / 1024, len(os.listdir(f"/proc/{pid}/fd"))


def pct(values, p):
    if not values:
        return float("nan")
    v = sorted(values)
    return v[min(len(v) - 1, int(p / 100 * len(v)))]


threads = [threading.Thread(target=scraper) for _ in range(SCRAPERS)]
threads += [threading.Thread(target=querier, args=(k,)) for k in range(QUERIERS)]
for t in threads:
    t.start()

print(f"soak: {seconds} s, trn3-gen2-ultraserver, {SCRAPERS} scrapers at 1/s, {QUERIERS} query clients, "
      f"SIGHUP every {HUP_S} s; report every {report_s} s")
print(f"{'t_s':>6} {'rss_mib':>8} {'fds':>5} {'scrapes':>8} {'p50_ms':>7} {'p99_ms':>7} {'errors':>6}")
rows, start, next_hup = [], time.monotonic(), HUP_S
while True:
    elapsed = time.monotonic() - start
    wake = min(report_s * (len(rows) + 1), next_hup, seconds)
    time.sleep(max(0.0, wake - elapsed))
    elapsed = time.monotonic() - start
    if daemon.poll() is not None:
        stop.set()
        sys.exit(f"neurond exited with status {daemon.returncode} at {elapsed:.0f} s")
    if elapsed >= next_hup - 0.01 and elapsed < seconds:
        daemon.send_signal(signal.SIGHUP)
        next_hup += HUP_S
    if elapsed >= report_s * (len(rows) + 1) - 0.01 or elapsed >= seconds - 0.01:
        with lock:
            lat, latencies[:] = latencies[:], []
            err, errors[0] = errors[0], 0
        rss, fds = proc_figures(daemon.pid)
        row = (elapsed, rss, fds, len(lat), pct(lat, 50) * 1000, pct(lat, 99) * 1000, err)
        rows.append(row)
        print(f"{row[0]:6.0f} {row[1]:8.1f} {row[2]:5d} {row[3]:8d} {row[4]:7.1f} {row[5]:7.1f} {row[6]:6d}", flush=True)
    if elapsed >= seconds - 0.01:
        break

stop.set()
for t in threads:
    t.join()
daemon.send_signal(signal.SIGTERM)
status = daemon.wait(timeout=30)
warm, last = rows[0], rows[-1]
# The warm-up is the first report period: the growth is the last row minus
# the first; the range shows a rise that fell back by the end as well.
rss_after = [r[1] for r in rows]
print(f"growth after the warm-up (the first {report_s} s): rss {last[1] - warm[1]:+.1f} MiB "
      f"(range {min(rss_after):.1f}-{max(rss_after):.1f}), fds {last[2] - warm[2]:+d}, "
      f"p99 {last[5] - warm[5]:+.1f} ms; worst p99 {max(r[5] for r in rows):.1f} ms; "
      f"errors {sum(r[6] for r in rows)}; exit status {status}")
subprocess.run(["rm", "-rf", tmp])
sys.exit(0 if status == 0 and sum(r[6] for r in rows) == 0 else 1)
