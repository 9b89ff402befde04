#!/bin/sh
# A real Prometheus server scrapes the model every half second while the
# test holds the daemon's clock and runs 15 ticks (15 simulated seconds) per
# scrape, waiting for each to be scraped. Prometheus's rate() of
# neuroncore_busy_seconds_total, divided by rate() of
# neurond_last_poll_timestamp_seconds scraped with it (which turns
# Prometheus's wall-clock seconds into the model's), must equal the mean of
# every tick's neuroncore_utilization_ratio between the window's first and
# last scrape, as the REST API stores them. avg_over_time() of the gauge,
# which sees one tick in fifteen, is printed beside it for comparison.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/receivers.sh"

ROUNDS=12
start_daemon --backend "model:trn1.32xlarge,scenario=training,seed=12" --interval 1s --enable-admin
hold_ticks

# Every 5 s under valgrind, where a scrape takes longer.
scrape=500ms
[ "$SLOW" -eq 1 ] || scrape=5s
cat >"$TEST_TMP/prom.yml" <<YML
global:
  scrape_interval: ${scrape}
  scrape_timeout: ${scrape}
scrape_configs:
  - job_name: neurond
    static_configs:
      - targets: ['127.0.0.1:$PORT']
YML
start_prometheus_receiver prom

# scraped STAMP: Prometheus's latest scrape saw the tick stamped STAMP.
scraped() {
  [ "$(rx_value prom 'neurond_last_poll_timestamp_seconds{job="neurond"}')" = "$1" ]
}
run_ticks 1
first_stamp=$(http /api/v1/admin/ticks | sed -n 's/.*"timestamp":\([0-9.]*\).*/\1/p')
wait_until 30 scraped "${first_stamp%.000}" || fail "Prometheus did not scrape tick $TICK: $(tail -n 5 "$TEST_TMP/prom.log")"
round=0
while [ "$round" -lt "$ROUNDS" ]; do
  run_ticks 15
  stamp=$(http /api/v1/admin/ticks | sed -n 's/.*"timestamp":\([0-9.]*\).*/\1/p')
  wait_until 30 scraped "${stamp%.000}" || fail "Prometheus did not scrape tick $TICK"
  round=$((round + 1))
done

python3 - "$URL" "$(receiver_url prom)" "$first_stamp" "$stamp" <<'PY' || fail "Prometheus's rate() of busy time is not the mean utilization (above)"
import json, sys, time, urllib.parse, urllib.request

neurond, prom, first_driven, last_driven = sys.argv[1], sys.argv[2], float(sys.argv[3]), float(sys.argv[4])


def get(base, path, **params):
    with urllib.request.urlopen(base + path + "?" + urllib.parse.urlencode(params), timeout=30) as r:
        body = json.load(r)
    assert body["status"] == "success", body
    return body["data"]["result"]


def key(labels):
    return labels["neuroncore"], labels.get("runtime_tag", "")


# The window: from the first scrape of the first driven tick to the first
# scrape of the last, at the times Prometheus scraped them.
scrapes = [(float(t), float(v)) for t, v in get(prom, "/api/v1/query", query="neurond_last_poll_timestamp_seconds[10m]",
                                                 time=f"{time.time():.3f}")[0]["values"]]
start = min(t for t, v in scrapes if v == first_driven)
at = min(t for t, v in scrapes if v == last_driven)
WINDOW = f"{round((at - start) * 1000) + 1}ms"
promql = lambda q: get(prom, "/api/v1/query", query=q, time=f"{at:.3f}")
ratio = {key(s["metric"]): float(s["value"][1]) for s in promql(
    f"rate(neuroncore_busy_seconds_total[{WINDOW}]) / on (instance, job) group_left"
    f" rate(neurond_last_poll_timestamp_seconds[{WINDOW}])")}
naive = {key(s["metric"]): float(s["value"][1]) for s in promql(
    f"avg_over_time(neuroncore_utilization_ratio[{WINDOW}])")}
stamps = [float(v) for _, v in promql(f"neurond_last_poll_timestamp_seconds[{WINDOW}]")[0]["values"]]
samples = {key(s["metric"]): len(s["values"]) for s in promql(f"neuroncore_busy_seconds_total[{WINDOW}]")}
# Driven ticks are stamped on whole seconds: with step=1s the REST API
# reports each in the bucket of its second.
first, last = round(stamps[0] * 1000) // 1000 * 1000, round(stamps[-1] * 1000) // 1000 * 1000
if (first, last) != (round(first_driven * 1000), round(last_driven * 1000)):
    print(f"FAIL: the window's scrapes saw ticks {first}..{last}, not the driven {first_driven}..{last_driven}",
          file=sys.stderr)
    sys.exit(1)

gauge = {}
for s in get(neurond, "/api/v1/query_range", metric="neuroncore_utilization_ratio",
             start=f"{first / 1000 - 5:.3f}", end=f"{last / 1000 + 5:.3f}", step="1s"):
    gauge[key(s["metric"])] = {round(float(t) * 1000): float(v) for t, v in s["values"]}

bad, err_rate, err_naive = [], [], []
for k, r in ratio.items():
    # A series that began or ended inside the window (a runtime that came
    # back under a new tag) spans fewer scrapes than the window has.
    if samples.get(k) != len(stamps) or k not in gauge:
        continue
    ticks = sorted(t for t in gauge[k] if first <= t <= last)
    if ticks[0] != first or ticks[-1] != last:
        bad.append(f"core {k}: the REST API lacks ticks {first}..{last}")
        continue
    # A runtime that let go of the core for some ticks between two scrapes:
    # its series has a gap Prometheus did not see, while the core's counter
    # went on under the labels of no runtime. Only series present at every
    # tick tell the rate of one story.
    if len(ticks) != (last - first) // 1000 + 1:
        continue
    truth = sum(gauge[k][t] * (t - prev) for prev, t in zip(ticks, ticks[1:])) / (last - first)
    err_rate.append(abs(r - truth))
    err_naive.append(abs(naive[k] - truth))
    if abs(r - truth) > 1e-6:
        bad.append(f"core {k}: rate ratio {r!r}, mean of {len(ticks) - 1} ticks {truth!r}")
if len(stamps) < 10:
    bad.append(f"only {len(stamps)} scrapes in the window")
if len(err_rate) < 24:
    bad.append(f"only {len(err_rate)} cores compared")
for line in bad[:20]:
    print("FAIL:", line, file=sys.stderr)
if err_rate:
    print(f"{len(err_rate)} cores, {len(stamps)} scrapes over {(last - first) / 1000:.0f} s of the model's time: "
          f"rate() of busy time off the true mean by at most {max(err_rate):.2g}; "
          f"avg_over_time() of the gauge by {sum(err_naive) / len(err_naive):.3f} on average, "
          f"at most {max(err_naive):.3f}")
sys.exit(1 if bad else 0)
PY
stop_receiver prom
stop_daemon
