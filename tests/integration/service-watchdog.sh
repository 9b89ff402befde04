#!/bin/sh
# WatchdogSec= shorter than the poll interval: the loop must still ping
# WATCHDOG=1 every half watchdog period (WATCHDOG_USEC / 2), not only after
# ticks, or systemd would kill a healthy daemon that polls once an hour.
. "$(dirname "$0")/lib.sh"
need_libsystemd
need python3

notify=$TEST_TMP/notify.txt
start_helper python3 "$top_srcdir/tests/integration/notify-listen.py" "$TEST_TMP/notify.sock" "$notify" 30
wait_until 20 file_has "$notify" BOUND || fail "the notification listener did not start"

# WATCHDOG_PID must be the daemon's pid.
wrap_neurond "env NOTIFY_SOCKET=$TEST_TMP/notify.sock WATCHDOG_PID=\$\$ WATCHDOG_USEC=400000"
start_daemon --backend model:trn1.2xlarge --interval 1h

# One tick follows the start; everything after it is a ping without a tick.
pings_at_least() { [ "$(grep -c '^WATCHDOG=1' "$notify")" -ge "$1" ]; }
wait_until 20 pings_at_least 5 || { cat "$notify" >&2; fail "fewer than 5 watchdog pings with a 1 h interval"; }
grep '^STATUS=Polling every 3600000ms; tick 1;' "$notify" >/dev/null || fail "pings carry no STATUS line"
[ "$(grep -c '^STATUS=Polling every 3600000ms; tick [2-9]' "$notify")" -eq 0 ] ||
        fail "the pings ran extra ticks"
stop_daemon
echo "$(grep -c '^WATCHDOG=1' "$notify") watchdog pings in the hour after the start-up tick"
