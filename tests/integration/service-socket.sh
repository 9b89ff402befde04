#!/bin/sh
# Socket activation: systemd-socket-activate binds the port, starts neurond
# on the first connection and passes the socket (LISTEN_FDS); neurond must
# serve on it and ignore its own listen setting (an address it could not
# bind, here).
. "$(dirname "$0")/lib.sh"
need_libsystemd
need systemd-socket-activate
need curl
need python3

port=$(free_port)
wrap_neurond "systemd-socket-activate -l 127.0.0.1:$port"
spawn_daemon --listen 192.0.2.1:9 --backend model:trn1.2xlarge
wait_until 20 file_has "$DAEMON_LOG" "Listening on" || fail "systemd-socket-activate did not listen"

# This first request is what starts the daemon; it waits in the backlog.
URL=http://127.0.0.1:$port
http /healthz --fail >"$TEST_TMP/health" || fail "no answer on the activated socket"
grep -q '"status":"ok"' "$TEST_TMP/health" || fail "unexpected /healthz: $(cat "$TEST_TMP/health")"
# The server may answer before the log line that says so is written.
wait_until 10 file_has "$DAEMON_LOG" "listening on port $port (socket from the service manager" ||
        fail "neurond did not report serving on the passed socket"
http /metrics --fail | grep -q '^neuroncore_utilization_ratio{' || fail "no metrics on the passed socket"
stop_daemon
echo "served /healthz and /metrics on the activated socket, port $port"
