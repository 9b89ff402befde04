#!/bin/sh
# A database that cannot be opened at start-up because its file system is
# full is not fatal: the daemon polls and serves /metrics with /healthz
# degraded and neurond_storage_degraded 1, answers range queries with 503,
# holds the ticks in memory, and opens the database by itself once space
# is freed, storing the ticks from before. The file system is a tmpfs in a
# private mount namespace.
# This is the end-to-end case. How the store tells each cause (full,
# read-only, out of inodes, or an operator's mistake) and recovers from it
# is tests/unit/test-store-faults.c; the daemon's exit status 2 for a
# missing directory or no permission is cli.sh.
. "$(dirname "$0")/lib.sh"
need curl
need sqlite3

mount_small_tmpfs 4m
DB=$TEST_TMP/small/neurond.db
QUERY='/api/v1/query_range?metric=neuroncore_utilization_ratio&neuroncore=0'

# A full file system: SQLite cannot write the new database's first page.
dd if=/dev/zero of="$TEST_TMP/small/filler" bs=64k 2>/dev/null || true
start=$(date +%s)
start_daemon --backend model:trn1.2xlarge,seed=3 --interval 100ms --db "$DB"
grep -q "cannot open database $DB: No space left on device; .*retrying" "$DAEMON_LOG" ||
  fail "start-up did not log the problem: $(cat "$DAEMON_LOG")"
[ "$(http_status /metrics)" = 200 ] || fail "/metrics not 200"
metric_is neurond_storage_degraded 1 || fail "neurond_storage_degraded is not 1"
http /healthz >"$TEST_TMP/health"
grep -q '"status":"degraded".*the database cannot be opened' "$TEST_TMP/health" ||
  fail "/healthz: $(cat "$TEST_TMP/health")"
[ "$(http_status "$QUERY")" = 503 ] || fail "query_range without a database not 503"
http "$QUERY" | grep -q '"error":"storage is unavailable' || fail "query_range body: $(http "$QUERY")"
[ "$(http_status /)" = 200 ] || fail "the dashboard is not served"
# Four seconds of ticks held in memory, to be found in the database later.
wait_until tick_at_least 40 || fail "polling stopped"
metric_is neurond_storage_degraded 1 || fail "the database opened too early"
held_before=$(date +%s)

# Space freed: the database opens by itself and holds the ticks from
# before it could be opened, one point per 100 ms tick; a clean stop
# leaves it intact.
rm "$TEST_TMP/small/filler"
wait_until 30 metric_is neurond_storage_degraded 0 || fail "the database did not open in time"
http /healthz | grep -q '"status":"ok"' || fail "/healthz not ok: $(http /healthz)"
grep -q "database opened" "$DAEMON_LOG" || fail "the late open was not logged"
held="$QUERY&step=100ms&start=$((start + 1))&end=$held_before"
points=$(http "$held" | grep -o '\[[0-9.]*,"' | wc -l)
[ "$points" -ge 10 ] || fail "the ticks held in memory were not stored: $(http "$held")"
stop_daemon
[ "$(sqlite3 "$DB" 'PRAGMA integrity_check')" = ok ] || fail "integrity_check"
echo "reliability-dbopen: ok ($points points from $((start + 1)) to $held_before, held in memory, are stored)"
