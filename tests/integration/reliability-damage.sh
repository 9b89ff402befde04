#!/bin/sh
# A database file damaged while the daemon runs: the scheduled
# PRAGMA quick_check (every second here) finds it, /healthz says degraded
# and neurond_storage_degraded is 1; the file is set aside, kept and named
# in the log, and a new one started that holds every tick made meanwhile;
# the daemon still holds the database's lock.
#
# To keep the degraded state long enough to see, the names the damaged
# file would get (neurond.db.damaged-<unix time>) are taken by directories
# at first, so setting it aside fails and is retried, as after any failed
# write, until the test frees them.
. "$(dirname "$0")/lib.sh"
need curl
need sqlite3

DB=$TEST_TMP/neurond.db
printf '[neurond]\nintegrity_check_interval = 1s\n' >"$TEST_TMP/check.conf"
start_daemon --config "$TEST_TMP/check.conf" --backend model:trn1.2xlarge,seed=4 --interval 200ms --enable-admin
run_ticks 10
http /healthz | grep -q '"status":"ok"' || fail "/healthz before the damage: $(http /healthz)"

# Every page in the file, then junk over all of it but the header.
sqlite3 -cmd '.timeout 5000' "$DB" 'PRAGMA wal_checkpoint(TRUNCATE)' >/dev/null || fail "checkpoint"
now=$(date +%s)
i=0
while [ $i -lt 120 ]; do
  mkdir "$DB.damaged-$((now + i))"
  i=$((i + 1))
done
size=$(stat -c %s "$DB")
head -c $((size - 100)) /dev/zero | tr '\000' '\245' |
  dd of="$DB" bs=64k seek=100 oflag=seek_bytes conv=notrunc 2>/dev/null || fail "damaging the file"

healthz_degraded() {
  http /healthz | grep -q '"status":"degraded"'
}
# The scheduled check (every second, on its own thread) finds the damage.
wait_until 10 healthz_degraded || fail "/healthz never said degraded: $(http /healthz)"
# /metrics is as of the latest tick: it says so from the next one.
run_ticks 1
metric_is neurond_storage_degraded 1 || fail "neurond_storage_degraded is not 1 at the tick after"
# From here on no tick goes to the damaged file: each waits in memory.
TICK_BEFORE=$TICK TIME_BEFORE=$TICK_TIME
# Still degraded ticks later: the file cannot be set aside yet.
run_ticks 20
healthz_degraded || fail "/healthz stopped saying degraded before the file could be set aside"
echo "damaged at tick $TICK_BEFORE: /healthz degraded"

# The lock holds through all this: a second daemon is refused.
status=0
"$NEUROND" --allow-root --listen 127.0.0.1:0 --db "$DB" --backend model:trn1.2xlarge >"$TEST_TMP/second.log" 2>&1 ||
  status=$?
[ "$status" -eq 2 ] || fail "a second daemon while the first recovers: exit $status: $(cat "$TEST_TMP/second.log")"

# Free the names: the file is set aside at the next retry.
rmdir "$DB".damaged-*
# Retried after 1, 2, 4 ... 64 ticks (the store's back-off).
ticks_until 130 metric_is neurond_storage_degraded 0 || fail "the daemon did not recover"
http /healthz | grep -q '"status":"ok"' || fail "/healthz after recovery: $(http /healthz)"
metric_is neurond_storage_damaged_databases_total 1 || fail "the damaged file is not counted"
aside=$(ls "$TEST_TMP" | grep '^neurond\.db\.damaged-[0-9]*$') || fail "the damaged file was not kept"
[ "$(echo "$aside" | wc -l)" -eq 1 ] || fail "more than one file set aside: $aside"
file_has "$DAEMON_LOG" "the database file was damaged: kept it as $DB.damaged-[0-9]* and started a new one" ||
  fail "the log does not name the file set aside"
[ "$(head -c 100 "$TEST_TMP/$aside" | head -c 15)" = "SQLite format 3" ] || fail "the kept file is not the damaged one"

# Every tick made since the damage was found is in the new file.
run_ticks 1
query="/api/v1/query_range?metric=neuron_device_up&neuron_device=0&start=$TIME_BEFORE&end=$TICK_TIME&step=10ms&agg=last"
stored=$(http "$query" --fail | grep -o '\[[0-9.]*,"' | wc -l)
made=$((TICK - TICK_BEFORE + 1))
[ "$stored" -eq "$made" ] || fail "ticks $TICK_BEFORE to $TICK: $made made, $stored stored"
echo "recovered: $aside kept, ticks $TICK_BEFORE to $TICK all stored ($stored)"
stop_daemon
[ "$(sqlite3 "$DB" 'PRAGMA integrity_check')" = ok ] || fail "the new database is not sound"
echo "reliability-damage: ok"
