#!/bin/sh
# contrib/grafana/neurond.json: every query parses as PromQL and names only
# metrics that a live neurond serves on /metrics (device model, the largest
# instance type of the catalog, so that every family has series).
. "$top_srcdir/tests/integration/service-lib.sh"
need python3
need curl
need promtool

dashboard=$top_srcdir/contrib/grafana/neurond.json
python3 "$top_srcdir/tests/integration/grafana-metrics.py" "$dashboard" "$TMP/queries.yml" >"$TMP/used" ||
        fail "could not read the dashboard's queries"
promtool check rules "$TMP/queries.yml" >/dev/null || { promtool check rules "$TMP/queries.yml"; fail "a dashboard query does not parse"; }
[ -s "$TMP/used" ] || fail "no metric names found in the dashboard"

instance=$("$NEUROND" --list-instances | awk 'NR > 1 { print $3, $1 }' | sort -n | tail -n 1 | cut -d' ' -f2)
start_neurond g --backend "model:$instance"
fetch "http://127.0.0.1:$PORT/metrics" | sed -n 's/^\([a-zA-Z_:][a-zA-Z0-9_:]*\)[{ ].*/\1/p' | sort -u >"$TMP/served"
stop_neurond "$PID"

missing=$(comm -23 "$TMP/used" "$TMP/served")
[ -z "$missing" ] || fail "the dashboard uses metrics that $instance does not serve: $missing"
echo "neurond.json: $(wc -l <"$TMP/used") metrics, all served by model:$instance; $(grep -c 'record:' "$TMP/queries.yml") queries parse"
