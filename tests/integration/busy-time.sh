#!/bin/sh
# neuroncore_busy_seconds_total against neuroncore_utilization_ratio through
# the daemon's interfaces: the test holds the daemon's clock and runs 200
# ticks of 1 s (/api/v1/admin/ticks); the REST API's rate=1 of the counter
# must equal, tick by tick and averaged over windows of 10 s, 15 s and 45 s
# (and 400 s when one starts in the run), the gauge's stored samples over
# the same ticks, and over the whole run the counter must grow by the sum
# of the gauge's samples times their intervals. /metrics must serve the
# counter beside the gauge for every core, monotonic between scrapes.
. "$(dirname "$0")/lib.sh"
need curl python3

start_daemon --backend model:trn1.32xlarge,scenario=inference,seed=11 --interval 1s --enable-admin
hold_ticks
first=$TICK_TIME
http /metrics --fail >"$TEST_TMP/metrics1"
run_ticks 200
http /metrics --fail >"$TEST_TMP/metrics2"

python3 - "$URL" "$TEST_TMP/metrics1" "$TEST_TMP/metrics2" "$first" "$TICK_TIME" <<'PY' || fail "busy time and utilization disagree (above)"
import json, re, sys, urllib.request

url, metrics1, metrics2, first_s, last_s = sys.argv[1:]
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

# The run's ticks: the one held, then 200, each a second after the one
# before. A query's first tick has no rate (no sample before it is read).
first, last = round(float(first_s) * 1000), round(float(last_s) * 1000)
window = f"start={first / 1000:.3f}&end={last / 1000:.3f}"
gauge = matrix(f"metric=neuroncore_utilization_ratio&{window}&step=1s")
rate = matrix(f"metric=neuroncore_busy_seconds_total&rate=1&{window}&step=1s")
if len(gauge) < 32 or len(rate) < 32 or not set(rate) <= set(gauge):
    bad.append(f"series differ: gauge {sorted(gauge)}, rate {sorted(rate)}")
# Every core has the gauge at every tick (under whichever runtime held it).
seconds = [first - first % 1000 + 1000 * k for k in range(201)]
for c in cores:
    have = sorted(t for key in gauge if key[0] == c for t in gauge[key])
    if have != seconds:
        bad.append(f"core {c}: the gauge at {len(have)} ticks, not at the run's {len(seconds)}")

# Tick by tick: the counter's rate over an interval is the gauge at its end,
# at every tick whose series had a sample the tick before.
compared = 0
for key, points in gauge.items():
    want = {t for t in points if t - 1000 in points}
    got = rate.get(key, {})
    if set(got) != want:
        bad.append(f"core {key}: rates at {len(got)} ticks, not at the {len(want)} after a tick of the series")
    for t in sorted(want & set(got)):
        # The counter is kept to the microsecond: over the first interval,
        # shorter than a second (the held tick is not on a whole second),
        # its rate is that much less exact.
        seconds = (t - max(t - 1000, first)) / 1000
        if abs(got[t] - points[t]) > TOL / seconds:
            bad.append(f"core {key} at {t}: rate {got[t]!r}, gauge {points[t]!r}")
        compared += 1

# Over windows: the API's average of the rate in each step equals the mean
# of the gauge over the ticks that have a rate in it. A query's first
# bucket starts before the held tick and may hold ticks of before the run:
# compared are the buckets that start in the run. No step is a whole number
# of minutes: such steps read the 1 min rollups once an hour has ended, and
# a rollup's rate lands in the bucket after its minute.
buckets_compared = 0
for step in (10, 15, 45, 400):
    avg = matrix(f"metric=neuroncore_busy_seconds_total&rate=1&agg=avg&{window}&step={step}s")
    span = step * 1000
    for key, ticks in rate.items():
        want = {t - t % span for t in ticks if t - t % span >= first}
        got = {b: v for b, v in avg.get(key, {}).items() if b >= first}
        if set(got) != want:
            bad.append(f"step {step} s, core {key}: buckets {sorted(got)}, not {sorted(want)}")
        for b, v in got.items():
            inside = [gauge[key][t] for t in ticks if b <= t < b + span]
            if not inside:
                continue
            mean = sum(inside) / len(inside)
            buckets_compared += 1
            if abs(v - mean) > TOL:
                bad.append(f"step {step} s, core {key}, bucket {b}: rate {v!r}, gauge mean {mean!r}")
print(f"{compared} rates and {buckets_compared} windows of them compared with the gauge")

# The run's busy time is the sum of its gauge samples times their
# intervals. Points are reported at their bucket's start: the driven ticks
# are on whole seconds, the held one is not, so the first interval is
# from its own stamp.
for key in gauge:
    ticks = sorted(gauge[key])
    value = matrix(f"metric=neuroncore_busy_seconds_total&{window}&step=1s&neuroncore={key[0]}")
    counter = value.get(key)
    if not counter or len(ticks) < 2:
        continue
    stamps = [first if ticks[0] == first - first % 1000 else ticks[0]] + ticks[1:]
    want = sum(gauge[key][t] * (t - prev) / 1000 for prev, t in zip(stamps, ticks[1:]))
    got = counter[ticks[-1]] - counter[ticks[0]]
    if abs(got - want) > TOL * len(ticks):
        bad.append(f"core {key}: busy {got!r} s over the run, gauge sum {want!r}")

for line in bad[:20]:
    print("FAIL:", line, file=sys.stderr)
sys.exit(1 if bad else 0)
PY
stop_daemon
