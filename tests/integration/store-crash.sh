#!/bin/sh
# kill -9 during heavy ingest, 20 times over one database: every time the
# database passes PRAGMA integrity_check and holds the last tick the daemon
# published before the kill (so at most the tick in flight is lost), and
# the next start recovers it.
#
# The daemon runs ticks as fast as it can (/api/v1/admin/ticks asked for
# far more than a round lasts); each round kills it once it has run a
# random number of them, whatever instrument slows it, at whatever point of
# a tick it is then: writing a tick, head chunks and retention (every 30
# ticks), the slices of an hour's compaction (an hour is 1,800 ticks).
# STORE_CRASH_SEED replays a run's rounds.
. "$(dirname "$0")/lib.sh"
need sqlite3
need curl
need awk

db=$TEST_TMP/neurond.db # the database start_daemon opens, the same every start

seed=${STORE_CRASH_SEED:-$(od -An -N4 -tu4 /dev/urandom | tr -d ' ')}
echo "STORE_CRASH_SEED=$seed"
# Ticks each round runs at least before the kill, 1 to 400: 4,000 in all,
# over 2 simulated hours at 2 s (the test polls every 0.1 s; a fast daemon
# runs more).
counts=$(awk -v seed="$seed" 'BEGIN { srand(seed); for (i = 0; i < 20; i++) printf "%d ", 1 + int(rand() * 400) }')

start() {
        start_daemon --backend model:trn1.32xlarge --interval 2s --enable-admin
        hold_ticks
}
# The latest tick published, as one answer gives it: its number and stamp
# (milliseconds).
published() {
        http "/api/v1/latest?metric=neuron_device_up&neuron_device=0" --fail |
                sed -n 's/^{"status":"success","tick":\([0-9]*\),.*"timestamp":\([0-9]*\)\.\([0-9]*\).*/\1 \2\3/p'
}

round=0
for count in $counts; do
        round=$((round + 1))
        start
        # Ticks until the daemon is killed; the answer never comes.
        start_helper curl -s -o /dev/null --max-time $((300 * SLOW)) -X POST "$URL/api/v1/admin/ticks?run=100000"
        ticks=$HELPER_PID
        wait_until 60 tick_at_least $((TICK + count)) || fail "round $round: $count ticks did not run"
        last=$(published)
        [ -n "$last" ] || fail "round $round: no latest tick"
        kill -0 "$DAEMON_PID" 2>/dev/null || fail "round $round: the daemon died before the kill"
        kill_daemon
        wait_helper "$ticks" || true
        # A database sqlite3 cannot read is judged by the checks below,
        # not by set -e, which would end the test without the daemon's log.
        check=$(sqlite3 "$db" "PRAGMA integrity_check") || true
        [ "$check" = ok ] || fail "round $round: integrity_check says $check"
        # Ticks commit in order, so a stored tick at or after t proves t
        # stored: in recent, a head chunk or an hour's chunk.
        t=${last#* }
        have=$(sqlite3 "$db" "SELECT EXISTS (SELECT 1 FROM recent WHERE ts >= $t) OR
                EXISTS (SELECT 1 FROM head WHERE end_ts >= $t) OR EXISTS (SELECT 1 FROM chunks WHERE end_ts >= $t)") ||
                true
        [ "$have" = 1 ] || fail "round $round: tick ${last% *} at $t, published before the kill, is not in the database"
        echo "round $round: killed after tick ${last% *} ($count run), which the database holds"
done

# A last start recovers the open chunk and ticks on; a clean stop leaves
# every tick in chunks, and head chunks only in hours its bounded
# compaction (5 s) left pending for the next start.
start
run_ticks 10
curl -sf "$URL/healthz" | grep -q '"status":"ok"' || fail "healthz not ok after recovery"
stop_daemon
[ "$(sqlite3 "$db" "PRAGMA integrity_check")" = ok ] || fail "integrity_check after a clean stop"
[ "$(sqlite3 "$db" "SELECT count(*) FROM recent")" = 0 ] || fail "recent ticks left after a clean stop"
[ "$(sqlite3 "$db" "SELECT count(*) FROM head WHERE start_ts / 3600000 * 3600000 NOT IN (SELECT hour FROM pending)")" = 0 ] ||
        fail "head chunks of hours not pending left after a clean stop"
ls "$TEST_TMP" | grep -q damaged && fail "a database was set aside as damaged"
echo "20 kills: database intact, the last published tick stored every time"
exit 0
