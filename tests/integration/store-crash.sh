#!/bin/sh
# kill -9 during heavy ingest, 20 times over one database: every time the
# database passes PRAGMA integrity_check and holds the last tick the daemon
# published before the kill (so at most the tick in flight is lost), and
# the next start recovers it.
set -u
: "${NEUROND:=daemon/neurond}"
: "${WEB_ROOT:=web/static}"
command -v sqlite3 >/dev/null 2>&1 || { echo "sqlite3 not installed"; exit 77; }
command -v curl >/dev/null 2>&1 || { echo "curl not installed"; exit 77; }

tmp=$(mktemp -d)
pid=
cleanup() {
        [ -n "$pid" ] && kill -9 "$pid" 2>/dev/null
        rm -rf "$tmp"
}
trap cleanup EXIT
db=$tmp/neurond.db
fail() {
        echo "FAIL: $*"
        cat "$tmp/log" 2>/dev/null
        exit 1
}

start() {
        : >"$tmp/log"
        # 1000 simulated seconds per second: up to 1000 ticks a second, a chunk
        # every 0.3 s and a minute of rollups every 60 ms.
        "$NEUROND" --allow-root --listen 127.0.0.1:0 --db "$db" --backend "model:trn1.32xlarge,speed=1000" --interval 1s \
                --web-root "$WEB_ROOT" >"$tmp/log" 2>&1 &
        pid=$!
        port=
        for _ in $(seq 1 100); do
                port=$(sed -n 's/.*listening on port \([0-9]*\).*/\1/p' "$tmp/log" | head -n 1)
                [ -n "$port" ] && return 0
                kill -0 "$pid" 2>/dev/null || fail "neurond exited at start-up"
                sleep 0.1
        done
        fail "neurond did not log its port"
}
latest_ms() {
        curl -sf "http://127.0.0.1:$port/api/v1/latest?metric=neuron_device_up&neuron_device=0" |
                sed -n 's/.*"timestamp":\([0-9]*\)\.\([0-9]*\).*/\1\2/p'
}

for round in $(seq 1 20); do
        start
        # Let it ingest for a while that differs from round to round.
        sleep "0.$(( (round * 37) % 9 + 1 ))"
        t=$(latest_ms)
        [ -n "$t" ] || fail "round $round: no latest timestamp"
        kill -9 "$pid"
        wait "$pid" 2>/dev/null
        pid=
        check=$(sqlite3 "$db" "PRAGMA integrity_check")
        [ "$check" = ok ] || fail "round $round: integrity_check says $check"
        # Ticks commit in order, so a stored tick at or after t proves t
        # stored; the recent table only holds this run's ticks.
        have=$(sqlite3 "$db" "SELECT EXISTS (SELECT 1 FROM recent WHERE ts >= $t) OR EXISTS (SELECT 1 FROM chunks WHERE end_ts = $t)")
        [ "$have" = 1 ] || fail "round $round: the tick at $t published before the kill is not in the database"
done

# A last start recovers the open chunk; a clean stop leaves nothing behind.
start
sleep 0.5
curl -sf "http://127.0.0.1:$port/healthz" | grep -q '"status":"ok"' || fail "healthz not ok after recovery"
kill -TERM "$pid"
wait "$pid" || fail "neurond did not exit cleanly"
pid=
[ "$(sqlite3 "$db" "PRAGMA integrity_check")" = ok ] || fail "integrity_check after a clean stop"
[ "$(sqlite3 "$db" "SELECT count(*) FROM recent")" = 0 ] || fail "recent ticks left after a clean stop"
ls "$tmp" | grep -q damaged && fail "a database was set aside as damaged"
echo "20 kills: database intact, the last published tick stored every time"
exit 0
