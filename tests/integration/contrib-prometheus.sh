#!/bin/sh
# contrib/prometheus: the scrape configuration and the rules pass promtool's
# checks, the rule unit tests (of the alerts and the fleet recording rules)
# pass, and every alert has unit tests that expect it both silent and firing.
. "$(dirname "$0")/lib.sh"
need promtool

dir=$top_srcdir/contrib/prometheus
promtool check config "$dir/prometheus.yml" || fail "promtool check config"
promtool check rules "$dir/neurond-recording.yml" "$dir/neurond-alerts.yml" "$dir/neurond-fleet-recording.yml" ||
        fail "promtool check rules"
(cd "$dir" && promtool test rules tests/neurond-alerts.test.yml tests/neurond-fleet.test.yml) || fail "promtool test rules"

tests=$dir/tests/neurond-alerts.test.yml
alerts=$(sed -n 's/^ *- alert: *\([A-Za-z0-9_]*\).*/\1/p' "$dir/neurond-alerts.yml")
[ -n "$alerts" ] || fail "no alerts found"
for a in $alerts; do
        # Each alert is evaluated at least twice: once silent, once firing.
        n=$(grep -c "alertname: $a\$" "$tests" || true)
        [ "$n" -ge 2 ] || fail "alert $a has $n evaluations in the unit tests, want a silent and a firing one"
        awk -v a="$a" '$0 ~ "alertname: " a "$" { getline; if ($0 ~ /exp_alerts:$/) found = 1 } END { exit !found }' \
                "$tests" || fail "alert $a is never expected to fire in the unit tests"
done
echo "contrib/prometheus: $(echo "$alerts" | wc -l) alerts tested"
