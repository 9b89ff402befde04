#!/bin/sh
# Fleet scraping with the shipped contrib/prometheus configuration: three
# neurond instances (different model instance types and seeds) on loopback,
# the third serving HTTPS with basic auth for the configuration's TLS job,
# one real Prometheus scraping them through file_sd, and the utilization
# summed by Prometheus (a query and the recording rules) must match what the
# daemons' own /metrics say.
#
# The daemons' clocks are held (/api/v1/admin/ticks) right after they start:
# every scrape sees the held tick's figures, and the comparison does not
# depend on tick timing.
. "$(dirname "$0")/lib.sh"
need prometheus
need curl
need python3
make_tls_cert
make_users_file "$TEST_TMP/users" prometheus scrape-pw
# curl trusts the certificate from here on (the http helper, for the third daemon).
CURL_CA_BUNDLE=$TLS_CERT
export CURL_CA_BUNDLE
printf '[neurond]\ntls_cert = %s\ntls_key = %s\nbasic_auth_users = %s\nhealthz_open = true\n' \
        "$TLS_CERT" "$TLS_KEY" "$TEST_TMP/users" >"$TEST_TMP/tls.conf"

# Three instance types, as different as the catalog allows.
set -- $("$NEUROND" --list-instances | awk 'NR > 1 { print $1 }')
[ $# -ge 1 ] || fail "empty instance catalog"
m1=$1 m2=${2:-$1} m3=${3:-$1}
[ "$m3" = "$m1" ] && [ $# -ge 2 ] && m3=$2
mkdir -p "$TEST_TMP/prom/targets" "$TEST_TMP/prom/targets-tls"
start_daemon d1 --backend "model:$m1,seed=11" --enable-admin
start_daemon d2 --backend "model:$m2,seed=22" --enable-admin
echo "- targets: [\"127.0.0.1:$(daemon_port d1)\", \"127.0.0.1:$(daemon_port d2)\"]" >"$TEST_TMP/prom/targets/test.yml"
start_daemon d3 --backend "model:$m3,seed=33" --config "$TEST_TMP/tls.conf" --enable-admin
echo "- targets: [\"127.0.0.1:$(daemon_port d3)\"]" >"$TEST_TMP/prom/targets-tls/test.yml"
for i in 1 2 3; do
        URL=http://127.0.0.1:$(daemon_port "d$i")
        [ "$i" != 3 ] || URL=https://127.0.0.1:$(daemon_port d3)
        held=$(http '/api/v1/admin/ticks?hold=true' -X POST -u prometheus:scrape-pw) &&
                case $held in *'"held":true'*) ;; *) false ;; esac || fail "daemon $i: hold: $held"
        eval "held$i=\$(tick_of \"\$held\")"
        http /metrics --fail -u prometheus:scrape-pw >"$TEST_TMP/metrics$i.txt"
done

# The shipped configuration, with test intervals, our targets, rules, CA
# and password.
cp "$top_srcdir/contrib/prometheus/prometheus.yml" "$top_srcdir/contrib/prometheus/neurond-recording.yml" \
        "$top_srcdir/contrib/prometheus/neurond-alerts.yml" "$TEST_TMP/prom/"
cp "$TLS_CERT" "$TEST_TMP/prom/neurond-ca.pem"
printf 'scrape-pw\n' >"$TEST_TMP/prom/neurond-password"
sed -i -e 's/scrape_interval: 15s/scrape_interval: 1s/' -e 's/evaluation_interval: 15s/evaluation_interval: 1s/' \
        -e 's/scrape_timeout: 10s/scrape_timeout: 1s/' -e 's/refresh_interval: 1m/refresh_interval: 1s/' \
        "$TEST_TMP/prom/prometheus.yml"
! grep -Eq '(interval|timeout): *[0-9]*[mh]|(interval|timeout): *[0-9]{2,}s' "$TEST_TMP/prom/prometheus.yml" ||
        fail "contrib/prometheus/prometheus.yml changed its intervals; adjust this test's substitutions"
pport=$(free_port)
start_helper prometheus --config.file="$TEST_TMP/prom/prometheus.yml" --storage.tsdb.path="$TEST_TMP/tsdb" \
        --web.listen-address="127.0.0.1:$pport" --log.level=warn >"$TEST_TMP/prom.log" 2>&1
ppid=$HELPER_PID
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
# query_is EXPR WANT: EXPR yields the single value WANT.
query_is() {
        [ "$(query "$1" | awk '{ print $2 }')" = "$2" ]
}
# wait_query EXPR WANT: waits until query_is EXPR WANT.
wait_query() {
        wait_until 60 query_is "$1" "$2" ||
                { cat "$TEST_TMP/prom.log" >&2; fail "Prometheus: '$1' never became $2 (now: $(query "$1"))"; }
}

cores=$(cat "$TEST_TMP"/metrics?.txt | grep -c '^neuroncore_utilization_ratio{')
wait_query 'count(up{job="neurond"} == 1)' 3
wait_query 'count(neuroncore_utilization_ratio)' "$cores"
wait_query 'count(instance:neuroncore_utilization_ratio:sum)' 3

# The daemons' own figures, per instance and in total.
for i in 1 2 3; do
        awk -v inst="127.0.0.1:$(daemon_port "d$i")" '/^neuroncore_utilization_ratio\{/ { s += $2 } END { printf "%s %.15g\n", inst, s }' \
                "$TEST_TMP/metrics$i.txt"
done | sort >"$TEST_TMP/own.txt"
awk '{ s += $2 } END { printf "%.15g\n", s }' "$TEST_TMP/own.txt" >"$TEST_TMP/own-total.txt"

query 'sum(neuroncore_utilization_ratio)' | awk '{ print $2 }' >"$TEST_TMP/prom-total.txt"
query 'instance:neuroncore_utilization_ratio:sum' | sort >"$TEST_TMP/prom.txt"
echo "daemons:"; cat "$TEST_TMP/own.txt"; echo "total $(cat "$TEST_TMP/own-total.txt")"
echo "prometheus:"; cat "$TEST_TMP/prom.txt"; echo "total $(cat "$TEST_TMP/prom-total.txt")"

python3 - "$TEST_TMP/own.txt" "$TEST_TMP/prom.txt" "$TEST_TMP/own-total.txt" "$TEST_TMP/prom-total.txt" <<'PY' || fail "Prometheus's sums differ from the daemons'"
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

kill -TERM "$ppid"
wait_helper "$ppid" || fail "Prometheus did not stop cleanly"
# The clocks stayed held: every scrape was of the held tick.
for i in 1 2 3; do
        URL=http://127.0.0.1:$(daemon_port "d$i")
        [ "$i" != 3 ] || URL=https://127.0.0.1:$(daemon_port d3)
        [ "$(healthz_tick)" = "$(eval "echo \$held$i")" ] || fail "daemon $i ticked while held"
        stop_daemon "d$i"
done
echo "Prometheus summed $cores cores over 3 daemons ($m1, $m2, $m3) to the daemons' own figures"
