#!/bin/sh
# neurond as a drop-in for the Neuron monitoring ecosystem. A real
# Prometheus scrapes four neurond (the device model: trn1.32xlarge and
# trn2.48xlarge, training and inference; one with the instance labels on
# every series) every half second while the test runs their held clocks a
# tick per scrape. ecosystem-check.py then evaluates every
# query of AWS's neuron-monitor Grafana dashboard through Prometheus's HTTP
# API for each, checks each returns data and agrees with neurond's REST API
# for the same ticks, checks every name of Datadog's aws_neuron metric map
# that has a source, and what the CloudWatch agent reads. A fifth neurond
# redeploys an inference runtime every 60 of its ticks, driven a quarter
# cycle per scrape: the series of a runtime that exited leave Prometheus
# with it. Every /metrics passes
# promtool check metrics.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/receivers.sh"
need promtool

# Every daemon's clock is held and moved by the test (/api/v1/admin/ticks):
# Prometheus scrapes in real time, and each comparison is of ticks the test
# pinned. The rates are compared from Prometheus's scrape times and the
# ticks it scraped, so the daemons' stamps need not follow the wall clock.
start_daemon trn1_training --backend model:trn1.32xlarge,scenario=training,seed=3 --enable-admin
trn1_training=$URL
start_daemon trn1_inference --backend model:trn1.32xlarge,scenario=inference,seed=4 --instance-labels --enable-admin
trn1_inference=$URL
start_daemon trn2_training --backend model:trn2.48xlarge,scenario=training,seed=5 --enable-admin
trn2_training=$URL
start_daemon trn2_inference --backend model:trn2.48xlarge,scenario=inference,seed=6 --enable-admin
trn2_inference=$URL
# A redeploy every simulated hour: every 60 ticks of a minute.
start_daemon redeploy --backend model:trn1.2xlarge,scenario=inference,seed=7 --interval 1m --enable-admin
redeploy=$URL
jobs="trn1_training trn1_inference trn2_training trn2_inference redeploy"
for job in $jobs; do
  eval "URL=\$$job"
  hold_ticks
done

# A scrape every half second; under a wrapper (valgrind) a scrape of the
# largest model takes longer than a second: every 4 s then.
scrape=500ms
[ "$SLOW" -eq 1 ] || scrape=4s
{
  printf 'global:\n  scrape_interval: %s\n  scrape_timeout: %s\nscrape_configs:\n' "$scrape" "$scrape"
  for job in $jobs; do
    eval "url=\$$job"
    printf '  - job_name: %s\n    static_configs:\n      - targets: ["%s"]\n' "$job" "${url#http://}"
  done
} >"$TEST_TMP/prom.yml"
start_prometheus_receiver prom
prom=$(receiver_url prom)

# ROUNDS rounds: a tick on each daemon (15 on the redeploy one, a quarter of
# its cycle), then a wait until Prometheus has scraped every daemon's new
# tick. Each scrape of the rate windows sees a tick of its own, and
# Prometheus sees four redeploys.
python3 - "$prom" 16 $(for job in $jobs; do eval "echo $job=\$$job"; done) <<'PY' || fail "driving the daemons' ticks under Prometheus's scrapes (above)"
import json, sys, time, urllib.parse, urllib.request
prom, rounds, jobs = sys.argv[1], int(sys.argv[2]), dict(a.split("=", 1) for a in sys.argv[3:])


def answer(url, method="GET"):
    with urllib.request.urlopen(urllib.request.Request(url, method=method), timeout=300) as r:
        return json.load(r)


def scraped(job):
    """The stamp of the tick of the job's latest scrape, as Prometheus holds it."""
    q = urllib.parse.quote(f'neurond_last_poll_timestamp_seconds{{job="{job}"}}')
    r = answer(f"{prom}/api/v1/query?query={q}")["data"]["result"]
    return round(float(r[0]["value"][1]) * 1000) if r else None


for _ in range(rounds):
    want = {job: round(answer(f"{url}/api/v1/admin/ticks?run={15 if job == 'redeploy' else 1}", "POST")["data"]["timestamp"] * 1000)
            for job, url in jobs.items()}
    give_up = time.monotonic() + 60
    while any(scraped(job) != stamp for job, stamp in want.items()):
        if time.monotonic() > give_up:
            sys.exit(f"Prometheus did not scrape the new ticks within 60 s: want {want}")
        time.sleep(0.1)
PY

for job in $jobs; do
  eval "url=\$$job"
  curl -sf --max-time 10 "$url/metrics" >"$TEST_TMP/$job.metrics" || fail "GET $url/metrics"
  promtool check metrics <"$TEST_TMP/$job.metrics" >"$TEST_TMP/promtool" 2>&1 ||
    { cat "$TEST_TMP/promtool"; fail "$job: promtool check metrics"; }
  [ ! -s "$TEST_TMP/promtool" ] || { cat "$TEST_TMP/promtool"; fail "$job: promtool has remarks"; }
done
grep -q '^system_vcpu_count{instance_name="neurond-model-trn1.32xlarge",instance_id="i-' "$TEST_TMP/trn1_inference.metrics" ||
  fail "--instance-labels: no instance labels on system_vcpu_count"
grep -q '^system_vcpu_count [0-9]' "$TEST_TMP/trn1_training.metrics" || fail "instance labels without --instance-labels"

python3 "$top_srcdir/tests/integration/ecosystem-check.py" "$prom" trn1_training="$trn1_training" \
  trn1_inference="$trn1_inference" trn2_training="$trn2_training" trn2_inference="$trn2_inference" ||
  fail "the ecosystem's queries and names (see above)"

# Redeploys: Prometheus saw several processes come and go in the minute,
# and, at its latest scrape, of the held tick, has the series of exactly the
# runtimes neurond lists, none of those that exited.
tags=$(rx_value prom 'count(count by (runtime_tag) (last_over_time(neuron_runtime_info{job="redeploy"}[1m])))')
[ "${tags:-0}" -ge 4 ] || fail "only '$tags' runtimes seen in a minute of redeploys"
python3 - "$prom" "$redeploy" <<'PY' || fail "the series of exited runtimes are gone (see above)"
import json, sys, urllib.parse, urllib.request
prom, neurond = sys.argv[1], sys.argv[2]
get = lambda u: json.load(urllib.request.urlopen(u, timeout=10))["data"]
at = float(get(prom + "/api/v1/query?query=" + urllib.parse.quote('timestamp(up{job="redeploy"})'))["result"][0]["value"][1])
q = urllib.parse.quote('neuron_runtime_info{job="redeploy"}')
seen = sorted(r["metric"]["runtime_tag"] for r in get(f"{prom}/api/v1/query?query={q}&time={at:.3f}")["result"])
listed = sorted(r["runtime_tag"] for r in get(neurond + "/api/v1/runtimes")["runtimes"])
q = urllib.parse.quote('count by (runtime_tag) (execution_status_total{job="redeploy"})')
with_status = sorted(r["metric"]["runtime_tag"] for r in get(f"{prom}/api/v1/query?query={q}&time={at:.3f}")["result"])
if seen == listed == with_status:
    print(f"ok    runtimes in Prometheus {seen}, as neurond lists them")
    sys.exit(0)
print(f"FAIL  Prometheus has {seen} ({with_status} with counters), neurond lists {listed}")
sys.exit(1)
PY

stop_receiver prom
for job in $jobs; do
  stop_daemon "$job"
done
echo "PASS: AWS's dashboard, Datadog's names and CloudWatch's info family on trn1 and trn2, training and inference"
