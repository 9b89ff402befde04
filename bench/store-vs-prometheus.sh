#!/bin/sh
# make bench: neurond's store beside Prometheus's TSDB on the same samples.
# bench/bench-store feeds HOURS simulated hours (default 2) of SPEC into
# neurond's store and writes the samples it stored (gauges rounded as the
# store keeps them) as OpenMetrics text; promtool builds Prometheus blocks
# from that text; a Prometheus server then answers the same range query the
# bench times, over HTTP. Prints figures; never fails on them.
# Usage: bench/store-vs-prometheus.sh [SPEC [HOURS]]  (BENCH_STORE=path to
# bench/bench-store; run by hand from the top of the tree, built there)
set -eu
: "${NEUROND:=$PWD/daemon/neurond}" "${WEB_ROOT:=$PWD/web/static}" "${top_srcdir:=$PWD}"
. "$(dirname "$0")/../tests/integration/lib.sh"
: "${BENCH_STORE:=$PWD/bench/bench-store}"
SPEC=${1:-model:trn2.48xlarge,scenario=training}
HOURS=${2:-2}
need promtool prometheus curl python3 # build-aux/install-deps.sh --test installs them

echo "machine: $(uname -m), $(nproc) cores, $(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -n 1)"
BENCH_WEEK=0 BENCH_OPENMETRICS="$TEST_TMP/samples.om" "$BENCH_STORE" "$TEST_TMP" "$SPEC" "$HOURS" | tee "$TEST_TMP/store.out"

promtool tsdb create-blocks-from openmetrics -q "$TEST_TMP/samples.om" "$TEST_TMP/tsdb" >"$TEST_TMP/promtool.out" 2>&1 ||
  fail "promtool: $(tail -n 5 "$TEST_TMP/promtool.out")"
samples=$(grep -vc '^#' "$TEST_TMP/samples.om")
rm "$TEST_TMP/samples.om"
tsdb_bytes=$(find "$TEST_TMP/tsdb" -type f -printf '%s\n' | awk '{ n += $1 } END { print n }')
neurond_bps=$(sed -n 's/^database bytes\/sample (all tiers, whole file) *\([0-9.]*\).*/\1/p' "$TEST_TMP/store.out")
awk -v b="$tsdb_bytes" -v n="$samples" -v ours="$neurond_bps" 'BEGIN {
  printf "%-52s %12.3f   (%d bytes, %d samples)\n", "anchor: Prometheus TSDB bytes/sample (promtool blocks)", b / n, b, n
  printf "%-52s %12.2f   < 1\n", "neurond whole file / Prometheus TSDB", ours / (b / n)
}'

# The bench's range query: the inventory's first series, HOURS at 1,000
# steps, each step's mean (neurond's avg aggregation).
port=$(free_port)
start_helper prometheus --config.file=/dev/null --storage.tsdb.path="$TEST_TMP/tsdb" \
  --storage.tsdb.retention.time=100y --web.listen-address="127.0.0.1:$port" >"$TEST_TMP/prometheus.log" 2>&1
ready() { curl -sf "http://127.0.0.1:$port/-/ready" >/dev/null; }
wait_until 60 ready || fail "Prometheus did not start: $(tail -n 5 "$TEST_TMP/prometheus.log")"
step_ms=$((HOURS * 3600))
query="avg_over_time(neuroncore_utilization_ratio{neuron_device=\"0\",neuroncore=\"0\"}[${step_ms}ms])"
for _ in 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15; do
  curl -sS -o "$TEST_TMP/answer.json" -w '%{time_total}\n' --get --data-urlencode "query=$query" \
    --data-urlencode "start=1790000000" --data-urlencode "end=$((1790000000 + HOURS * 3600 - 1))" \
    --data-urlencode "step=${step_ms}ms" "http://127.0.0.1:$port/api/v1/query_range"
done >"$TEST_TMP/times"
points=$(python3 -c 'import json, sys; print(len(json.load(sys.stdin)["data"]["result"][0]["values"]))' \
  <"$TEST_TMP/answer.json")
sort -n "$TEST_TMP/times" | sed -n 8p | awk -v h="$HOURS" -v p="$points" '{
  printf "%-52s %12.2f   (over HTTP, JSON included)\n", "anchor: Prometheus " h " h query, " p " points (ms)", $1 * 1000
}'
