#!/bin/sh
# SIGHUP re-reads the configuration: a new interval applies without losing
# stored data or the listening socket; a bad configuration is rejected and
# the running one kept.
. "$(dirname "$0")/lib.sh"
need curl
need python3

conf=$TEST_TMP/neurond.conf
printf '[neurond]\ninterval = 200ms\n' >"$conf"
start_daemon --config "$conf" --backend model:trn1.2xlarge,seed=5

interval() { http /api/v1/status --fail | sed -n 's/.*"interval_seconds":\([0-9.]*\).*/\1/p'; }
points() {
        http "/api/v1/query_range?metric=neuroncore_utilization_ratio&start=$start&step=200ms" --fail |
                python3 -c 'import json, sys; print(sum(len(r["values"]) for r in json.load(sys.stdin)["data"]["result"]))'
}

[ "$(interval)" = "0.200" ] || fail "interval before reload is $(interval), expected 0.200"
start=$(($(date +%s) - 60))
wait_until tick_at_least 6 || fail "no ticks"
before=$(points)
[ "$before" -ge 3 ] || fail "expected stored points before the reload, got $before"

printf '[neurond]\ninterval = 300ms\nlog_level = debug\n' >"$conf"
kill -HUP "$DAEMON_PID"
wait_until 20 file_has "$DAEMON_LOG" 'reloaded configuration from .*interval 300ms' || fail "the reload was not logged"
[ "$(interval)" = "0.300" ] || fail "interval after reload is $(interval), expected 0.300"
wait_until tick_at_least $(($(healthz_tick) + 1)) || fail "ticks stopped after the reload"
after=$(points)
[ "$after" -ge "$before" ] || fail "stored points went from $before to $after across the reload"
[ "$(grep -c 'listening on port' "$DAEMON_LOG")" -eq 1 ] || fail "the server was restarted by the reload"

printf '[neurond]\ninterval = soon\n' >"$conf"
kill -HUP "$DAEMON_PID"
wait_until 20 file_has "$DAEMON_LOG" "reload: .*interval: 'soon'.*keeping the running configuration" ||
        fail "the rejected reload was not logged"
[ "$(interval)" = "0.300" ] || fail "a rejected reload changed the interval to $(interval)"
http /healthz --fail >/dev/null || fail "not healthy after a rejected reload"

stop_daemon
echo "reload kept $after points and the socket on port $PORT"
