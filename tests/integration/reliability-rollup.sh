#!/bin/sh
# SIGTERM while a rollup runs, over three restarts on one database. The
# largest model (8,402 series with the host's) compacts and rolls up an
# hour that ended over at least three ticks, a slice a tick (a slice is
# 200,000 samples, and a series costs 64 besides its samples). Each run's
# wall clock starts shortly before an hour ends, an hour after the last
# run's (the test-only clock shim), so runs never share an hour; the test
# holds the daemon's clock and drives it 20 s a tick to the tick before
# the hour ends (/api/v1/admin/ticks), lets run % 3 of the hour's rollup
# ticks pass, runs one more and sends SIGTERM when the daemon logs (at
# debug level) that its rollup started. The loop reads the signal once
# that tick is stored, so the stop comes with the hour partly compacted,
# and compacts for 5 s at most. Each time: exit 0 within 20 s (systemd's
# TimeoutStopSec; times SLOW under a wrapper, as every bound), the tick
# whose rollup ran stored before the stop, PRAGMA integrity_check ok,
# nothing left in the open-chunk table, head chunks only in hours still
# pending, the raw tier and the 1 min and 1 h rollups counting the same
# samples for every series and hour, and a series of every tick holding
# one sample of each tick of every run: none lost or counted twice.
#
# A stop with a backlog of pending hours larger than 5 s of compaction, to
# which that bound leaves hours pending, is pinned by test-store-tiers
# (store_close__backlog__compacts_until_its_deadline), on a clock the test
# moves: a daemon builds such a backlog only after hours of ticks, which
# under valgrind take hours.
. "$(dirname "$0")/lib.sh"
need curl
need sqlite3
[ -f "${CLOCK_SHIM:-}" ] || skip "the clock shim is not built"

db=$TEST_TMP/rollup.db
offset=$TEST_TMP/clock-offset
echo 0 >"$offset"
wrap_neurond "env ASAN_OPTIONS=\${ASAN_OPTIONS:-}:verify_asan_link_order=0 LD_PRELOAD=$CLOCK_SHIM NEUROND_CLOCK_SHIM=$offset"

# Each run's clock starts this many seconds before its hour ends: more than
# start_daemon waits for the daemon's start-up, whose first tick is stamped
# before it logs its port.
lead=$((20 * SLOW + 30))
first_end=$((($(date +%s) + lead) / 3600 * 3600 + 3600))

# ms_of STAMP: the milliseconds of an admin answer's stamp (three decimals).
ms_of() {
  echo "${1%.*}${1#*.}"
}
# sql QUERY: one value from the stopped daemon's database.
sql() {
  sqlite3 "$db" "$1" || fail "sqlite3: $1"
}
# line_of PATTERN: the number of the daemon log's first line matching it, or 0.
line_of() {
  _line=$(grep -n -m 1 -- "$1" "$DAEMON_LOG" | cut -d: -f1)
  echo "${_line:-0}"
}
# disagreeing TIER COLUMN: up to 5 series and hours whose rollups in TIER
# (its hour in COLUMN) count other samples than their raw chunk.
disagreeing() {
  sql "SELECT series_id, b, sum(raw), sum(rolled) FROM (
      SELECT series_id, hour AS b, count AS raw, 0 AS rolled FROM chunks
      UNION ALL SELECT series_id, $2, 0, count FROM $1)
    GROUP BY 1, 2 HAVING sum(raw) != sum(rolled) LIMIT 5"
}

stored=0 # ticks stored by the runs so far
for run in 0 1 2; do
  hour_end=$((first_end + run * 3600))
  echo $((hour_end - lead - $(date +%s))) >"$offset"
  start_daemon rollup --backend "model:trn3-gen2-ultraserver,seed=$run" --interval 20s --log-level debug --enable-admin
  hold_ticks
  start=$(ms_of "$TICK_TIME")
  [ "$start" -lt $((hour_end * 1000)) ] || fail "run $run: the daemon's first tick came after its hour ended"
  # Ticks are stamped 20 s apart from the one held: the k-th after it is
  # the first in the next hour, and rolls the hour up.
  k=$(((hour_end * 1000 - start + 19999) / 20000))
  [ "$k" -eq 1 ] || run_ticks $((k - 1))
  [ $((run % 3)) -eq 0 ] || run_ticks $((run % 3))
  target=$((TICK + 1))
  start_helper curl -s -o /dev/null --max-time $((300 * SLOW)) -X POST "$URL/api/v1/admin/ticks?run=1"
  ticking=$HELPER_PID
  wait_until 60 file_has "$DAEMON_LOG" "debug: tick $target: rollup of an hour that ended started" ||
    fail "run $run: tick $target did not roll up"
  kill -TERM "$DAEMON_PID"
  signalled=$(date +%s)
  when=during
  [ "$(line_of "debug: tick $target: stored with its rollup")" -eq 0 ] || when="just after"
  expect_clean_exit rollup
  took=$(($(date +%s) - signalled))
  wait_helper "$ticking" || true
  stored_at=$(line_of "debug: tick $target: stored with its rollup")
  stopping_at=$(line_of "received SIGTERM, stopping")
  if [ "$stored_at" -eq 0 ] || [ "$stored_at" -gt "$stopping_at" ]; then
    fail "run $run: tick $target, whose rollup was running, was not stored before the stop"
  fi
  stored=$((stored + target))

  [ "$(sql "PRAGMA integrity_check")" = ok ] || fail "run $run: integrity_check failed"
  # A clean stop leaves head chunks only in hours it had no time to
  # compact, and those stay pending for the next start.
  left=$(sql "SELECT (SELECT count(*) FROM recent) + (SELECT count(*) FROM head
    WHERE start_ts / 3600000 * 3600000 NOT IN (SELECT hour FROM pending))")
  [ "$left" = 0 ] || fail "run $run: $left ticks or head chunks of compacted hours left after a clean stop"
  # Every compacted series and hour: rollups of exactly its chunk.
  bad=$(disagreeing rollup_1m hour) || fail "run $run: sqlite3 could not compare the tiers"
  [ -z "$bad" ] || fail "run $run: rollup_1m disagrees with the raw tier (series|hour|raw|rollup): $bad"
  bad=$(disagreeing rollup_1h ts) || fail "run $run: sqlite3 could not compare the tiers"
  [ -z "$bad" ] || fail "run $run: rollup_1h disagrees with the raw tier (series|hour|raw|rollup): $bad"
  # A series of every tick, in chunks or head chunks: every tick once.
  series=$(sql "SELECT (SELECT coalesce(sum(count), 0) FROM chunks WHERE series_id = s.id) +
      (SELECT coalesce(sum(count), 0) FROM head WHERE series_id = s.id) FROM series s
    WHERE metric = 'neuron_device_memory_total_bytes' AND json_extract(labels, '$.neuron_device') = '0'")
  [ "$series" = "$stored" ] || fail "run $run: device 0's memory total has $series samples, the runs stored $stored ticks"
  echo "run $run: SIGTERM $when the rollup of tick $target, slice $((run % 3 + 1)) of the hour's; exit 0 after $took s;" \
    "file intact, tiers agree over $(sql "SELECT sum(count) FROM chunks") raw samples;" \
    "$(sql "SELECT count(*) FROM pending") hours pending"
done
echo "reliability-rollup: ok"
