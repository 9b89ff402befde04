#!/bin/sh
# WatchdogSec= shorter than the poll interval: the loop must still ping
# WATCHDOG=1 every half watchdog period (WATCHDOG_USEC / 2), not only after
# ticks, or systemd would kill a healthy daemon that polls once an hour.
. "$top_srcdir/tests/integration/service-lib.sh"
need_libsystemd
need python3

python3 "$top_srcdir/tests/integration/notify-listen.py" "$TMP/notify.sock" "$TMP/notify.txt" 30 &
listener=$!
PIDS="$PIDS $listener"
wait_for "$TMP/notify.txt" BOUND

# WATCHDOG_PID must be the daemon's: the shell's pid, which exec keeps.
NOTIFY_SOCKET="$TMP/notify.sock" sh -c 'WATCHDOG_PID=$$ WATCHDOG_USEC=400000 exec "$@"' sh \
        "$NEUROND" --allow-root --listen 127.0.0.1:0 --db "$TMP/w.db" --web-root "$WEB_ROOT" --backend model:trn1.2xlarge \
        --interval 1h 2>"$TMP/w.log" &
pid=$!
PIDS="$PIDS $pid"
wait_for "$TMP/w.log" "listening on port"

# One tick follows the start; everything after it is a ping without a tick.
i=0
while [ "$(grep -c '^WATCHDOG=1' "$TMP/notify.txt")" -lt 5 ]; do
        i=$((i + 1))
        [ $i -le 200 ] || { cat "$TMP/notify.txt" >&2; fail "fewer than 5 watchdog pings with a 1 h interval"; }
        sleep 0.1
done
grep '^STATUS=Polling every 3600000ms; tick 1;' "$TMP/notify.txt" >/dev/null || fail "pings carry no STATUS line"
[ "$(grep -c '^STATUS=Polling every 3600000ms; tick [2-9]' "$TMP/notify.txt")" -eq 0 ] ||
        fail "the pings ran extra ticks"
stop_neurond "$pid"
echo "$(grep -c '^WATCHDOG=1' "$TMP/notify.txt") watchdog pings in the hour after the start-up tick"
