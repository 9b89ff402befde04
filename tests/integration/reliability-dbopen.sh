#!/bin/sh
# A database that cannot be opened at start-up because of the file system
# (full, mounted read-only, out of inodes) is not fatal: the daemon polls and serves
# /metrics with /healthz degraded and neurond_storage_degraded 1, answers
# range queries with 503, holds the ticks in memory, and opens the
# database by itself when the file system recovers, storing the ticks from
# before. A missing directory or no permission is the operator's to fix:
# exit status 2.
# The file systems are tmpfs mounts in a private mount namespace.
. "$(dirname "$0")/lib.sh"
need curl
need sqlite3

mount_small_tmpfs 4m
DB=$TEST_TMP/small/neurond.db
QUERY='/api/v1/query_range?metric=neuroncore_utilization_ratio&neuroncore=0'

# The operator's mistake: no such directory. Exit 2 with the reason.
status=0
"$NEUROND" --allow-root --listen 127.0.0.1:0 --db "$TEST_TMP/missing/neurond.db" --backend model:trn1.2xlarge \
  >"$TEST_TMP/run.log" 2>&1 || status=$?
[ "$status" -eq 2 ] || fail "a missing database directory: exit status $status, expected 2"
grep -q "cannot open database.*No such file or directory" "$TEST_TMP/run.log" ||
  fail "no clear message for a missing directory: $(cat "$TEST_TMP/run.log")"

# Nor may the daemon's user write there (as root: run as nobody in the
# test's private directory, mode 0700; not under a wrapper such as
# valgrind's, whose log nobody could not write).
if [ "$(id -u)" = 0 ] && [ -z "${NEUROND_WRAPPER:-}" ] && command -v setpriv >/dev/null 2>&1; then
  status=0
  setpriv --reuid=65534 --regid=65534 --clear-groups "$NEUROND" --listen 127.0.0.1:0 --db "$TEST_TMP/neurond.db" \
    --backend model:trn1.2xlarge >"$TEST_TMP/run.log" 2>&1 || status=$?
  [ "$status" -eq 2 ] || fail "no permission for the database: exit status $status, expected 2"
  grep -q "cannot open database.*Permission denied" "$TEST_TMP/run.log" ||
    fail "no clear message for a permission error: $(cat "$TEST_TMP/run.log")"
  echo "no permission: exit 2"
fi

# degraded_start WHY REASON: the daemon runs without its database, and
# logged REASON.
degraded_start() {
  PHASE_START=$(date +%s)
  start_daemon --backend model:trn1.2xlarge,seed=3 --interval 100ms --db "$DB"
  grep -q "cannot open database $DB: $2; .*retrying" "$DAEMON_LOG" ||
    fail "$1: start-up did not log the problem: $(cat "$DAEMON_LOG")"
  [ "$(http_status /metrics)" = 200 ] || fail "$1: /metrics not 200"
  metric_is neurond_storage_degraded 1 || fail "$1: neurond_storage_degraded is not 1"
  http /healthz >"$TEST_TMP/health"
  grep -q '"status":"degraded".*the database cannot be opened' "$TEST_TMP/health" ||
    fail "$1: /healthz: $(cat "$TEST_TMP/health")"
  [ "$(http_status "$QUERY")" = 503 ] || fail "$1: query_range without a database not 503"
  http "$QUERY" | grep -q '"error":"storage is unavailable' || fail "$1: query_range body: $(http "$QUERY")"
  [ "$(http_status /)" = 200 ] || fail "$1: the dashboard is not served"
  # Four seconds of ticks held in memory, to be found in the database later.
  wait_until tick_at_least 40 || fail "$1: polling stopped"
  metric_is neurond_storage_degraded 1 || fail "$1: the database opened too early"
  HELD_BEFORE=$(date +%s)
}

# recovered WHY: the database opens by itself and holds the ticks from
# before it could be opened; a clean stop leaves it intact.
recovered() {
  wait_until 30 metric_is neurond_storage_degraded 0 || fail "$1: the database did not open in time"
  http /healthz | grep -q '"status":"ok"' || fail "$1: /healthz not ok: $(http /healthz)"
  grep -q "database opened" "$DAEMON_LOG" || fail "$1: the late open was not logged"
  # Ticks of this run from before the database opened (the previous run
  # stopped before PHASE_START), one point per 100 ms tick.
  held="$QUERY&step=100ms&start=$((PHASE_START + 1))&end=$HELD_BEFORE"
  points=$(http "$held" | grep -o '\[[0-9.]*,"' | wc -l)
  [ "$points" -ge 10 ] || fail "$1: the ticks held in memory were not stored: $(http "$held")"
  stop_daemon
  [ "$(sqlite3 "$DB" 'PRAGMA integrity_check')" = ok ] || fail "$1: integrity_check"
  echo "$1: ok ($points points from $((PHASE_START + 1)) to $HELD_BEFORE, held in memory, are stored)"
}

# A full file system: SQLite cannot write the new database's first page.
dd if=/dev/zero of="$TEST_TMP/small/filler" bs=64k 2>/dev/null || true
degraded_start "full" "No space left on device"
rm "$TEST_TMP/small/filler"
recovered "full"

# A read-only file system, with the database of the first run on it.
mount -o remount,ro "$TEST_TMP/small" || skip "cannot remount the tmpfs read-only"
degraded_start "read-only" "Read-only file system"
mount -o remount,rw "$TEST_TMP/small"
recovered "read-only"

# Out of inodes: the database is there, but not its -wal and -shm files.
mount -o remount,nr_inodes=64 "$TEST_TMP/small" || skip "cannot limit the tmpfs's inodes"
n=0
while [ $n -lt 100 ] && touch "$TEST_TMP/small/inode$n" 2>/dev/null; do
  n=$((n + 1))
done
degraded_start "out of inodes" "No space left on device"
rm "$TEST_TMP/small"/inode*
recovered "out of inodes"
echo "reliability-dbopen: ok"
