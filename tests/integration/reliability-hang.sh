#!/bin/sh
# A collector that hangs, for a while and then for good, through the real
# sysfs backend: a copy of the Trn1 fixture whose pe_cntrs file, read every
# tick, is swapped for a FIFO without a writer, so the read blocks as a hung
# driver's would. While it hangs /metrics and /healthz keep answering,
# /healthz turns "stalled" and the watchdog pings stop (systemd would
# restart the service). Released, the loop resumes on its grid and counts
# the intervals it skipped in neurond_tick_overruns_total. A SIGTERM sent
# while it hangs is taken as soon as the read returns.
. "$top_srcdir/tests/integration/service-lib.sh"
need_libsystemd
need python3
need curl
need timeout

root=$TMP/root
mkdir "$root"
cp -R "$top_srcdir/tests/data/trn1/." "$root"
chmod -R u+w "$root" # make distcheck's source tree is read-only
pe=$root/devices/virtual/neuron_device/neuron0/neuron_core0/stats/tensor_engine/pe_cntrs
cp "$pe" "$TMP/pe_cntrs"
mkfifo "$TMP/fifo"

python3 "$top_srcdir/tests/integration/notify-listen.py" "$TMP/notify.sock" "$TMP/notify.txt" 90 &
listener=$!
PIDS="$PIDS $listener"
wait_for "$TMP/notify.txt" BOUND

# A watchdog ping every 300 ms; WATCHDOG_PID must be the daemon's own pid,
# which exec keeps.
NOTIFY_SOCKET="$TMP/notify.sock" sh -c 'WATCHDOG_PID=$$ WATCHDOG_USEC=600000 exec "$@"' sh \
        "$NEUROND" --allow-root --listen 127.0.0.1:0 --db "$TMP/h.db" --web-root "$WEB_ROOT" \
        --backend "sysfs:$root" --interval 100ms --log-level debug 2>"$TMP/h.log" &
pid=$!
PIDS="$PIDS $pid"
wait_for "$TMP/h.log" "listening on port"
PORT=$(sed -n 's/.*listening on port \([0-9]*\).*/\1/p' "$TMP/h.log" | head -n 1)
wait_for "$TMP/notify.txt" '^WATCHDOG=1'

# healthz: the body; its status code in $TMP/code.
healthz() { curl -sS --max-time 5 -o "$TMP/healthz" -w '%{http_code}' "http://127.0.0.1:$PORT/healthz" >"$TMP/code"; cat "$TMP/healthz"; }
tick() { healthz | sed -n 's/.*"tick":\([0-9]*\).*/\1/p'; }
overruns() { fetch "http://127.0.0.1:$PORT/metrics" | sed -n 's/^neurond_tick_overruns_total //p'; }
pings() { grep -c '^WATCHDOG=1' "$TMP/notify.txt" || true; }

# hang: the next read of pe_cntrs opens a FIFO nobody writes to.
hang() {
        ln "$TMP/fifo" "$pe.new"
        mv -f "$pe.new" "$pe"
}
# release: the file comes back, then the blocked open gets a writer and
# reads the file's text, so the hung tick ends with a valid reading.
release() {
        cp "$TMP/pe_cntrs" "$pe.new"
        mv -f "$pe.new" "$pe"
        timeout 10 sh -c 'cat "$1" >"$2"' sh "$TMP/pe_cntrs" "$TMP/fifo" || fail "the daemon was not blocked on the FIFO"
}
# wait_stalled: /healthz answers while the loop hangs, and says so once the
# last tick is three intervals (plus 2 s) old.
wait_stalled() {
        i=0
        until healthz | grep -q '"status":"stalled"'; do
                i=$((i + 1))
                [ $i -le 200 ] || fail "/healthz never said stalled: $(cat "$TMP/healthz")"
                sleep 0.1
        done
        [ "$(cat "$TMP/code")" = 503 ] || fail "/healthz stalled with status $(cat "$TMP/code"), expected 503"
        grep -q '"error":"the poll loop has not completed a tick recently"' "$TMP/healthz" ||
                fail "/healthz stalled without an error: $(cat "$TMP/healthz")"
}
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
fetch "http://127.0.0.1:$PORT/metrics" >"$TMP/metrics" || fail "/metrics did not answer while the loop hung"
grep -q '^neuron_device_up{neuron_device="0"} 1' "$TMP/metrics" || fail "/metrics lost the last tick's values"
[ "$(tick)" = "$stuck_tick" ] || fail "ticks completed while the collector hung"
release
# The hung tick completes, then the next one counts the skipped intervals.
i=0
until [ "$(tick)" -ge $((stuck_tick + 3)) ] && grep -q '"status":"ok"' "$TMP/healthz"; do
        i=$((i + 1))
        [ $i -le 200 ] || fail "the loop did not resume: $(cat "$TMP/healthz")"
        sleep 0.1
done
after_overruns=$(overruns)
skipped=$((after_overruns - before_overruns))
# The hang lasted over 3.2 s (over 2.2 s to "stalled", which counts from the
# start of the tick before the hung one, then 1 s of no pings): at least 32
# intervals of 100 ms, all but the hung one skipped.
[ "$skipped" -ge 30 ] || fail "only $skipped intervals counted as overruns after a hang of over 3 s"
grep -q 'tick overran: [0-9]* intervals skipped' "$TMP/h.log" || fail "the overrun was not logged"
n=$(pings)
wait_for_pings=0
until [ "$(pings)" -gt "$n" ]; do
        wait_for_pings=$((wait_for_pings + 1))
        [ $wait_for_pings -le 100 ] || fail "watchdog pings did not resume"
        sleep 0.1
done
echo "a hang of over 3 s: $skipped intervals skipped, ticks resumed at $(tick), pings resumed"

# 2. A hang for good: stalled, silent towards the watchdog, still serving.
hang
wait_stalled
no_pings
kill -TERM "$pid"
sleep 0.5
kill -0 "$pid" 2>/dev/null || fail "the daemon exited with a read still hanging"
healthz | grep -q '"status":"stalled"' || fail "/healthz stopped answering after SIGTERM"
# The read returns: SIGTERM is taken, the daemon exits 0.
release
rc=0
timeout 10 sh -c 'while kill -0 "$1" 2>/dev/null; do sleep 0.1; done' sh "$pid" || fail "no exit within 10 s of the release"
wait "$pid" || rc=$?
PIDS=$(echo "$PIDS" | sed "s/ $pid\$//; s/ $pid / /")
[ "$rc" -eq 0 ] || fail "neurond exited with $rc after SIGTERM"
wait "$listener" || fail "the notification listener failed"
PIDS=
grep -q '^STOPPING=1' "$TMP/notify.txt" || fail "no STOPPING=1"
echo "a hang for good: /healthz stalled, no watchdog pings, SIGTERM taken when the read returned"
