#!/bin/sh
# neuroncore_busy_seconds_total against neuroncore_utilization_ratio through
# the daemon's interfaces: the model at speed=15 with a 1 s interval makes
# 180 ticks in about 12 s; the REST API's rate=1 of the counter must equal,
# tick by tick and averaged over windows of 10 s, 15 s, 45 s and the whole
# run, the gauge's stored samples over the same ticks. /metrics must serve
# the counter beside the gauge for every core, monotonic between scrapes.
. "$(dirname "$0")/lib.sh"
need curl python3

start_daemon --backend model:trn1.32xlarge,scenario=inference,seed=11,speed=15 --interval 1s
http /metrics --fail >"$TEST_TMP/metrics1"
wait_until 60 tick_at_least 200 || fail "the daemon did not reach 200 ticks"
http /metrics --fail >"$TEST_TMP/metrics2"

python3 - "$URL" "$TEST_TMP/metrics1" "$TEST_TMP/metrics2" <<'PY' || fail "busy time and utilization disagree (above)"
import json, re, sys, urllib.request

url, metrics1, metrics2 = sys.argv[1:]
# The gauge is stored to 24 significant bits, the counter to the
# microsecond: a rate over 1 s is exact to 1e-6.
TOL = 2e-6


def scrape(path):
    out = {}
    for line in open(path):
        m = re.match(r'^(neuroncore_(?:utilization_ratio|busy_seconds_total))\{([^}]*)\} (\S+)$', line)
        if m:
            core = re.search(r'neuroncore="(\d+)"', m.group(2)).group(1)
            out[(m.group(1), core)] = float(m.group(3))
    return out


def get(path):
    with urllib.request.urlopen(url + path, timeout=30) as r:
        body = json.load(r)
    assert body["status"] == "success", body
    return body["data"]


def matrix(query):
    """{(core, runtime_tag): {tick ms: value}} of a query_range."""
    out = {}
    for s in get("/api/v1/query_range?" + query)["result"]:
        key = (s["metric"]["neuroncore"], s["metric"].get("runtime_tag", ""))
        out[key] = {round(float(t) * 1000): float(v) for t, v in s["values"]}
    return out


bad = []
one, two = scrape(metrics1), scrape(metrics2)
cores = sorted({c for (name, c) in two if name == "neuroncore_utilization_ratio"}, key=int)
if len(cores) != 32:
    bad.append(f"/metrics has {len(cores)} cores of the gauge, expected 32")
for c in cores:
    busy = two.get(("neuroncore_busy_seconds_total", c))
    if busy is None:
        bad.append(f"core {c}: no neuroncore_busy_seconds_total on /metrics")
    elif busy < one.get(("neuroncore_busy_seconds_total", c), 0):
        bad.append(f"core {c}: the counter went down between scrapes")

# The run's ticks: simulated time starts at the wall clock and runs ahead.
latest = get("/api/v1/latest?metric=neuroncore_utilization_ratio&neuroncore=0")
end_s = int(float(latest["result"][0]["value"][0]))
window = f"start={end_s - 400}&end={end_s - 5}"
gauge = matrix(f"metric=neuroncore_utilization_ratio&{window}&step=1s")
rate = matrix(f"metric=neuroncore_busy_seconds_total&rate=1&{window}&step=1s")
if len(gauge) < 32 or len(rate) < 32 or not set(rate) <= set(gauge):
    bad.append(f"series differ: gauge {sorted(gauge)}, rate {sorted(rate)}")

# Tick by tick: the counter's rate over an interval is the gauge at its end.
compared = 0
for key, points in rate.items():
    for t, r in points.items():
        g = gauge.get(key, {}).get(t)
        if g is None:
            bad.append(f"core {key}: a rate at {t} without a gauge sample")
        elif abs(r - g) > TOL:
            bad.append(f"core {key} at {t}: rate {r!r}, gauge {g!r}")
        compared += 1
if compared < 32 * 100:  # fewer when a slow daemon skips ticks
    bad.append(f"only {compared} rates to compare")

# Over windows: the API's average of the rate in each step equals the mean
# of the gauge over the ticks that have a rate in it (the first tick of
# the query has none: it has no previous sample). No step is a whole number
# of minutes: such steps read the 1 min rollups once an hour has ended, and
# a rollup's rate lands in the bucket after its minute.
buckets_compared = 0
for step in (10, 15, 45, 400):
    avg = matrix(f"metric=neuroncore_busy_seconds_total&rate=1&agg=avg&{window}&step={step}s")
    for key, buckets in avg.items():
        for b, v in buckets.items():
            ticks = [g for t, g in gauge[key].items() if b <= t < b + step * 1000 and t in rate[key]]
            if not ticks:
                bad.append(f"step {step} s, core {key}: a bucket at {b} without ticks")
                continue
            mean = sum(ticks) / len(ticks)
            buckets_compared += 1
            if abs(v - mean) > TOL:
                bad.append(f"step {step} s, core {key}, bucket {b}: rate {v!r}, gauge mean {mean!r}")

if buckets_compared < 32 * 20:
    bad.append(f"only {buckets_compared} windows to compare")

# The run's busy time is the sum of its gauge samples times their
# intervals (a late tick covers two).
for key in gauge:
    ticks = sorted(gauge[key])
    value = matrix(f"metric=neuroncore_busy_seconds_total&{window}&step=1s&neuroncore={key[0]}")
    counter = value.get(key)
    if not counter or len(ticks) < 2:
        continue
    first, last = ticks[0], ticks[-1]
    want = sum(gauge[key][t] * (t - prev) / 1000 for prev, t in zip(ticks, ticks[1:]))
    got = counter[last] - counter[first]
    if abs(got - want) > TOL * len(ticks):
        bad.append(f"core {key}: busy {got!r} s over the run, gauge sum {want!r}")

for line in bad[:20]:
    print("FAIL:", line, file=sys.stderr)
sys.exit(1 if bad else 0)
PY
stop_daemon
