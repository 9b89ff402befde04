#!/bin/sh
# A collector that hangs, for a while and then for good, through the real
# sysfs backend: in a copy of the Trn1 fixture, reads of a pe_cntrs file,
# read every tick, block while a gate file exists, as a hung driver's would
# (tests/shim/hang-shim.c, LD_PRELOADed; a FIFO neurond would refuse to
# open). While it hangs /metrics and /healthz keep answering,
# /healthz turns "stalled" and the watchdog pings stop (systemd would
# restart the service). Released, the loop resumes on its grid and counts
# the intervals it skipped in neurond_tick_overruns_total. A SIGTERM sent
# while it hangs is taken as soon as the read returns.
. "$(dirname "$0")/lib.sh"
need_libsystemd
need python3
need curl
[ -f "${HANG_SHIM:-}" ] || skip "the hang shim is not built"

root=$TEST_TMP/root
mkdir "$root"
cp -R "$top_srcdir/tests/data/trn1/." "$root"
chmod -R u+w "$root" # make distcheck's source tree is read-only
gate=$TEST_TMP/gate

notify=$TEST_TMP/notify.txt
start_helper python3 "$top_srcdir/tests/integration/notify-listen.py" "$TEST_TMP/notify.sock" "$notify" 90
listener=$HELPER_PID
wait_until 20 file_has "$notify" BOUND || fail "the notification listener did not start"

# A watchdog ping every 300 ms; WATCHDOG_PID must be the daemon's own pid.
wrap_neurond "env NOTIFY_SOCKET=$TEST_TMP/notify.sock WATCHDOG_PID=\$\$ WATCHDOG_USEC=600000 \
ASAN_OPTIONS=\${ASAN_OPTIONS:-}:verify_asan_link_order=0 LD_PRELOAD=$HANG_SHIM NEUROND_HANG_GATE=$gate \
NEUROND_HANG_PATH=/neuron0/neuron_core0/stats/tensor_engine/pe_cntrs"
start_daemon h --backend "sysfs:$root" --interval 100ms --log-level debug
wait_until 20 file_has "$notify" '^WATCHDOG=1' || fail "no watchdog ping"

# healthz: the body; its status code in $TEST_TMP/code.
healthz() { curl -sS --max-time 5 -o "$TEST_TMP/healthz" -w '%{http_code}' "$URL/healthz" >"$TEST_TMP/code"; cat "$TEST_TMP/healthz"; }
tick() { healthz | sed -n 's/.*"tick":\([0-9]*\).*/\1/p'; }
overruns() { metric_value neurond_tick_overruns_total; }
pings() { grep -c '^WATCHDOG=1' "$notify" || true; }

# hang: the next read of pe_cntrs blocks.
hang() {
        : >"$gate"
}
# release: the blocked read goes on and reads the file's text, so the hung
# tick ends with a valid reading.
release() {
        rm "$gate"
}
# wait_stalled: /healthz answers while the loop hangs, and says so once the
# last tick is three intervals (plus 2 s) old.
wait_stalled() {
        wait_until 20 stalled || fail "/healthz never said stalled: $(cat "$TEST_TMP/healthz")"
        [ "$(cat "$TEST_TMP/code")" = 503 ] || fail "/healthz stalled with status $(cat "$TEST_TMP/code"), expected 503"
        grep -q '"error":"the poll loop has not completed a tick recently"' "$TEST_TMP/healthz" ||
                fail "/healthz stalled without an error: $(cat "$TEST_TMP/healthz")"
}
stalled() { healthz | grep -q '"status":"stalled"'; }
# no_pings: no watchdog ping for a second, over three ping periods.
no_pings() {
        n=$(pings)
        sleep 1
        [ "$(pings)" -eq "$n" ] || fail "watchdog pings went on while the loop hung"
}

# 1. A hang for a while.
before_tick=$(tick)
before_overruns=$(overruns)
[ -n "$before_tick" ] && [ -n "$before_overruns" ] || fail "no tick or overrun count before the hang"
hang
wait_stalled
stuck_tick=$(tick)
no_pings
http /metrics --fail >"$TEST_TMP/metrics" || fail "/metrics did not answer while the loop hung"
grep -q '^neuron_device_up{neuron_device="0"} 1' "$TEST_TMP/metrics" || fail "/metrics lost the last tick's values"
[ "$(tick)" = "$stuck_tick" ] || fail "ticks completed while the collector hung"
release
# The hung tick completes, then the next one counts the skipped intervals.
resumed() { [ "$(tick)" -ge $((stuck_tick + 3)) ] && grep -q '"status":"ok"' "$TEST_TMP/healthz"; }
wait_until 20 resumed || fail "the loop did not resume: $(cat "$TEST_TMP/healthz")"
after_overruns=$(overruns)
skipped=$((after_overruns - before_overruns))
# The hang lasted over 3.2 s (over 2.2 s to "stalled", which counts from the
# start of the tick before the hung one, then 1 s of no pings): at least 32
# intervals of 100 ms, all but the hung one skipped.
[ "$skipped" -ge 30 ] || fail "only $skipped intervals counted as overruns after a hang of over 3 s"
grep -q 'tick overran: [0-9]* intervals skipped' "$DAEMON_LOG" || fail "the overrun was not logged"
more_pings_than() { [ "$(pings)" -gt "$1" ]; }
wait_until more_pings_than "$(pings)" || fail "watchdog pings did not resume"
echo "a hang of over 3 s: $skipped intervals skipped, ticks resumed at $(tick), pings resumed"

# 2. A hang for good: stalled, silent towards the watchdog, still serving.
hang
wait_stalled
no_pings
kill -TERM "$DAEMON_PID"
sleep 0.5
kill -0 "$DAEMON_PID" 2>/dev/null || fail "the daemon exited with a read still hanging"
healthz | grep -q '"status":"stalled"' || fail "/healthz stopped answering after SIGTERM"
# The read returns: SIGTERM is taken, the daemon exits 0.
release
expect_clean_exit h
wait_helper "$listener" || fail "the notification listener failed"
grep -q '^STOPPING=1' "$notify" || fail "no STOPPING=1"
echo "a hang for good: /healthz stalled, no watchdog pings, SIGTERM taken when the read returned"
