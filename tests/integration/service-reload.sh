#!/bin/sh
# SIGHUP re-reads the configuration: a new interval applies without losing
# stored data or the listening socket; a bad configuration is rejected and
# the running one kept.
. "$top_srcdir/tests/integration/service-lib.sh"
need curl
need python3

conf=$TMP/neurond.conf
printf '[neurond]\ninterval = 200ms\n' >"$conf"
start_neurond r --config "$conf" --backend model:trn1.2xlarge,seed=5
base=http://127.0.0.1:$PORT

interval() { fetch "$base/api/v1/status" | sed -n 's/.*"interval_seconds":\([0-9.]*\).*/\1/p'; }
points() {
        fetch "$base/api/v1/query_range?metric=neuroncore_utilization_ratio&start=$start&step=200ms" |
                python3 -c 'import json, sys; print(sum(len(r["values"]) for r in json.load(sys.stdin)["data"]["result"]))'
}
tick() { fetch "$base/healthz" | sed -n 's/.*"tick":\([0-9]*\).*/\1/p'; }

[ "$(interval)" = "0.200" ] || fail "interval before reload is $(interval), expected 0.200"
start=$(($(date +%s) - 60))
i=0
while [ "$(tick)" -lt 6 ]; do i=$((i + 1)); [ $i -lt 100 ] || fail "no ticks"; sleep 0.1; done
before=$(points)
[ "$before" -ge 3 ] || fail "expected stored points before the reload, got $before"

printf '[neurond]\ninterval = 300ms\nlog_level = debug\n' >"$conf"
kill -HUP "$PID"
wait_for "$TMP/r.log" 'reloaded configuration from .*interval 300ms'
[ "$(interval)" = "0.300" ] || fail "interval after reload is $(interval), expected 0.300"
t=$(tick)
i=0
while [ "$(tick)" -le "$t" ]; do i=$((i + 1)); [ $i -lt 100 ] || fail "ticks stopped after the reload"; sleep 0.1; done
after=$(points)
[ "$after" -ge "$before" ] || fail "stored points went from $before to $after across the reload"
grep -q 'listening on port' "$TMP/r.log"
[ "$(grep -c 'listening on port' "$TMP/r.log")" -eq 1 ] || fail "the server was restarted by the reload"

printf '[neurond]\ninterval = soon\n' >"$conf"
kill -HUP "$PID"
wait_for "$TMP/r.log" "reload: .*interval: 'soon'.*keeping the running configuration"
[ "$(interval)" = "0.300" ] || fail "a rejected reload changed the interval to $(interval)"
fetch "$base/healthz" >/dev/null || fail "not healthy after a rejected reload"

stop_neurond "$PID"
echo "reload kept $after points and the socket on port $PORT"
