#!/bin/sh
# A fleet through remote write: daemons on the device model write every
# stored sample to a real Prometheus (its remote write receiver) and a real
# VictoriaMetrics; Prometheus evaluates contrib's fleet recording rules, and
# every query of contrib's fleet dashboard returns data. Then
# VictoriaMetrics is stopped for OUTAGE_S seconds of the daemons' time and
# started again: afterwards each receiver holds every tick each daemon
# stored, once (no gap, no repeat), the databases stayed within their size
# cap, and /metrics answered every scrape meanwhile.
#
# The daemons' clocks are held and driven (/api/v1/admin/ticks), all to
# the same stamps: driven ticks are stamped on the interval's grid, so once
# every node is driven to one stamp, the same ticks bring each to the same
# next ones. The receivers run on their own clocks in real time.
#
# FLEET_NODES, FLEET_BACKEND: how many daemons, on which model instance.
# FLEET_ULTRASERVER=1: the daemons are the hosts of one UltraServer (node=K
# of FLEET_BACKEND, one seed): the receivers then also hold every core of
# it, and what a device sends to a device on another node is what that node
# says it received (fleet-ultraserver.sh).
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/receivers.sh"

[ -z "${NEUROND_WRAPPER:-}" ] || skip "many daemons under a wrapper (valgrind) measure the wrapper, not neurond"

NODES=${FLEET_NODES:-4}
BACKEND=${FLEET_BACKEND:-model:trn1.32xlarge}
ULTRASERVER=${FLEET_ULTRASERVER:-0}
SEED=11
INTERVAL_S=10
OUTAGE_S=300
DB_CAP=16M

cat >"$TEST_TMP/prom.yml" <<CONF
global:
  scrape_interval: 1m
  evaluation_interval: 2s
rule_files:
  - $top_srcdir/contrib/prometheus/neurond-fleet-recording.yml
CONF
start_prometheus_receiver prom
start_victoria_metrics vm

# node_conf K: the config file of node K's daemon; two nodes to an
# UltraServer, or all of them.
node_conf() {
  if [ "$ULTRASERVER" = 1 ]; then _us=us0; else _us=us$(($1 / 2)); fi
  cat >"$TEST_TMP/node$1.conf" <<CONF
[neurond]
max_db_size = $DB_CAP
[remote_write prom]
url = $(receiver_write_url prom)
external_labels = ultraserver=$_us,instance=node$1
batch_send_deadline = 100ms
max_backoff = 1s
[remote_write vm]
url = $(receiver_write_url vm)
external_labels = ultraserver=$_us,instance=node$1
batch_send_deadline = 100ms
max_backoff = 1s
CONF
}

# Every daemon is started at once, then each one's port waited for: their
# start-ups overlap.
k=0
while [ "$k" -lt "$NODES" ]; do
  node_conf "$k"
  if [ "$ULTRASERVER" = 1 ]; then node=",node=$k"; else node=; fi
  spawn_daemon "node$k" --backend "$BACKEND$node,seed=$SEED" --interval "${INTERVAL_S}s" \
    --config "$TEST_TMP/node$k.conf" --enable-admin
  k=$((k + 1))
done
k=0
while [ "$k" -lt "$NODES" ]; do
  DAEMON_NAME=node$k
  DAEMON_PID=$(daemon_pid "node$k")
  wait_until 60 port_logged || fail "daemon node$k did not log its port within $((60 * SLOW)) s"
  eval "URL_$k=http://127.0.0.1:$(daemon_port "node$k")"
  k=$((k + 1))
done

# fleet_ticks hold | align | run N | run_scrape N: every node's clock, all
# nodes at once (one process, requests in parallel). hold stops every timer;
# align runs a tick on each, which lands on the interval's grid, then on
# each node behind the newest as many as bring it there; run N runs N on
# each; run_scrape N then scrapes every node's /metrics once and fails
# unless each answered 200. align and the runs set STAMP to the stamp of
# every node's latest tick (Unix seconds), and fail unless all nodes have
# that one.
fleet_ticks() {
  _k=0
  _urls=
  while [ "$_k" -lt "$NODES" ]; do
    _urls="$_urls $(eval "echo \$URL_$_k")"
    _k=$((_k + 1))
  done
  # shellcheck disable=SC2086 # one argument per node
  _out=$(python3 - "$INTERVAL_S" "$1" "${2:-0}" $_urls <<'PY'
import json, sys, urllib.error, urllib.request
from concurrent.futures import ThreadPoolExecutor

interval, cmd, n, urls = int(sys.argv[1]) * 1000, sys.argv[2], int(sys.argv[3]), sys.argv[4:]


def post(url, query):
    """The stamp of the node's latest tick (ms) once the request is done."""
    request = urllib.request.Request(f"{url}/api/v1/admin/ticks?{query}", method="POST")
    with urllib.request.urlopen(request, timeout=300) as r:
        body = json.load(r)
    if body.get("status") != "success":
        sys.exit(f"{url}: {body}")
    return round(float(body["data"]["timestamp"]) * 1000)


with ThreadPoolExecutor(max_workers=8) as pool:
    if cmd == "hold":
        list(pool.map(lambda u: post(u, "hold=true"), urls))
        sys.exit(0)
    if cmd == "align":
        stamps = list(pool.map(lambda u: post(u, "run=1"), urls))
        newest = max(stamps)
        stamps = list(pool.map(lambda a: post(a[0], f"run={(newest - a[1]) // interval}") if a[1] < newest else a[1],
                               zip(urls, stamps)))
    else:
        stamps = list(pool.map(lambda u: post(u, f"run={n}"), urls))
    if cmd == "run_scrape":
        def scrape(url):
            try:
                with urllib.request.urlopen(f"{url}/metrics", timeout=10) as r:
                    r.read()
                    return r.status
            except urllib.error.HTTPError as e:
                return e.code
            except OSError as e:
                return str(e)
        failed = [(k, status) for k, status in enumerate(pool.map(scrape, urls)) if status != 200]
        if failed:
            sys.exit("scrapes of /metrics not answered 200: " + ", ".join(f"node{k} {s}" for k, s in failed))
if len(set(stamps)) != 1:
    sys.exit("the nodes' latest ticks differ: " + ", ".join(f"node{k} {s}" for k, s in enumerate(stamps)))
print("%d.%03d" % divmod(stamps[0], 1000))
PY
) || fail "fleet_ticks $*: $_out"
  STAMP=$_out
}

# Every node on one stamp, held there: queries at it see every node.
fleet_ticks hold
fleet_ticks align
echo "every node's clock held and driven to $STAMP"

devices_everywhere() {
  [ "$(rx_value prom 'count(neuron_device_up == 1)' "$STAMP")" = "$1" ] &&
    [ "$(rx_value vm 'count(neuron_device_up == 1)' "$STAMP")" = "$1" ]
}

devices=$(URL=$URL_0 http /api/v1/devices) || fail "node0 does not answer /api/v1/devices"
per_node=$(echo "$devices" | python3 -c 'import json, sys; print(len(json.load(sys.stdin)["data"]["devices"]))')
wait_until 120 devices_everywhere $((per_node * NODES)) ||
  fail "the receivers do not hold $((per_node * NODES)) devices: prom $(rx_value prom 'count(neuron_device_up)'), vm $(rx_value vm 'count(neuron_device_up)')"
echo "both receivers hold $((per_node * NODES)) devices of $NODES nodes"

# --- One UltraServer as its hosts: every core of it, and each link's two
# sides agree: on each of LINK_TICKS ticks, stamped alike on every node,
# what a device sent to a device on another node is what that node says
# it received from it.
LINK_TICKS=12
if [ "$ULTRASERVER" = 1 ]; then
  cores() {
    echo "$devices" | python3 -c 'import json, sys; print(sum(d[sys.argv[1]] for d in json.load(sys.stdin)["data"]["devices"]))' "$1"
  }
  cores_everywhere() {
    for _rx in prom vm; do
      [ "$(rx_value "$_rx" 'count(neuroncore_utilization_ratio)' "$STAMP")" = $(($(cores cores) * NODES)) ] || return 1
      [ "$(rx_value "$_rx" 'count(neuroncore_physical_utilization_ratio)' "$STAMP")" = $(($(cores physical_cores) * NODES)) ] ||
        return 1
    done
  }
  wait_until 60 cores_everywhere ||
    fail "the receivers do not hold $(($(cores physical_cores) * NODES)) physical cores: prom $(rx_value prom 'count(neuroncore_physical_utilization_ratio)' "$STAMP"), vm $(rx_value vm 'count(neuroncore_physical_utilization_ratio)' "$STAMP")"
  echo "both receivers hold $(($(cores physical_cores) * NODES)) physical cores ($(($(cores cores) * NODES)) logical)"

  link_from=$STAMP
  fleet_ticks run "$LINK_TICKS"
  link_to=$STAMP
  # link_agrees FROM_NODE FROM_DEVICE TO_NODE TO_DEVICE: node FROM's transmit
  # to the peer against node TO's receive from it, in VictoriaMetrics, tick
  # by tick. Exit status 2: not every tick has arrived yet.
  link_agrees() {
    rx_samples vm "neuron_link_transmit_bytes_total{instance=\"node$1\",neuron_device=\"$2\",peer_node=\"$3\",peer_device=\"$4\"}" \
      "$link_from" "$link_to" >"$TEST_TMP/tx"
    rx_samples vm "neuron_link_receive_bytes_total{instance=\"node$3\",neuron_device=\"$4\",peer_node=\"$1\",peer_device=\"$2\"}" \
      "$link_from" "$link_to" >"$TEST_TMP/rx"
    python3 - "$TEST_TMP/tx" "$TEST_TMP/rx" "$link_from" "$link_to" "$INTERVAL_S" <<'PY'
import sys
def load(path):
    return dict((int(t), float(v)) for _, t, v in (line.split() for line in open(path)))
tx, rx = load(sys.argv[1]), load(sys.argv[2])
first, last, interval = (round(float(a) * 1000) for a in sys.argv[3:6])
stamps = list(range(first, last + 1, interval))
missing = [t for t in stamps if t not in tx or t not in rx]
if missing:
    print("ticks %s not received yet" % missing[:3], file=sys.stderr)
    sys.exit(2)
extra = sorted(set(t for t in list(tx) + list(rx) if first <= t <= last) - set(stamps))
if extra:
    sys.exit("samples off the common stamps: %s" % extra[:3])
# A whole byte either way: each side rounds its counter down.
wrong = [(a, b, tx[b] - tx[a], rx[b] - rx[a]) for a, b in zip(stamps, stamps[1:])
         if abs((tx[b] - tx[a]) - (rx[b] - rx[a])) > 2]
if wrong:
    sys.exit("ticks where the bytes sent are not the bytes received: %s" % wrong[:3])
if tx[last] - tx[first] <= 0:
    sys.exit("the link carried nothing in [%d, %d]" % (first, last))
PY
  }
  for pair in "0 0 1 2" "1 2 0 0" "17 3 35 1" "35 1 17 3" "5 0 5 3"; do
    # shellcheck disable=SC2086
    link_ok() { link_agrees $pair 2>"$TEST_TMP/why" || { [ $? -eq 2 ] && return 1; fail "node$(echo "$pair" | cut -d' ' -f1)'s link to node$(echo "$pair" | cut -d' ' -f3) and the peer's disagree: $(cat "$TEST_TMP/why")"; }; }
    wait_until 60 link_ok || fail "the receiver lacks ticks of node$(echo "$pair" | cut -d' ' -f1)'s link: $(cat "$TEST_TMP/why")"
  done
  echo "each link's transmit on one node is its peer node's receive, tick by tick over $LINK_TICKS ticks"
fi

# --- The fleet view: every dashboard query (the recorded series of the
# fleet rules, evaluated at the receiver's clock) returns data.
python3 "$top_srcdir/tests/integration/grafana-metrics.py" "$top_srcdir/contrib/grafana/neurond-fleet.json" \
  "$TEST_TMP/fleet-queries.yml" >/dev/null || fail "could not read the fleet dashboard's queries"
python3 -c '
import json, re, sys
for line in open(sys.argv[1]):
    m = re.match(r"\s*expr: (.*)", line)
    if m:
        print(json.loads(m.group(1)))' "$TEST_TMP/fleet-queries.yml" >"$TEST_TMP/fleet-queries"
[ -s "$TEST_TMP/fleet-queries" ] || fail "no queries in the fleet dashboard"
every_query_has_data() {
  while IFS= read -r _q; do
    [ -n "$(rx_value prom "$_q")" ] || { echo "no data yet: $_q"; return 1; }
  done <"$TEST_TMP/fleet-queries"
}
# Prometheus evaluates the rules at its own clock: the rates need two of a
# node's ticks in the minute before it, which the held stamp joins once the
# wall clock reaches it (driven ticks run ahead of it).
wait_until 60 every_query_has_data >"$TEST_TMP/fleet-wait" ||
  fail "a fleet dashboard query returns no data: $(tail -n 1 "$TEST_TMP/fleet-wait")"
if [ "$ULTRASERVER" = 1 ]; then ultraservers=1; else ultraservers=$(((NODES + 1) / 2)); fi
[ "$(rx_value prom 'count(ultraserver:neuron_devices_up:count)')" = "$ultraservers" ] ||
  fail "the fleet rules do not see $ultraservers UltraServers"
echo "every one of the fleet dashboard's $(wc -l <"$TEST_TMP/fleet-queries") queries returns data"

# --- The outage: VictoriaMetrics away for OUTAGE_S seconds of the
# daemons' ticks, driven a few at a time while every node's /metrics is
# scraped between them.
outage_from=$STAMP
stop_receiver vm
scrapes=0
driven=0
while [ "$driven" -lt $((OUTAGE_S / INTERVAL_S)) ]; do
  fleet_ticks run_scrape 5
  driven=$((driven + 5))
  scrapes=$((scrapes + NODES))
done
# The writer says how far behind it is when it tries to send, at most a
# second apart while the receiver is away (max_backoff); /metrics shows it
# from the next tick on: one more tick on every node per look.
behind_enough() {
  fleet_ticks run 1
  behind=$(URL=$URL_0 metric_value 'neurond_remote_write_behind_seconds{endpoint="vm"}')
  python3 -c "import sys; sys.exit(float(sys.argv[1]) < 0.5 * float(sys.argv[2]))" "${behind:-0}" "$OUTAGE_S"
}
wait_until 20 behind_enough ||
  fail "node0 is only ${behind:-?} s behind the stopped receiver after a ${OUTAGE_S} s outage"
restart_receiver vm
outage_to=$STAMP
echo "outage of $OUTAGE_S s of ticks and more ($outage_from to $outage_to): $scrapes scrapes of /metrics answered"

# --- No gap, no repeat: each node's stored ticks of one series, from its
# own API (one-second buckets: one tick each, reported at the second it
# falls in), against each receiver's samples of that series, from a minute
# before the outage to its end. The edges are compared from a tick inside
# [lo, hi], since a bucket at an edge may hold a tick of the second before.
# Missing ticks may still be on their way (the replay): they are waited
# for; a repeated or unknown sample fails at once.
# One process for every node and both receivers: stored ticks from each
# node's API, then each receiver's samples of every node in one query, until
# every stored tick is there (40 s, times SLOW).
from=$(python3 -c "import sys; print(int(float(sys.argv[1])) - 60)" "$outage_from")
to=$(python3 -c "import sys; print(int(float(sys.argv[1])))" "$outage_to")
k=0
urls=
while [ "$k" -lt "$NODES" ]; do
  urls="$urls $(eval "echo \$URL_$k")"
  k=$((k + 1))
done
# shellcheck disable=SC2086 # one argument per node
python3 - "$from" "$to" "$INTERVAL_S" $((40 * SLOW)) "$(receiver_url vm)" "$(receiver_url prom)" $urls <<'PY' ||
import json, sys, time, urllib.parse, urllib.request

frm, to, interval, patience = (int(a) for a in sys.argv[1:5])
vm, prom, nodes = sys.argv[5], sys.argv[6], sys.argv[7:]
lo, hi = frm + interval, to - interval


def get(url, **params):
    with urllib.request.urlopen(url + "?" + urllib.parse.urlencode(params), timeout=60) as r:
        return r.read().decode()


stored = []
for k, url in enumerate(nodes):
    values = json.loads(get(url + "/api/v1/query_range", metric="neuron_device_up", neuron_device="0", start=frm,
                            end=to, step="1s", agg="last"))["data"]["result"][0]["values"]
    stored.append(sorted(int(float(t)) for t, _ in values if lo <= int(float(t)) <= hi))
    if not stored[-1]:
        sys.exit(f"node{k} has no stored ticks in the window")


def received(rx):
    """Each node's samples in [lo, hi], as seconds, repeats included:
    VictoriaMetrics' export of raw samples; Prometheus's range selector (its
    storage refuses a repeat)."""
    out = {}
    selector = 'neuron_device_up{neuron_device="0"}'
    if rx == "vm":
        for line in get(vm + "/api/v1/export", **{"match[]": selector, "start": frm, "end": to + 1}).splitlines():
            r = json.loads(line)
            out.setdefault(r["metric"]["instance"], []).extend(t // 1000 for t in r["timestamps"])
    else:
        answer = json.loads(get(prom + "/api/v1/query", query=f"{selector}[{to + 1 - frm}s]", time=to + 1))
        for r in answer["data"]["result"]:
            out.setdefault(r["metric"]["instance"], []).extend(int(float(t)) for t, _ in r["values"])
    return {k: sorted(s for s in v if lo <= s <= hi) for k, v in out.items()}


for rx in ("vm", "prom"):
    give_up = time.monotonic() + patience
    while True:
        got, lacking = received(rx), None
        for k, want in enumerate(stored):
            have = got.get(f"node{k}", [])
            repeats = sorted(set(s for s in have if have.count(s) > 1))
            if repeats:
                sys.exit(f"{rx} holds {len(repeats)} repeated samples of node{k}: {repeats[:5]}")
            extra = sorted(set(have) - set(want))
            if extra:
                sys.exit(f"{rx} holds {len(extra)} samples of node{k} that it did not store: {extra[:5]}")
            missing = sorted(set(want) - set(have))
            if missing and not lacking:
                lacking = f"{rx} lacks {len(missing)} of node{k}'s {len(want)} stored ticks: {missing[:5]}"
        if not lacking:
            break
        if time.monotonic() > give_up:
            sys.exit(lacking)
        time.sleep(0.5)
print(f"no gap, no repeat: every node's {len(stored[0])} ticks around the outage are in both receivers once")
PY
  fail "the receivers' samples are not the ticks the nodes stored (above)"

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
