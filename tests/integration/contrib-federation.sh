#!/bin/sh
# Fleet scraping with the shipped contrib/prometheus configuration: three
# neurond instances (different model instance types and seeds) on loopback,
# one real Prometheus scraping them through file_sd, and the utilization
# summed by Prometheus (a query and the recording rules) must match what the
# daemons' own /metrics say.
#
# The daemons run with a 1 h interval: after their start-up tick the values
# stay put, so every scrape sees the same figures and the comparison does not
# depend on tick timing.
. "$top_srcdir/tests/integration/service-lib.sh"
need prometheus
need curl
need python3

# Three instance types, as different as the catalog allows.
set -- $("$NEUROND" --list-instances | awk 'NR > 1 { print $1 }')
[ $# -ge 1 ] || fail "empty instance catalog"
m1=$1 m2=${2:-$1} m3=${3:-$1}
[ "$m3" = "$m1" ] && [ $# -ge 2 ] && m3=$2
mkdir -p "$TMP/prom/targets"
targets=
n=0
for spec in "$m1,seed=11" "$m2,seed=22" "$m3,seed=33"; do
        n=$((n + 1))
        start_neurond "d$n" --interval 1h --backend "model:$spec"
        eval "port$n=$PORT pid$n=$PID"
        targets="$targets \"127.0.0.1:$PORT\","
done
for i in 1 2 3; do
        eval "p=\$port$i"
        j=0
        until fetch "http://127.0.0.1:$p/healthz" | grep -q '"tick":[1-9]'; do
                j=$((j + 1)); [ $j -lt 100 ] || fail "daemon $i did not tick"; sleep 0.1
        done
        fetch "http://127.0.0.1:$p/metrics" >"$TMP/metrics$i.txt"
done

# The shipped configuration, with test intervals, our targets and rules.
cp "$top_srcdir/contrib/prometheus/prometheus.yml" "$top_srcdir/contrib/prometheus/neurond-recording.yml" \
        "$top_srcdir/contrib/prometheus/neurond-alerts.yml" "$TMP/prom/"
sed -i -e 's/scrape_interval: 15s/scrape_interval: 1s/' -e 's/evaluation_interval: 15s/evaluation_interval: 1s/' \
        -e 's/scrape_timeout: 10s/scrape_timeout: 1s/' -e 's/refresh_interval: 1m/refresh_interval: 1s/' \
        "$TMP/prom/prometheus.yml"
! grep -Eq '(interval|timeout): *[0-9]*[mh]|(interval|timeout): *[0-9]{2,}s' "$TMP/prom/prometheus.yml" ||
        fail "contrib/prometheus/prometheus.yml changed its intervals; adjust this test's substitutions"
echo "- targets: [${targets%,} ]" >"$TMP/prom/targets/test.yml"
pport=$(free_port)
prometheus --config.file="$TMP/prom/prometheus.yml" --storage.tsdb.path="$TMP/tsdb" \
        --web.listen-address="127.0.0.1:$pport" --log.level=warn >"$TMP/prom.log" 2>&1 &
ppid=$!
PIDS="$PIDS $ppid"
api=http://127.0.0.1:$pport/api/v1

# query EXPR: prints "value" of a single-sample instant vector, or "count:N"
# lines for vectors of other sizes, as "labels value" lines.
query() {
        curl -sS --max-time 5 --get --data-urlencode "query=$1" "$api/query" 2>/dev/null | python3 -c '
import json, sys
try:
    r = json.load(sys.stdin)["data"]["result"]
except Exception:
    sys.exit(0)
for s in r:
    print(s["metric"].get("instance", "-"), s["value"][1])'
}
# wait_query EXPR WANT: waits up to 60 s until EXPR yields the single value WANT.
wait_query() {
        j=0
        while [ "$(query "$1" | awk '{ print $2 }')" != "$2" ]; do
                j=$((j + 1))
                [ $j -le 300 ] || { cat "$TMP/prom.log" >&2; fail "Prometheus: '$1' never became $2 (now: $(query "$1"))"; }
                sleep 0.2
        done
}

cores=$(cat "$TMP"/metrics?.txt | grep -c '^neuroncore_utilization_ratio{')
wait_query 'count(up{job="neurond"} == 1)' 3
wait_query 'count(neuroncore_utilization_ratio)' "$cores"
wait_query 'count(instance:neuroncore_utilization_ratio:sum)' 3

# The daemons' own figures, per instance and in total.
for i in 1 2 3; do
        eval "p=\$port$i"
        awk -v inst="127.0.0.1:$p" '/^neuroncore_utilization_ratio\{/ { s += $2 } END { printf "%s %.15g\n", inst, s }' \
                "$TMP/metrics$i.txt"
done | sort >"$TMP/own.txt"
awk '{ s += $2 } END { printf "%.15g\n", s }' "$TMP/own.txt" >"$TMP/own-total.txt"

query 'sum(neuroncore_utilization_ratio)' | awk '{ print $2 }' >"$TMP/prom-total.txt"
query 'instance:neuroncore_utilization_ratio:sum' | sort >"$TMP/prom.txt"
echo "daemons:"; cat "$TMP/own.txt"; echo "total $(cat "$TMP/own-total.txt")"
echo "prometheus:"; cat "$TMP/prom.txt"; echo "total $(cat "$TMP/prom-total.txt")"

python3 - "$TMP/own.txt" "$TMP/prom.txt" "$TMP/own-total.txt" "$TMP/prom-total.txt" <<'PY' || fail "Prometheus's sums differ from the daemons'"
import sys
def table(path):
    return {l.split()[0]: float(l.split()[1]) for l in open(path) if l.strip()}
own, prom = table(sys.argv[1]), table(sys.argv[2])
own_total = float(open(sys.argv[3]).read())
prom_total = float(open(sys.argv[4]).read())
close = lambda a, b: abs(a - b) <= 1e-9 * max(1.0, abs(a))
ok = own.keys() == prom.keys() and all(close(own[k], prom[k]) for k in own) and close(own_total, prom_total)
sys.exit(0 if ok else 1)
PY

kill -TERM "$ppid"; wait "$ppid" || fail "Prometheus did not stop cleanly"
PIDS=$(echo "$PIDS" | sed "s/ $ppid//")
for i in 1 2 3; do eval "stop_neurond \$pid$i"; done
echo "Prometheus summed $cores cores over 3 daemons ($m1, $m2, $m3) to the daemons' own figures"
