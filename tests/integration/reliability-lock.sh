#!/bin/sh
# One daemon per database. While a daemon runs, a second one started on
# the same file exits with status 2 at once, naming the first one's pid,
# and writes nothing: the first stores every tick it makes. Once the first
# has stopped, the file is free again.
. "$(dirname "$0")/lib.sh"
need curl

DB=$TEST_TMP/shared.db
START=$(date +%s)
start_daemon first --db "$DB" --backend model:trn1.2xlarge,seed=5 --interval 200ms --enable-admin
FIRST_URL=$URL
FIRST_PID=$(daemon_pid first)
run_ticks 3

# Five tries at a second daemon, as a restart loop would make them, the
# first daemon ticking between them.
for try in 1 2 3 4 5; do
  "$NEUROND" --allow-root --listen 127.0.0.1:0 --web-root "$WEB_ROOT" --db "$DB" \
    --backend model:trn1.2xlarge,seed=6 --interval 100ms >"$TEST_TMP/second.log" 2>&1 &
  wait_exit 2 $! || fail "try $try: a second daemon on the same database runs: $(cat "$TEST_TMP/second.log")"
  [ "$EXIT_STATUS" -eq 2 ] ||
    fail "try $try: the second daemon exited with $EXIT_STATUS, expected 2: $(cat "$TEST_TMP/second.log")"
  grep -q "database $DB is in use by another neurond (pid $FIRST_PID, in $DB.lock)" "$TEST_TMP/second.log" ||
    fail "try $try: the refusal does not name the holder: $(cat "$TEST_TMP/second.log")"
  run_ticks 2
done
grep -q "$FIRST_PID" "$DB.lock" || fail "the lock file does not hold the first daemon's pid"

# The ticks made (MADE: the clock is held, so the latest tick is the last
# one run), the time of the last (LAST), and the points stored up to it
# (STORED), one per tick at a step of 10 ms.
URL=$FIRST_URL
MADE=$TICK
LAST=$(metric_value neurond_last_poll_timestamp_seconds)
query="/api/v1/query_range?metric=neuron_device_up&neuron_device=0&start=$((START - 1))&end=$LAST&step=10ms&agg=last"
http "$query" --fail | grep -o '\[[0-9.]*,"' >"$TEST_TMP/stored"
STORED=$(wc -l <"$TEST_TMP/stored")
[ "$MADE" -ge 13 ] || fail "only $MADE ticks made"
[ "$STORED" -eq "$MADE" ] || fail "the first daemon made $MADE ticks and stored $STORED"
echo "first daemon: $MADE ticks made, $STORED stored, while 5 others were refused"
metric_is neurond_store_errors_total 0 || fail "the first daemon's store failed"
stop_daemon first
[ ! -s "$DB.lock" ] || fail "the lock file still names a holder after a clean stop: $(cat "$DB.lock")"

# The file is free again: a new daemon takes it, with every tick of the
# first. (Its own first tick, stamped by the wall clock, which the first
# daemon's driven ticks ran ahead of, may fall among them.)
start_daemon third --db "$DB" --backend model:trn1.2xlarge,seed=5 --interval 200ms
grep -q "$(daemon_pid third)" "$DB.lock" || fail "the lock file does not hold the new daemon's pid"
http "$query" --fail | grep -o '\[[0-9.]*,"' >"$TEST_TMP/kept"
lost=$(comm -23 "$TEST_TMP/stored" "$TEST_TMP/kept" | wc -l)
[ "$lost" -eq 0 ] || fail "after a restart $lost of the $MADE ticks are gone"
stop_daemon third
echo "reliability-lock: ok"
