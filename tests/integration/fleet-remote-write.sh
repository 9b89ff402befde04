#!/bin/sh
# A fleet through remote write: daemons on the device model write every
# stored sample to a real Prometheus (its remote write receiver) and a real
# VictoriaMetrics. Then VictoriaMetrics is stopped for OUTAGE_S seconds of
# simulated time and started again: afterwards each receiver holds every
# tick each daemon stored, once (no gap, no repeat), the databases stayed
# within their size cap, and /metrics answered every scrape meanwhile.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/receivers.sh"

[ -z "${NEUROND_WRAPPER:-}" ] || skip "many daemons under a wrapper (valgrind) measure the wrapper, not neurond"

NODES=${FLEET_NODES:-4}
BACKEND=${FLEET_BACKEND:-model:trn1.32xlarge}
SEED=11
SPEED=5
INTERVAL_S=10
OUTAGE_S=300
DB_CAP=16M

start_prometheus_receiver prom
start_victoria_metrics vm

# node_conf K: the config file of node K's daemon.
node_conf() {
  cat >"$TEST_TMP/node$1.conf" <<CONF
[neurond]
max_db_size = $DB_CAP
[remote_write prom]
url = $(receiver_write_url prom)
external_labels = instance=node$1
batch_send_deadline = 100ms
max_backoff = 1s
[remote_write vm]
url = $(receiver_write_url vm)
external_labels = instance=node$1
batch_send_deadline = 100ms
max_backoff = 1s
CONF
}

k=0
while [ "$k" -lt "$NODES" ]; do
  node_conf "$k"
  start_daemon "node$k" --backend "$BACKEND,seed=$SEED,speed=$SPEED" --interval "${INTERVAL_S}s" \
    --config "$TEST_TMP/node$k.conf"
  eval "URL_$k=\$URL"
  k=$((k + 1))
done

# The newest tick every daemon has stored, Unix seconds: queries at it see
# every node.
common_tick() {
  _min=
  _k=0
  while [ "$_k" -lt "$NODES" ]; do
    _t=$(URL=$(eval "echo \$URL_$_k") metric_value neurond_last_poll_timestamp_seconds)
    [ -n "$_t" ] || return 1
    _min=$(python3 -c "import sys; print(min(float(x) for x in sys.argv[1:]))" $_t ${_min:-$_t})
    _k=$((_k + 1))
  done
  echo "$_min"
}

# behind_all NAME: every daemon's writer to NAME has caught up.
caught_up() {
  _k=0
  while [ "$_k" -lt "$NODES" ]; do
    _v=$(URL=$(eval "echo \$URL_$_k") metric_value "neurond_remote_write_behind_seconds{endpoint=\"$1\"}")
    [ "$_v" = 0 ] || return 1
    _k=$((_k + 1))
  done
}

devices_everywhere() {
  _t=$(common_tick) || return 1
  [ "$(rx_value prom 'count(neuron_device_up == 1)' "$_t")" = "$1" ] &&
    [ "$(rx_value vm 'count(neuron_device_up == 1)' "$_t")" = "$1" ]
}

per_node=$(URL=$URL_0 http /api/v1/devices | python3 -c 'import json, sys; print(len(json.load(sys.stdin)["data"]["devices"]))')
wait_until 120 devices_everywhere $((per_node * NODES)) ||
  fail "the receivers do not hold $((per_node * NODES)) devices: prom $(rx_value prom 'count(neuron_device_up)'), vm $(rx_value vm 'count(neuron_device_up)')"
echo "both receivers hold $((per_node * NODES)) devices of $NODES nodes"

# --- The outage: VictoriaMetrics away for OUTAGE_S simulated seconds,
# while /metrics is scraped throughout.
outage_from=$(common_tick)
stop_receiver vm
scrapes=0
failed_scrapes=0
deadline=$(($(date +%s) + OUTAGE_S / SPEED))
while [ "$(date +%s)" -lt "$deadline" ]; do
  k=0
  while [ "$k" -lt "$NODES" ]; do
    status=$(URL=$(eval "echo \$URL_$k") http_status /metrics)
    scrapes=$((scrapes + 1))
    [ "$status" = 200 ] || failed_scrapes=$((failed_scrapes + 1))
    k=$((k + 1))
  done
  sleep 1
done
[ "$failed_scrapes" = 0 ] || fail "$failed_scrapes of $scrapes scrapes of /metrics were not answered during the outage"
behind=$(URL=$URL_0 metric_value 'neurond_remote_write_behind_seconds{endpoint="vm"}')
python3 -c "import sys; sys.exit(float(sys.argv[1]) < 0.5 * float(sys.argv[2]))" "${behind:-0}" "$OUTAGE_S" ||
  fail "node0 is only ${behind:-?} s behind the stopped receiver after a ${OUTAGE_S} s outage"
restart_receiver vm
wait_until 120 caught_up vm || fail "the daemons did not catch up with vm after the outage"
wait_until 30 caught_up prom || fail "the daemons fell behind prom"
outage_to=$(common_tick)
echo "outage of $OUTAGE_S simulated seconds: $scrapes scrapes answered; every daemon caught up"

# --- No gap, no repeat: each node's stored ticks of one series, from its
# own API (one-second buckets: one tick each, reported at the second it
# falls in), against each receiver's samples of that series, from a minute
# before the outage to its end. The edges are compared from a tick inside
# [lo, hi], since a bucket at an edge may hold a tick of the second before.
from=$(python3 -c "import sys; print(int(float(sys.argv[1])) - 60)" "$outage_from")
to=$(python3 -c "import sys; print(int(float(sys.argv[1])))" "$outage_to")
lo=$((from + INTERVAL_S))
hi=$((to - INTERVAL_S))
k=0
while [ "$k" -lt "$NODES" ]; do
  URL=$(eval "echo \$URL_$k")
  http "/api/v1/query_range?metric=neuron_device_up&neuron_device=0&start=$from&end=$to&step=1s&agg=last" |
    python3 -c '
import json, sys
for ts, v in json.load(sys.stdin)["data"]["result"][0]["values"]:
    print(int(float(ts)))' | awk '$1 >= '"$lo"' && $1 <= '"$hi" | sort >"$TEST_TMP/stored$k"
  [ -s "$TEST_TMP/stored$k" ] || fail "node$k has no stored ticks in the window"
  for rx in prom vm; do
    rx_samples "$rx" "neuron_device_up{instance=\"node$k\",neuron_device=\"0\"}" "$from" "$((to + 1))" |
      awk '{ s = int($2 / 1000) } s >= '"$lo"' && s <= '"$hi"' { print s }' | sort >"$TEST_TMP/$rx$k"
    dups=$(uniq -d "$TEST_TMP/$rx$k" | wc -l)
    [ "$dups" = 0 ] || fail "$rx holds $dups repeated samples of node$k"
    missing=$(comm -23 "$TEST_TMP/stored$k" "$TEST_TMP/$rx$k" | wc -l)
    [ "$missing" = 0 ] ||
      fail "$rx lacks $missing of node$k's $(wc -l <"$TEST_TMP/stored$k") stored ticks:" $(comm -23 "$TEST_TMP/stored$k" "$TEST_TMP/$rx$k" | head -n 5)
    extra=$(comm -13 "$TEST_TMP/stored$k" "$TEST_TMP/$rx$k" | wc -l)
    [ "$extra" = 0 ] || fail "$rx holds $extra samples of node$k that it did not store:" $(comm -13 "$TEST_TMP/stored$k" "$TEST_TMP/$rx$k" | head -n 5)
  done
  k=$((k + 1))
done
echo "no gap, no repeat: every node's $(wc -l <"$TEST_TMP/stored0") ticks around the outage are in both receivers once"

# --- The databases stayed within their cap.
k=0
while [ "$k" -lt "$NODES" ]; do
  URL=$(eval "echo \$URL_$k")
  http /api/v1/status | python3 -c '
import json, sys
st = json.load(sys.stdin)["data"]["store"]
if st["used_bytes"] > st["size_cap_bytes"]:
    sys.exit("node%s: %d bytes used, cap %d" % (sys.argv[1], st["used_bytes"], st["size_cap_bytes"]))' "$k" ||
    fail "a database outgrew its cap"
  stop_daemon "node$k"
  k=$((k + 1))
done
echo "PASS: $NODES nodes, both receivers, an outage of $OUTAGE_S s replayed without gap or repeat"
