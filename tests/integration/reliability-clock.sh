#!/bin/sh
# The wall clock steps back by an hour, then forward by a day, under the
# running daemon (a test-only LD_PRELOAD shim moves CLOCK_REALTIME; the
# monotonic clock runs on): it keeps ticking, every tick is stored once
# with a timestamp after the previous one, queries return each tick once,
# and each step is logged once.
. "$(dirname "$0")/lib.sh"
need curl
need python3
[ -f "${CLOCK_SHIM:-}" ] || skip "the clock shim is not built"

offset=$TEST_TMP/clock-offset
echo 0 >"$offset"
printf '[neurond]\ninterval = 200ms\n' >"$TEST_TMP/neurond.conf"
# Only the daemon gets the shim. AddressSanitizer must not insist on
# coming first in the library list.
wrap_neurond "env ASAN_OPTIONS=\${ASAN_OPTIONS:-}:verify_asan_link_order=0 LD_PRELOAD=$CLOCK_SHIM NEUROND_CLOCK_SHIM=$offset"
start_daemon --backend model:trn1.2xlarge --config "$TEST_TMP/neurond.conf"

# wait_ticks N: waits until the loop has ticked N more times.
wait_ticks() {
  target=$(($(healthz_tick) + $1))
  wait_until 20 tick_at_least "$target" || fail "the loop stopped ticking (at tick $(healthz_tick), waiting for $target)"
}

wait_ticks 2
start=$(http /api/v1/latest | sed -n 's/.*"timestamp":\([0-9]*\)\..*/\1/p')
[ -n "$start" ] || fail "no timestamp in /api/v1/latest"

echo -3600 >"$offset"
wait_ticks 6
echo 86400 >"$offset"
wait_ticks 6

# Freeze the loop: a one-hour interval through a reload, so that the tick
# count and the stored data stay put while they are compared.
printf '[neurond]\ninterval = 1h\n' >"$TEST_TMP/neurond.conf"
kill -HUP "$DAEMON_PID"
wait_until file_has "$DAEMON_LOG" "reloaded configuration.*interval 3600000ms" || fail "reload not logged"
total=$(healthz_tick)

# /api/v1/latest follows the clock stepped forward.
latest=$(http /api/v1/latest | sed -n 's/.*"timestamp":\([0-9]*\)\..*/\1/p')
[ "$latest" -ge $((start + 86400)) ] || fail "latest tick at $latest, not a day after $start"

# Each tick once, in order: one point per tick in 1 ms buckets, the hour
# back stamped on the original timeline, the day forward on the new one.
python3 - "$PORT" "$start" "$total" <<'PY' || fail "stored timestamps are wrong (see above)"
import json, sys, urllib.request
port, start, total = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
def points(first, last):
    """Points of one series from first to last (seconds), 10 s per query."""
    out = []
    for t in range(first, last, 10):
        url = (f"http://127.0.0.1:{port}/api/v1/query_range?metric=neuron_device_memory_total_bytes"
               f"&neuron_device=0&step=1ms&start={t}&end={t + 9.999}")
        d = json.load(urllib.request.urlopen(url, timeout=10))
        assert d["status"] == "success", d
        r = d["data"]["result"]
        out += [float(p[0]) for p in r[0]["values"]] if r else []
    return out
before, after = points(start - 10, start + 120), points(start + 86400 - 10, start + 86400 + 120)
back = points(start - 3600 - 10, start - 3600 + 120)
print(f"ticks {total}: {len(before)} on the first timeline, {len(after)} a day ahead, {len(back)} an hour back")
stamps = before + after
ok = len(stamps) == total and not back and all(b > a for a, b in zip(stamps, stamps[1:]))
if not ok:
    print("stamps:", stamps)
sys.exit(0 if ok else 1)
PY

grep -c "wall clock jumped back by 3[56][0-9][0-9]\." "$DAEMON_LOG" | grep -qx 1 || fail "the step back was not logged exactly once"
grep -c "wall clock jumped forward by 86[34][0-9][0-9]\." "$DAEMON_LOG" | grep -qx 1 || fail "the step forward was not logged exactly once"
stop_daemon

echo "reliability-clock: ok ($total ticks)"
