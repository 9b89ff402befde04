#!/bin/sh
# Thirty-one simulated days with the default retention and size cap: the
# test holds the daemon's clock and runs a tick every 20 simulated minutes
# (/api/v1/admin/ticks), 2,232 ticks, each stamped exactly one interval
# after the last. Then, counted from those stamps: raw chunks expired at
# 48 h (a whole hour at a time) and no later, 1 min rollups at 30 days, the
# 1 h rollups kept for all of the month; each tier holds exactly the run's
# ticks in the hours it covers, the rollups exactly what the raw tier held;
# the file stays under the cap; queries over the whole range return one
# point per bucket that holds ticks. The daemon is then stopped with
# SIGTERM while ticks roll up, and must exit cleanly with an intact file.
#
# The backend is sysfs over a tree the model wrote once (model-sysfs in
# tests/tools): the daemon reads the same files at every tick, and the
# host's own figures, so a month costs the store's work only. The model
# itself advances its simulation a second at a time: a month of it takes
# half an hour or more under valgrind.
. "$(dirname "$0")/lib.sh"
: "${MODEL_SYSFS:?run through make check}"
need curl
need python3
need sqlite3

"$MODEL_SYSFS" model:trn1.2xlarge "$TEST_TMP/tree" 1000 1 >/dev/null || fail "model-sysfs could not write a tree"
start_daemon --backend "sysfs:$TEST_TMP/tree" --interval 20m --enable-admin --log-level debug
sqlite3 "$TEST_TMP/neurond.db" .tables | grep -q rollup_1h || skip "this build's store has no rollups"
hold_ticks
first=$TICK_TIME
first_tick=$TICK
run_ticks 2232
echo "31 simulated days: ticks $first_tick to $TICK"

python3 - "$TEST_TMP/neurond.db" "$PORT" "$first" "$TICK_TIME" <<'PY' || fail "long run: see above"
import json, sqlite3, sys, urllib.request
db, port = sys.argv[1], sys.argv[2]
H, M, DAY, INTERVAL = 3600000, 60000, 86400000, 20 * 60000
first, newest = round(float(sys.argv[3]) * 1000), round(float(sys.argv[4]) * 1000)
# The run's ticks: the one held, then one every 20 minutes.
ticks = list(range(first, newest + 1, INTERVAL))
def ticks_in(lo, hi):
    return sum(lo <= t < hi for t in ticks)
def hour(t):
    return t - t % H
# A reader next to the running daemon (WAL), whose clock is held: one
# consistent snapshot.
con = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
con.execute("BEGIN")
sid, = con.execute("SELECT id FROM series WHERE metric = 'neuron_device_memory_total_bytes' "
                   "AND json_extract(labels, '$.neuron_device') = '0'").fetchone()
problems = []
def check(ok, what):
    print(("ok    " if ok else "FAIL  ") + what)
    if not ok:
        problems.append(what)
def one(sql, *args):
    return con.execute(sql, args).fetchone()[0]

# The newest tick is in recent (its head chunk is written with the next
# tick); the hour it is in is pending if earlier ticks of it are in head
# chunks, and every hour before is compacted.
stored = one("SELECT max(ts) FROM recent")
check(stored == newest, f"the newest tick stored at {stored}, the last run at {newest}")
pending = [h for h, in con.execute("SELECT hour FROM pending")]
want = [hour(newest)] if ticks_in(hour(newest), newest) else []
check(pending == want, f"pending hours {pending}, {want} from the ticks")

# Raw data expired on time: an hour's chunk goes once all of its hour is
# older than 48 h (expiry runs with every head chunk, so at the last tick),
# and no earlier: the oldest chunk left is that of the hour 48 h before
# the newest tick.
oldest_raw = one("SELECT min(hour) FROM chunks WHERE series_id = ?", sid)
check(oldest_raw == hour(newest - 48 * H),
      f"oldest raw chunk {(newest - oldest_raw) / H:.2f} h before the newest tick (48 h retention)")
oldest_1m = one("SELECT min(hour) FROM rollup_1m WHERE series_id = ?", sid)
check(oldest_1m == hour(newest - 30 * DAY),
      f"oldest 1 min row {(newest - oldest_1m) / DAY:.2f} d before the newest tick (30 d retention)")
first_1h = one("SELECT min(ts) FROM rollup_1h WHERE series_id = ?", sid)
check(first_1h == hour(first), f"the 1 h tier starts at the run's first hour ({(newest - first_1h) / DAY:.2f} d)")

# Rollups complete: in every hour a tier covers (all but the pending one),
# its count is the run's ticks in that hour, and the raw tier's too.
hi = hour(newest)
for tier, column, lo in (("chunks", "hour", oldest_raw), ("rollup_1m", "hour", oldest_1m), ("rollup_1h", "ts", first_1h)):
    rows = dict(con.execute(f"SELECT {column}, count FROM {tier} WHERE series_id = ? AND {column} < ?", (sid, hi)))
    want = {h: ticks_in(h, h + H) for h in range(lo, hi, H)}
    check(rows == want, f"{tier}: {len(rows)} hours, {sum(rows.values())} samples; the run has {sum(want.values())} "
          f"ticks in those {len(want)} hours")
raw = one("SELECT sum(count) FROM chunks WHERE series_id = ? AND hour < ?", sid, hi)
m1 = one("SELECT sum(count) FROM rollup_1m WHERE series_id = ? AND hour >= ? AND hour < ?", sid, oldest_raw, hi)
h1 = one("SELECT sum(count) FROM rollup_1h WHERE series_id = ? AND ts >= ? AND ts < ?", sid, oldest_raw, hi)
check(raw == m1 == h1, f"samples {(hi - oldest_raw) // H} h back: raw {raw}, 1 min {m1}, 1 h {h1}")

# The file stays under the default 1 GiB cap.
pages, = con.execute("PRAGMA page_count").fetchone()
size, = con.execute("PRAGMA page_size").fetchone()
check(pages * size <= 1 << 30, f"database {pages * size / 1e6:.1f} MB (cap 1 GiB)")

# Queries: one point per bucket holding ticks.
def points(start, end, step):
    url = (f"http://127.0.0.1:{port}/api/v1/query_range?metric=neuron_device_memory_total_bytes"
           f"&neuron_device=0&start={start / 1000:.3f}&end={end / 1000:.3f}&step={step}")
    d = json.load(urllib.request.urlopen(url, timeout=60))
    assert d["status"] == "success", d
    return len(d["data"]["result"][0]["values"]) if d["data"]["result"] else 0
def buckets(start, end, span):
    return len({t - t % span for t in ticks if start - start % span <= t <= end})
n, want = points(first_1h, hi - 1, "1h"), buckets(first_1h, hi - 1, H)
check(n == want, f"whole range at 1 h: {n} points, {want} hours with ticks")
n, want = points(first_1h, hi - 1, "1d"), buckets(first_1h, hi - 1, DAY)
check(n == want, f"whole range at 1 d: {n} points, {want} days with ticks")
n, want = points(hi - 24 * H, hi - 1, "1m"), buckets(hi - 24 * H, hi - 1, M)
check(n == want, f"last day at 1 min: {n} points, {want} minutes with ticks")
sys.exit(1 if problems else 0)
PY

# SIGTERM while ticks roll up (one in three ends an hour), sent when the
# daemon logs that a tick's rollup started: a clean exit and an intact
# file, every tick in chunks, head chunks only in hours still pending.
rollups() { grep -c ': rollup of an hour that ended started$' "$DAEMON_LOG"; }
rollups_over() { [ "$(rollups)" -gt "$1" ]; }
before=$(rollups)
start_helper curl -s -o /dev/null --max-time $((300 * SLOW)) -X POST "$URL/api/v1/admin/ticks?run=300"
ticks=$HELPER_PID
wait_until 60 rollups_over "$before" || fail "no rollup started in the ticks after the month"
stop_daemon
wait_helper "$ticks" || true
[ "$(sqlite3 "$TEST_TMP/neurond.db" 'PRAGMA integrity_check')" = ok ] || fail "integrity_check after SIGTERM"
[ "$(sqlite3 "$TEST_TMP/neurond.db" 'SELECT count(*) FROM recent')" = 0 ] || fail "recent ticks left after SIGTERM"
[ "$(sqlite3 "$TEST_TMP/neurond.db" "SELECT count(*) FROM head WHERE start_ts / 3600000 * 3600000 NOT IN (SELECT hour FROM pending)")" = 0 ] ||
  fail "head chunks of hours not pending left after SIGTERM"
echo "reliability-longrun: ok"
