#!/bin/sh
# Structured logging: when stderr is the journal's stream (JOURNAL_STREAM
# names it), messages go to journald's native socket with MESSAGE=,
# PRIORITY=, SYSLOG_IDENTIFIER= and NEUROND_COLLECTOR= fields. The test
# runs the daemon in a private mount namespace whose /run holds a stand-in
# journal socket; it needs root for that and is skipped otherwise.
. "$(dirname "$0")/lib.sh"
need_libsystemd
need python3
need unshare
[ "$(id -u)" -eq 0 ] || skip "needs root for a private mount namespace"
enter_mount_namespace

mount -t tmpfs tmpfs /run
mkdir -p /run/systemd/journal
journal=$TEST_TMP/journal.txt
start_helper python3 "$top_srcdir/tests/integration/notify-listen.py" /run/systemd/journal/socket "$journal" 20
wait_until 20 file_has "$journal" BOUND || fail "the stand-in journal did not start"

# stderr is the journal's stream when JOURNAL_STREAM names its device and inode.
: >"$TEST_TMP/j.log"
JOURNAL_STREAM=$(stat -c '%d:%i' "$TEST_TMP/j.log") spawn_daemon j --backend model:trn1.2xlarge --log-level debug
wait_until 20 file_has "$journal" 'MESSAGE=listening on port' || fail "no message arrived in the journal"
stop_daemon j
# The listener writes what it received a moment later.
wait_until file_has "$journal" '^MESSAGE=received SIGTERM' || fail "no shutdown message"

cat "$journal"
[ ! -s "$TEST_TMP/j.log" ] || fail "messages went to stderr instead of the journal: $(cat "$TEST_TMP/j.log")"
# One datagram per message: MESSAGE, PRIORITY, SYSLOG_IDENTIFIER[, NEUROND_COLLECTOR], "--".
grep -A 2 '^MESSAGE=listening on port' "$journal" | grep -q '^PRIORITY=6$' || fail "no PRIORITY=6 with the info message"
grep -q '^SYSLOG_IDENTIFIER=neurond$' "$journal" || fail "no SYSLOG_IDENTIFIER"
grep -B 3 '^NEUROND_COLLECTOR=model$' "$journal" | grep -q '^MESSAGE=.*series' ||
        fail "no message with NEUROND_COLLECTOR=model"
grep -A 1 '^MESSAGE=received SIGTERM' "$journal" | grep -q '^PRIORITY=6$' || fail "no shutdown message"
echo "journal fields: $(grep -c '^MESSAGE=' "$journal") messages"
