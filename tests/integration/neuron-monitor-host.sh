#!/bin/sh
# neuron-monitor as it runs on a large host: the daemon reads a sysfs tree
# of a trn1n.32xlarge (tests/tools/model-sysfs) merged with a fake monitor
# (tests/fakes/fake-neuron-monitor-host.py) printing documents of over
# 400 KB: 32 runtimes listing all 32 cores, workers that share a tag,
# groups in error, untagged processes. The monitor's period stands for
# neuron-monitor's 5 s, and driven ticks stand for --interval 1s (five ticks
# a document), 5s (one) and 15s (one every three documents). At every tick:
# promtool and python3-prometheus-client's strict OpenMetrics parser accept
# the page; each runtime's series are there once the first document was
# taken, exactly those its document gives (the series of a tag stand for
# all its processes), none dropped while it is listed; the counters add up
# every process's executions; and the monitor is never restarted.
. "$(dirname "$0")/lib.sh"
need curl
need promtool
: "${MODEL_SYSFS:?run through make check}"
PYTHON=/usr/bin/python3
[ -x "$PYTHON" ] && "$PYTHON" -c 'import prometheus_client' 2>/dev/null || skip "python3-prometheus-client is not installed"

fake=$top_srcdir/tests/fakes/fake-neuron-monitor-host.py
"$MODEL_SYSFS" model:trn1n.32xlarge "$TEST_TMP/tree" 100 1 >/dev/null || fail "model-sysfs could not write the tree"
"$PYTHON" "$fake" --once >"$TEST_TMP/document"
size=$(wc -c <"$TEST_TMP/document")
[ "$size" -gt 400000 ] || fail "the document is $size bytes, not over 400 KB"

# phase INTERVAL DOCS_PER_TICK TICKS: a daemon at --interval INTERVAL,
# TICKS driven ticks, each after DOCS_PER_TICK new documents (1/5: one
# every five ticks).
phase() {
  name=n$(echo "$1" | tr -dc 0-9)
  dir=$TEST_TMP/$name
  mkdir "$dir"
  # The spec is at most 255 bytes: the command goes in by a short name.
  printf '#!/bin/sh\nexec "%s" "%s" 0.3 "%s/count" "%s/starts"\n' "$PYTHON" "$fake" "$dir" "$dir" >"$dir/monitor"
  start_daemon "$name" --backend "sysfs:$TEST_TMP/tree,monitor=sh $dir/monitor" --interval "$1" --enable-admin \
    --log-level debug
  hold_ticks
  "$PYTHON" - "$URL" "$dir/count" "$TEST_TMP/document" "$2" "$3" <<'PY' || fail "--interval $1 (above)"
import json, os, subprocess, sys, time, urllib.request
from fractions import Fraction
from prometheus_client.openmetrics.parser import text_string_to_metric_families as om_parse
from prometheus_client.parser import text_string_to_metric_families as text_parse

url, count, document, docs_per_tick, ticks = sys.argv[1], sys.argv[2], sys.argv[3], Fraction(sys.argv[4]), int(sys.argv[5])
OM = "application/openmetrics-text;version=1.0.0"
KINDS = ("constants", "model_code", "model_shared_scratchpad", "runtime_memory", "tensors")


def expected(doc):
    """The runtime series the document gives: one set a tag, whatever its
    processes; a figure a process lacks (its group in error) is absent."""
    tags = {}
    for rt in doc["neuron_runtime_data"]:
        report = rt["report"]
        ok = {g: isinstance(report.get(g), dict) and not report[g].get("error") for g in
              ("neuroncore_counters", "execution_stats", "memory_used", "neuron_runtime_vcpu_usage")}
        util = set(report["neuroncore_counters"]["neuroncores_in_use"]) if ok["neuroncore_counters"] else set()
        mem = set(report["memory_used"]["neuron_runtime_used_bytes"]["usage_breakdown"]["neuroncore_memory_usage"]) \
            if ok["memory_used"] else set()
        latency = ok["execution_stats"] and report["execution_stats"]["latency_stats"]["total_latency"] is not None
        tags.setdefault(rt["neuron_runtime_tag"] or str(rt["pid"]), []).append(
            dict(pid=rt["pid"], ok=ok, util=util, mem=mem, latency=latency, cores=util | mem))
    want = set()

    def add(name, **labels):
        want.add((name, frozenset(labels.items())))

    for tag, procs in tags.items():
        for p in procs:
            add("neuron_runtime_info", runtime_tag=tag, pid=str(p["pid"]))
        for s in ("completed", "completed_with_err", "completed_with_num_err", "timed_out", "incorrect_input",
                  "failed_to_queue"):
            add("execution_status_total", runtime_tag=tag, status_type=s)
        for e in ("generic", "numerical", "transient", "model", "runtime", "hardware"):
            add("execution_errors_total", runtime_tag=tag, error_type=e)
        if any(p["latency"] for p in procs):
            for q in ("p0", "p1", "p25", "p50", "p75", "p99", "p100"):
                add("execution_latency_seconds", runtime_tag=tag, percentile=q)
                add("execution_device_latency_seconds", runtime_tag=tag, percentile=q)
        if all(p["ok"]["memory_used"] for p in procs):
            for loc in ("host", "neuron_device"):
                add("neuron_runtime_memory_used_bytes", runtime_tag=tag, memory_location=loc)
            for cat in ("application_memory", "constants", "dma_buffers", "tensors"):
                add("neuron_runtime_host_memory_used_bytes", runtime_tag=tag, category=cat)
        if all(p["ok"]["neuron_runtime_vcpu_usage"] for p in procs):
            for u in ("user", "system"):
                add("neuron_runtime_vcpu_usage_ratio", runtime_tag=tag, usage_type=u)
        for core in set().union(*(p["cores"] for p in procs)):
            listing = [p for p in procs if core in p["cores"]]
            place = dict(neuron_device=str(int(core) // 2), neuroncore=core, runtime_tag=tag)
            add("neuroncore_floating_point_operations_total", **place)
            if all(core in p["util"] for p in listing):
                add("neuroncore_utilization_ratio", **place)
            if all(core in p["mem"] for p in listing):
                for k in KINDS:
                    add("neuroncore_memory_usage_" + k, **place)
    executing = {tag: sum(10 for p in procs if p["ok"]["execution_stats"]) for tag, procs in tags.items()}
    return want, executing


def documents():
    try:
        return int(open(count).read())
    except (FileNotFoundError, ValueError):
        return 0


def wait_documents(n):
    end = time.monotonic() + 60
    while documents() < n:
        if time.monotonic() > end:
            sys.exit(f"the monitor printed {documents()} documents, not {n}, in 60 s")
        time.sleep(0.01)


def get(accept=None):
    req = urllib.request.Request(url + "/metrics", headers={"Accept": accept} if accept else {})
    with urllib.request.urlopen(req, timeout=60) as r:
        return r.read().decode()


want, executing = expected(json.load(open(document)))
problems = []
started = None
completed = {}
seen = 0
for t in range(ticks):
    # The documents that come before this tick, at this interval.
    if docs_per_tick >= 1:
        wait_documents(seen + int(docs_per_tick))
    elif t % int(1 / docs_per_tick) == 0:
        wait_documents(seen + 1)
    seen = documents()
    with urllib.request.urlopen(urllib.request.Request(url + "/api/v1/admin/ticks?run=1", method="POST"),
                                timeout=300) as r:
        tick = json.load(r)["tick"]
    text, om = get(), get(OM)
    lint = subprocess.run(["promtool", "check", "metrics"], input=text, capture_output=True, text=True)
    if lint.returncode != 0 or lint.stdout or lint.stderr:
        problems.append(f"tick {tick}: promtool: {lint.stdout}{lint.stderr}")
    list(text_parse(text))
    try:
        families = list(om_parse(om))
    except ValueError as e:
        problems.append(f"tick {tick}: the OpenMetrics parser refused the page: {e}")
        continue
    got = {(s.name, frozenset(s.labels.items())) for f in families for s in f.samples if "runtime_tag" in s.labels}
    if not got and started is None:
        continue  # the first document is not taken yet
    started = started or tick
    if got != want:
        problems.append(f"tick {tick}: {len(want - got)} runtime series missing (first {sorted(want - got)[:3]}), "
                        f"{len(got - want)} not from the document (first {sorted(got - want)[:3]})")
    for f in families:
        for s in f.samples:
            if s.name == "execution_status_total" and s.labels["status_type"] == "completed":
                tag, v = s.labels["runtime_tag"], s.value
                step = executing[tag]
                if v < completed.get(tag, 0) or (step and v % step) or (not step and v):
                    problems.append(f"tick {tick}: {tag}'s completed executions {v} after {completed.get(tag)} "
                                    f"(its processes count {step} a document)")
                completed[tag] = v
if started is None or tick - started < ticks - 3:
    problems.append(f"the runtimes appeared at tick {started}, the last tick was {tick}")
if completed.get("serve", 0) < 160:
    problems.append(f"serve's workers completed {completed.get('serve')} executions")
for p in problems[:20]:
    print("FAIL ", p)
print(f"{ticks} ticks from tick {started}, {len(want)} runtime series, {documents()} documents, "
      f"completed {completed}")
sys.exit(1 if problems else 0)
PY
  starts=$(wc -l <"$dir/starts")
  [ "$starts" -eq 1 ] || fail "--interval $1: the monitor was started $starts times"
  ! grep -E 'neuron-monitor (exited|was killed)|no output for' "$DAEMON_LOG" ||
    fail "--interval $1: the monitor ended"
  ! grep -q 'lines skipped' "$DAEMON_LOG" || fail "--interval $1: documents were skipped"
  stop_daemon "$name"
}

phase 1s 1/5 15
phase 5s 1 8
phase 15s 3 6
echo "neuron-monitor-host: ok"
