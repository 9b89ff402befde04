#!/bin/sh
# The database's file system fills up while clients scrape and query: the
# daemon keeps polling and serving (/metrics and /healthz answer 200, the
# latter "degraded"), reports neurond_storage_degraded 1, and writes again
# by itself once space is freed; then it stops cleanly with an intact file.
# The small file system is a tmpfs in a private mount namespace, filled
# to the last byte by a file that is then removed.
# This is the end-to-end case. The store's side, each write, sync, open
# and truncate of a workload failing in turn (a full disk among them), is
# tests/unit/test-store-faults.c.
. "$(dirname "$0")/lib.sh"
need curl
need sqlite3

mount_small_tmpfs 48m

start_daemon --backend model:trn1.32xlarge,seed=9,speed=60 --interval 1s --db "$TEST_TMP/small/neurond.db"
sqlite3 "$TEST_TMP/small/neurond.db" .tables | grep -q recent || skip "this build's store has no degraded mode"

scrape_ok() {
  [ "$(http_status /metrics)" = 200 ] || fail "/metrics not 200 ($1)"
  [ "$(http_status '/api/v1/query_range?metric=neuroncore_utilization_ratio&neuroncore=0&step=10s')" = 200 ] ||
    fail "query_range not 200 ($1)"
}

# Fill the file system to the last byte; the daemon's next writes fail.
http /healthz | grep -q '"status":"ok"' || fail "/healthz before the disk filled: $(http /healthz)"
dd if=/dev/zero of="$TEST_TMP/small/filler" bs=64k 2>/dev/null || true
# serving_and_degraded IS WHEN: the scrapes and queries answer, and
# neurond_storage_degraded is IS.
serving_and_degraded() {
  scrape_ok "$2"
  metric_is neurond_storage_degraded "$1"
}
fill_start=$(date +%s)
wait_until 30 serving_and_degraded 1 filling ||
  fail "the file system did not fill in time ($(df -k "$TEST_TMP/small" | tail -1))"
echo "full after about $(($(date +%s) - fill_start)) s: $(df -k "$TEST_TMP/small" | tail -1)"
t1=$(healthz_tick)
for n in 1 2 3 4 5 6 7 8 9 10; do
  scrape_ok "full"
  sleep 0.2
done
http /healthz >"$TEST_TMP/health"
grep -q '"status":"degraded"' "$TEST_TMP/health" || fail "/healthz while full: $(cat "$TEST_TMP/health")"
t2=$(sed -n 's/.*"tick":\([0-9]*\).*/\1/p' "$TEST_TMP/health")
[ "$t2" -gt "$t1" ] || fail "polling stopped while the disk was full ($t1, then $t2)"
errors=$(metric_value neurond_store_errors_total)
[ "${errors:-0}" -gt 0 ] || fail "no write errors counted"

rm "$TEST_TMP/small/filler"
wait_until 30 serving_and_degraded 0 recovering || fail "writing did not resume in time after freeing space"
[ "$(http_status /healthz)" = 200 ] || fail "/healthz after recovery"
http /healthz | grep -q '"status":"ok"' || fail "/healthz not ok after recovery: $(http /healthz)"
stop_daemon
[ "$(sqlite3 "$TEST_TMP/small/neurond.db" 'PRAGMA integrity_check')" = ok ] || fail "integrity_check"
echo "reliability-diskfull: ok ($errors write errors while full)"
