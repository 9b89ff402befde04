#!/bin/sh
# contrib/grafana/neurond.json: every query parses as PromQL and names only
# metrics that a live neurond serves on /metrics (device model, the largest
# instance type of the catalog, so that every family has series).
. "$(dirname "$0")/lib.sh"
need python3
need curl
need promtool

dashboard=$top_srcdir/contrib/grafana/neurond.json
python3 "$top_srcdir/tests/integration/grafana-metrics.py" "$dashboard" "$TEST_TMP/queries.yml" >"$TEST_TMP/used" ||
        fail "could not read the dashboard's queries"
promtool check rules "$TEST_TMP/queries.yml" >/dev/null || { promtool check rules "$TEST_TMP/queries.yml"; fail "a dashboard query does not parse"; }
[ -s "$TEST_TMP/used" ] || fail "no metric names found in the dashboard"

instance=$("$NEUROND" --list-instances | awk 'NR > 1 { print $3, $1 }' | sort -n | tail -n 1 | cut -d' ' -f2)
start_daemon --backend "model:$instance"
http /metrics --fail | sed -n 's/^\([a-zA-Z_:][a-zA-Z0-9_:]*\)[{ ].*/\1/p' | sort -u >"$TEST_TMP/served"
stop_daemon

missing=$(comm -23 "$TEST_TMP/used" "$TEST_TMP/served")
[ -z "$missing" ] || fail "the dashboard uses metrics that $instance does not serve: $missing"
echo "neurond.json: $(wc -l <"$TEST_TMP/used") metrics, all served by model:$instance; $(grep -c 'record:' "$TEST_TMP/queries.yml") queries parse"
