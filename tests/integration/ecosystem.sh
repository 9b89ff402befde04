#!/bin/sh
# neurond as a drop-in for the Neuron monitoring ecosystem. A real
# Prometheus scrapes four neurond (the device model: trn1.32xlarge and
# trn2.48xlarge, training and inference; one with the instance labels on
# every series) every second for a minute. ecosystem-check.py then evaluates every
# query of AWS's neuron-monitor Grafana dashboard through Prometheus's HTTP
# API for each, checks each returns data and agrees with neurond's REST API
# for the same ticks, checks every name of Datadog's aws_neuron metric map
# that has a source, and what the CloudWatch agent reads. A fifth neurond,
# sped up, redeploys an inference runtime every few seconds: the series of
# a runtime that exited leave Prometheus with it. Every /metrics passes
# promtool check metrics.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/receivers.sh"
need promtool

# speed=1: Prometheus stamps samples with its own clock, neurond with the
# simulated one; at speed 1 they are one clock, so rates agree.
start_daemon trn1_training --backend model:trn1.32xlarge,scenario=training,seed=3,speed=1
trn1_training=$URL
start_daemon trn1_inference --backend model:trn1.32xlarge,scenario=inference,seed=4,speed=1 --instance-labels
trn1_inference=$URL
start_daemon trn2_training --backend model:trn2.48xlarge,scenario=training,seed=5,speed=1
trn2_training=$URL
start_daemon trn2_inference --backend model:trn2.48xlarge,scenario=inference,seed=6,speed=1
trn2_inference=$URL
# A redeploy an hour at speed=720: one every 5 s of wall time, a tick
# every 83 ms.
start_daemon redeploy --backend model:trn1.2xlarge,scenario=inference,seed=7,speed=720 --interval 1m
redeploy=$URL

# Under a wrapper (valgrind) a scrape of the largest model takes longer
# than a second: scrape every 4 s then, not 5, which would see the 5 s
# redeploy cycle at the same point every time.
scrape=1
[ "$SLOW" -eq 1 ] || scrape=4
{
  printf 'global:\n  scrape_interval: %ss\n  scrape_timeout: %ss\nscrape_configs:\n' "$scrape" "$scrape"
  for job in trn1_training trn1_inference trn2_training trn2_inference redeploy; do
    eval "url=\$$job"
    printf '  - job_name: %s\n    static_configs:\n      - targets: ["%s"]\n' "$job" "${url#http://}"
  done
} >"$TEST_TMP/prom.yml"
start_prometheus_receiver prom
prom=$(receiver_url prom)

# A full rate window of successful scrapes for every target.
window_full() {
  [ "$(rx_value prom 'min(sum_over_time(up[1m]))')" -ge $((55 / scrape)) ] 2>/dev/null
}
wait_until 120 window_full || fail "Prometheus did not scrape every target for a minute: $(tail -n 5 "$TEST_TMP/prom.log")"

for job in trn1_training trn1_inference trn2_training trn2_inference redeploy; do
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

# Redeploys: Prometheus saw several processes come and go in the minute, and
# now has the series of exactly the runtimes neurond lists, none of those
# that exited.
redeploys_seen() {
  tags=$(rx_value prom 'count(count by (runtime_tag) (last_over_time(neuron_runtime_info{job="redeploy"}[1m])))')
  [ "${tags:-0}" -ge 4 ]
}
wait_until 30 redeploys_seen || fail "only '$tags' runtimes seen in a minute of redeploys"
python3 - "$prom" "$redeploy" <<'PY' || fail "the series of exited runtimes are gone (see above)"
import json, sys, time, urllib.parse, urllib.request
prom, neurond = sys.argv[1], sys.argv[2]
get = lambda u: json.load(urllib.request.urlopen(u, timeout=10))["data"]
for attempt in range(30):
    # The latest scrape's runtimes, and neurond's at about that time.
    at = float(get(prom + "/api/v1/query?query=" + urllib.parse.quote('timestamp(up{job="redeploy"})'))["result"][0]["value"][1])
    q = urllib.parse.quote('neuron_runtime_info{job="redeploy"}')
    seen = sorted(r["metric"]["runtime_tag"] for r in get(f"{prom}/api/v1/query?query={q}&time={at:.3f}")["result"])
    listed = sorted(r["runtime_tag"] for r in get(neurond + "/api/v1/runtimes")["runtimes"])
    q = urllib.parse.quote('count by (runtime_tag) (execution_status_total{job="redeploy"})')
    with_status = sorted(r["metric"]["runtime_tag"] for r in get(f"{prom}/api/v1/query?query={q}&time={at:.3f}")["result"])
    if seen == listed == with_status:
        print(f"ok    runtimes in Prometheus {seen}, as neurond lists them")
        sys.exit(0)
    # A redeploy fell between the scrape and the list: look again.
    time.sleep(0.5)
print(f"FAIL  Prometheus has {seen} ({with_status} with counters), neurond lists {listed}")
sys.exit(1)
PY

stop_receiver prom
for job in trn1_training trn1_inference trn2_training trn2_inference redeploy; do
  stop_daemon "$job"
done
echo "PASS: AWS's dashboard, Datadog's names and CloudWatch's info family on trn1 and trn2, training and inference"
