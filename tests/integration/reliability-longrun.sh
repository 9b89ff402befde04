#!/bin/sh
# Thirty simulated days in about a minute (the model at speed=43200, one
# tick per two simulated minutes) with the default retention and size cap:
# raw chunks expire at 48 h (a whole hour at a time), the 1 min and 1 h
# rollups hold exactly the
# samples the raw tier held, the file stays under the cap, and queries over
# the whole range return one point per bucket that holds samples. The
# daemon is then stopped with SIGTERM while it rolls up, and must exit
# cleanly with an intact file.
. "$(dirname "$0")/lib.sh"
need curl
need python3
need sqlite3

start_daemon --backend model:trn1.2xlarge,seed=4,speed=43200 --interval 2m
sqlite3 "$TEST_TMP/neurond.db" .tables | grep -q rollup_1h || skip "this build's store has no rollups"

stamp() {
  http /api/v1/latest | sed -n 's/.*"timestamp":\([0-9]*\)\..*/\1/p'
}
days_passed() {
  now=$(stamp)
  [ -n "$now" ] && [ $((now - first)) -ge $(($1 * 86400)) ]
}
first=$(stamp)
run_start=$(date +%s)
wait_until 300 days_passed 30 || fail "30 simulated days took too long"
echo "30 simulated days in about $(($(date +%s) - run_start)) s"

python3 - "$TEST_TMP/neurond.db" "$PORT" <<'PY' || fail "long run: see above"
import json, sqlite3, sys, urllib.request
db, port = sys.argv[1], sys.argv[2]
# A reader next to the running daemon (WAL): one consistent snapshot.
con = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
con.execute("BEGIN")
H, M, DAY = 3600000, 60000, 86400000
sid, = con.execute("SELECT id FROM series WHERE metric = 'neuron_device_memory_total_bytes' "
                   "AND json_extract(labels, '$.neuron_device') = '0'").fetchone()
oldest_raw, newest = con.execute("SELECT min(start_ts), max(end_ts) FROM chunks").fetchone()
newest = max(newest, con.execute("SELECT coalesce(max(ts), 0) FROM recent").fetchone()[0])
problems = []
def check(ok, what):
    print(("ok    " if ok else "FAIL  ") + what)
    if not ok:
        problems.append(what)

# Raw data expired on time: nothing older than 48 h is kept (an hour's
# chunk goes once all of its hour is that old; expiry runs with every head
# chunk), and nothing younger than 47 h is gone: the 1 min tier counts no
# sample there that the raw tier lost. (A loaded machine skips ticks, so
# the oldest chunk itself may be younger than 47 h.)
age_h = (newest - oldest_raw) / H
check(age_h <= 49 + 10 / 60, f"oldest raw chunk {age_h:.2f} h before the newest tick (48 h retention)")
keep = (newest - 47 * H) // H * H + H
raw_kept = con.execute("SELECT sum(count) FROM chunks WHERE series_id = ? AND hour >= ?", (sid, keep)).fetchone()[0] or 0
m1_kept = con.execute("SELECT sum(count) FROM rollup_1m WHERE series_id = ? AND hour >= ?", (sid, keep)).fetchone()[0] or 0
check(raw_kept > 0 and raw_kept >= m1_kept, f"the last 47 h: raw {raw_kept} samples, 1 min tier {m1_kept} in its hours")
oldest_1m, = con.execute("SELECT min(hour) FROM rollup_1m").fetchone()
check((newest - oldest_1m) <= 30 * DAY + H, f"oldest 1 min row {(newest - oldest_1m) / DAY:.2f} d old (30 d retention)")

# Rollups complete: over whole hours the raw tier still covers, the three
# tiers count the same samples of the series.
lo = (oldest_raw // H + 1) * H
hi = (newest // H - 1) * H
raw = con.execute("SELECT sum(count) FROM chunks WHERE series_id = ? AND start_ts >= ? AND end_ts < ?",
                  (sid, lo, hi)).fetchone()[0] or 0
m1 = con.execute("SELECT sum(count) FROM rollup_1m WHERE series_id = ? AND hour >= ? AND hour < ?", (sid, lo, hi)).fetchone()[0]
h1 = con.execute("SELECT sum(count) FROM rollup_1h WHERE series_id = ? AND ts >= ? AND ts < ?", (sid, lo, hi)).fetchone()[0]
check(raw > 0 and raw == m1 == h1, f"samples {(hi - lo) // H} h back: raw {raw}, 1 min {m1}, 1 h {h1}")
first_1h, = con.execute("SELECT min(ts) FROM rollup_1h WHERE series_id = ?", (sid,)).fetchone()
hours = con.execute("SELECT count(*) FROM rollup_1h WHERE series_id = ? AND ts < ?", (sid, hi)).fetchone()[0]
# The loop skips ticks when it overruns (under valgrind or on a loaded
# machine), at times a whole simulated hour: the 1 h tier must still span
# the 30 days and hold a row for each hour the 1 min tier has samples in.
lo_1m = (oldest_1m // H + 1) * H
want = con.execute("SELECT count(*) FROM rollup_1m WHERE series_id = ? AND hour >= ? AND hour < ?",
                   (sid, lo_1m, hi)).fetchone()[0]
got = con.execute("SELECT count(*) FROM rollup_1h WHERE series_id = ? AND ts >= ? AND ts < ?",
                  (sid, lo_1m, hi)).fetchone()[0]
check(hi - first_1h >= 29 * DAY and got == want,
      f"{hours} hourly rows over {(hi - first_1h) / DAY:.1f} d; {got} in the hours the 1 min tier has samples in ({want})")

# The file stays under the default 1 GiB cap.
pages, = con.execute("PRAGMA page_count").fetchone()
size, = con.execute("PRAGMA page_size").fetchone()
check(pages * size <= 1 << 30, f"database {pages * size / 1e6:.1f} MB (cap 1 GiB)")

# Queries: one point per bucket holding samples, as the tiers say.
def points(start, end, step):
    url = (f"http://127.0.0.1:{port}/api/v1/query_range?metric=neuron_device_memory_total_bytes"
           f"&neuron_device=0&start={start / 1000:.3f}&end={end / 1000:.3f}&step={step}")
    d = json.load(urllib.request.urlopen(url, timeout=30))
    assert d["status"] == "success", d
    return len(d["data"]["result"][0]["values"]) if d["data"]["result"] else 0
n = points(first_1h, hi - 1, "1h")
check(n == hours, f"whole range at 1 h: {n} points, {hours} hourly rows")
days = con.execute("SELECT count(DISTINCT ts / ?) FROM rollup_1h WHERE series_id = ? AND ts < ?", (DAY, sid, hi)).fetchone()[0]
n = points(first_1h, hi - 1, "1d")
check(n == days, f"whole range at 1 d: {n} points, {days} days")
mins = con.execute("SELECT sum(minutes) FROM rollup_1m WHERE series_id = ? AND hour >= ? AND hour < ?",
                   (sid, hi - 24 * H, hi)).fetchone()[0]
n = points(hi - 24 * H, hi - 1, "1m")
check(n == mins, f"last day at 1 min: {n} points, {mins} minutes with samples")
sys.exit(1 if problems else 0)
PY

# SIGTERM while ticks every 3 ms roll up: a clean exit and an intact file.
stop_daemon
[ "$(sqlite3 "$TEST_TMP/neurond.db" 'PRAGMA integrity_check')" = ok ] || fail "integrity_check after SIGTERM"
echo "reliability-longrun: ok"
