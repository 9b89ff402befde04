#!/bin/sh
# Structured logging: when stderr is the journal's stream (JOURNAL_STREAM
# names it), messages go to journald's native socket with MESSAGE=,
# PRIORITY=, SYSLOG_IDENTIFIER= and NEUROND_COLLECTOR= fields. The test
# runs the daemon in a private mount namespace whose /run holds a stand-in
# journal socket; it needs root for that and is skipped otherwise.
. "$top_srcdir/tests/integration/service-lib.sh"
need_libsystemd
need python3
need unshare
[ "$(id -u)" -eq 0 ] || skip "needs root for a private mount namespace"
unshare -m --propagation private true 2>/dev/null || skip "cannot create a mount namespace here"

: >"$TMP/err"
stream=$(stat -c '%d:%i' "$TMP/err")
cat >"$TMP/run.sh" <<EOS
set -eu
mount -t tmpfs tmpfs /run
mkdir -p /run/systemd/journal
python3 "$top_srcdir/tests/integration/notify-listen.py" /run/systemd/journal/socket "$TMP/journal.txt" 20 &
listener=\$!
i=0; while ! grep -q BOUND "$TMP/journal.txt" 2>/dev/null; do i=\$((i+1)); [ \$i -lt 200 ]; sleep 0.1; done
JOURNAL_STREAM=$stream "$NEUROND" --allow-root --listen 127.0.0.1:0 --db "$TMP/j.db" --web-root "$WEB_ROOT" \
        --backend model:trn1.2xlarge --log-level debug 2>>"$TMP/err" &
pid=\$!
i=0; while ! grep -q 'MESSAGE=listening on port' "$TMP/journal.txt"; do i=\$((i+1)); [ \$i -lt 200 ]; sleep 0.1; done
kill -TERM \$pid
wait \$pid
kill \$listener
EOS
unshare -m --propagation private sh "$TMP/run.sh" || { cat "$TMP/err" "$TMP/journal.txt" >&2 || true; fail "the daemon in the namespace failed"; }

cat "$TMP/journal.txt"
[ ! -s "$TMP/err" ] || fail "messages went to stderr instead of the journal: $(cat "$TMP/err")"
# One datagram per message: MESSAGE, PRIORITY, SYSLOG_IDENTIFIER[, NEUROND_COLLECTOR], "--".
grep -A 2 '^MESSAGE=listening on port' "$TMP/journal.txt" | grep -q '^PRIORITY=6$' || fail "no PRIORITY=6 with the info message"
grep -q '^SYSLOG_IDENTIFIER=neurond$' "$TMP/journal.txt" || fail "no SYSLOG_IDENTIFIER"
grep -B 3 '^NEUROND_COLLECTOR=model$' "$TMP/journal.txt" | grep -q '^MESSAGE=.*series' ||
        fail "no message with NEUROND_COLLECTOR=model"
grep -A 1 '^MESSAGE=received SIGTERM' "$TMP/journal.txt" | grep -q '^PRIORITY=6$' || fail "no shutdown message"
echo "journal fields: $(grep -c '^MESSAGE=' "$TMP/journal.txt") messages"
