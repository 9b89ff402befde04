#!/bin/sh
# The store survives whatever the neuron-monitor backend makes of a hostile
# monitor: documents that list two runtimes under one tag and tags that are
# equal once cleaned of bytes the parser replaces (one runtime each: no
# series is listed twice), runtimes coming and going under new tags past
# the series limit, and a flood of junk lines. The test writes each
# document into the monitor's FIFO and runs a tick after each (more, until
# the document's runtimes are listed, where it checks them). Through it
# all every tick of the driver's series is stored, each bad list is
# reported (/healthz, neurond_storage_series_unstored, the log), the
# database never holds more series than max_series, and the daemon
# restarts on its database at once.
. "$(dirname "$0")/lib.sh"
need curl python3

fifo=$TEST_TMP/monitor
mkfifo "$fifo"
ln -s "$top_srcdir/tests/data/trn1" "$TEST_TMP/sysfs"
limit=3000
printf '[neurond]\nmax_series = %s\n' "$limit" >"$TEST_TMP/neurond.conf"
start_daemon --backend "sysfs:$TEST_TMP/sysfs,monitor-fifo=$fifo" --config "$TEST_TMP/neurond.conf" --enable-admin
hold_ticks

python3 - "$URL" "$fifo" "$limit" "$DAEMON_LOG" <<'PY' || fail "the hostile monitor (above)"
import json, os, sys, threading, urllib.request

url, fifo_path, limit, log = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
problems = []


def check(ok, what):
    print(("ok    " if ok else "FAIL  ") + what)
    if not ok:
        problems.append(what)


def get(path):
    with urllib.request.urlopen(url + path, timeout=60) as r:
        return r.status, r.read().decode()


def healthz():
    try:
        return json.loads(get("/healthz")[1])
    except urllib.error.HTTPError as e:
        return json.loads(e.read().decode())


stamps = []


def tick(n=1):
    """Runs n ticks; the last one's number. Each tick's stamp goes to stamps."""
    req = urllib.request.Request(f"{url}/api/v1/admin/ticks?run={n}", method="POST")
    with urllib.request.urlopen(req, timeout=300) as r:
        answer = json.load(r)
    stamps.append(float(answer["data"]["timestamp"]))
    return answer["tick"]


def metric(name):
    for line in get("/metrics")[1].splitlines():
        if line.startswith(name + " "):
            return float(line.split()[1])
    return None


def runtime(pid, tag, cores):
    """One runtime as neuron-monitor reports it (its user guide's schema)."""
    return {"pid": pid, "neuron_runtime_tag": tag, "error": "", "report": {
        "neuroncore_counters": {"period": 1.0, "error": "", "neuroncores_in_use": {
            str(c): {"neuroncore_utilization": 50.0, "flops": 1000} for c in cores}},
        "execution_stats": {"period": 1.0, "error": "",
                            "error_summary": {k: 0 for k in ("generic", "numerical", "transient", "model",
                                                             "runtime", "hardware")},
                            "execution_summary": {k: 1 for k in ("completed", "completed_with_err",
                                                                 "completed_with_num_err", "timed_out",
                                                                 "incorrect_input", "failed_to_queue")},
                            "latency_stats": {"total_latency": None, "device_latency": None}},
        "memory_used": {"period": 1.0, "error": "", "neuron_runtime_used_bytes": {
            "host": 1024, "neuron_device": 2048, "usage_breakdown": {"host": {}, "neuroncore_memory_usage": {}}}},
        "neuron_runtime_vcpu_usage": {"period": 1.0, "error": "",
                                      "vcpu_usage": {"user": 10.0, "nice": 0, "system": 1.0}}}}


fifo = open(fifo_path, "w")


def send(runtimes):
    """One document, then one tick."""
    fifo.write(json.dumps({"neuron_runtime_data": runtimes}) + "\n")
    fifo.flush()
    return tick()


def listed():
    """The pids of the runtimes the daemon lists, with their tags."""
    data = json.loads(get("/api/v1/runtimes")[1])["data"]["runtimes"]
    return sorted((r["pid"], r["runtime_tag"]) for r in data)


def send_until_listed(runtimes, tag):
    """Documents, a tick after each, until the daemon lists their runtimes
    (the monitor is read as it writes, the tick takes the latest document)."""
    want = sorted((r["pid"], tag) for r in runtimes)
    for _ in range(100):
        last = send(runtimes)
        if listed() == want:
            return last
    check(False, f"{want} listed after 100 documents: {listed()}")
    return last


def one_runtime(tag, pids):
    """The tag's series are there once each; each process has its info."""
    page = get("/metrics")[1]
    lines = [l for l in page.splitlines() if f'runtime_tag="{tag}"' in l and not l.startswith("#")]
    series = [l.rsplit(" ", 1)[0] for l in lines]
    check(len(series) == len(set(series)), f"tag {tag}: every series once ({len(series)} lines)")
    for pid in pids:
        check(f'neuron_runtime_info{{runtime_tag="{tag}",pid="{pid}"}} 1' in page, f"tag {tag}: process {pid} listed")
    done = [float(l.split()[1]) for l in lines if l.startswith("execution_status_total{") and 'status_type="completed"' in l]
    check(len(done) == 1 and done[0] > 0 and done[0] % len(pids) == 0,
          f"tag {tag}: one execution counter adding up its {len(pids)} processes' counts: {done}")
    h = healthz()
    check(h["status"] == "ok", f"tag {tag}: /healthz {h}")
    check(metric('neurond_storage_series_unstored{reason="duplicate"}') == 0, f"tag {tag}: no series left out")


first = tick()
start_tick = first

# Two runtimes under one tag, on cores 0-1 and 2-3: one runtime of two
# processes, every series listed once and stored.
last = send_until_listed([runtime(100, "job", [0, 1]), runtime(101, "job", [2, 3])], "job")
one_runtime("job", [100, 101])

# Tags that differ only in bytes the parser replaces with '?': one tag.
last = send_until_listed([runtime(200, "t\u00e9", [0, 1]), runtime(201, "t\u00e8", [2, 3])], "t??")
one_runtime("t??", [200, 201])

# One ordinary runtime.
last = send_until_listed([runtime(300, "solo", [0, 1])], "solo")
one_runtime("solo", [300])

# Runtimes come and go under new tags, 16 a document, past the limit:
# 150 documents, or HOSTILE_MONITOR_DOCS (6250 is 100,000 tag changes).
changes = 0
for d in range(int(os.environ.get("HOSTILE_MONITOR_DOCS", "150"))):
    last = send([runtime(1000 + 16 * d + k, f"churn-{d}-{k}", [2 * (k % 16), 2 * (k % 16) + 1])
                 for k in range(16)])
    changes += 16
refused = metric("neurond_storage_series_refused_total")
check(refused is not None and refused > 0, f"{changes} tag changes: {refused} new series refused at max_series")
series = json.loads(get("/api/v1/series")[1])["data"]
check(len(series) <= limit, f"{len(series)} series stored, limit {limit}")

# A flood of junk lines, written while the daemon ticks; then a document.
flood = threading.Thread(target=lambda: (fifo.write("x\n" * 2000000), fifo.flush()))
flood.start()
for _ in range(1000):
    if not flood.is_alive():
        break
    last = tick()
flood.join(60)
check(not flood.is_alive(), "the flood was read")
# A monitor writes a document every period: the first ones may still come
# in the second of the flood's last lines, past its parsing, and be skipped
# with them.
for _ in range(3000):
    last = send([runtime(400, "after", [0, 1])])
    info = get("/api/v1/latest?metric=neuron_runtime_info")[1]
    if '"runtime_tag":"after"' in info:
        break
check('"runtime_tag":"after"' in info, "a document after the flood is taken")
check("more lines than it parses" in open(log).read(), "the flood is logged")

# Every tick of the driver's series is stored, one point per tick.
ticks = last - start_tick + 1
body = json.loads(get("/api/v1/query_range?metric=neuron_device_memory_used_bytes&neuron_device=0"
                      f"&start={stamps[0]:.3f}&end={stamps[-1]:.3f}&step=1s")[1])
points = len(body["data"]["result"][0]["values"]) if body["data"]["result"] else 0
check(points == ticks, f"{points} points of device 0's memory for the {ticks} ticks run")
print(f"{ticks} ticks, {changes} tag changes, {len(series)} series stored")
sys.exit(1 if problems else 0)
PY
! grep -q 'listed more than once (first' "$DAEMON_LOG" || fail "a series was listed twice: $(grep 'listed more than once (first' "$DAEMON_LOG")"
stop_daemon

# A restart on the same database: at once, serving.
start_daemon --backend "sysfs:$TEST_TMP/sysfs,monitor-fifo=$fifo" --config "$TEST_TMP/neurond.conf"
[ "$(http_status /healthz)" = 200 ] || fail "/healthz after the restart: $(http /healthz)"
stop_daemon
echo "store-hostile-monitor: ok"
