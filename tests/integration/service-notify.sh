#!/bin/sh
# sd_notify without systemd: a datagram socket stands in as NOTIFY_SOCKET and
# must receive STATUS while starting, READY=1, WATCHDOG=1 from the loop,
# RELOADING=1 then READY=1 on SIGHUP, and STOPPING=1 last.
. "$(dirname "$0")/lib.sh"
need_libsystemd
need python3
need curl

notify=$TEST_TMP/notify.txt
start_helper python3 "$top_srcdir/tests/integration/notify-listen.py" "$TEST_TMP/notify.sock" "$notify" 30
listener=$HELPER_PID
wait_until 20 file_has "$notify" BOUND || fail "the notification listener did not start"

printf '[neurond]\ninterval = 200ms\n' >"$TEST_TMP/neurond.conf"
wrap_neurond "env NOTIFY_SOCKET=$TEST_TMP/notify.sock"
start_daemon --config "$TEST_TMP/neurond.conf" --backend model:trn1.2xlarge
wait_until 20 file_has "$notify" '^WATCHDOG=1' || fail "no WATCHDOG=1"
kill -HUP "$DAEMON_PID"
wait_until 20 file_has "$DAEMON_LOG" 'reloaded configuration' || fail "the reload was not logged"
wait_until 20 file_has "$notify" '^RELOADING=1' || fail "no RELOADING=1"
stop_daemon
wait_helper "$listener" || fail "the notification listener failed"

cat "$notify"
# first LINE: line number of the first line matching the pattern, or fail.
first() {
        n=$(grep -n -m 1 -- "$1" "$notify" | cut -d: -f1)
        [ -n "$n" ] || fail "no '$1' notification"
        echo "$n"
}
opening=$(first '^STATUS=Opening database')
ready=$(first '^READY=1')
watchdog=$(first '^WATCHDOG=1')
reloading=$(first '^RELOADING=1')
stopping=$(first '^STOPPING=1')
# READY=1 again after the reload.
ready2=$(awk -v from="$reloading" 'NR > from && /^READY=1/ { print NR; exit }' "$notify")
[ -n "$ready2" ] || fail "no READY=1 after RELOADING=1"
[ "$opening" -lt "$ready" ] || fail "STATUS while starting must come before READY=1"
[ "$ready" -lt "$watchdog" ] || fail "READY=1 must come before the first WATCHDOG=1"
[ "$watchdog" -lt "$reloading" ] || fail "WATCHDOG=1 must come before the reload"
[ "$ready2" -lt "$stopping" ] || fail "READY=1 after the reload must come before STOPPING=1"
[ "$(tail -n 2 "$notify" | head -n 1)" = "STATUS=Stopping" ] || fail "STOPPING=1 must be the last message"
grep -q '^STATUS=Polling every 200ms; tick [0-9]*; \([0-9]\) of \1 collectors up' "$notify" ||
        fail "the loop's STATUS line is missing"
echo "notifications arrived in order"
