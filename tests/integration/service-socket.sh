#!/bin/sh
# Socket activation: systemd-socket-activate binds the port, starts neurond
# on the first connection and passes the socket (LISTEN_FDS); neurond must
# serve on it and ignore its own listen setting (an address it could not
# bind, here).
. "$top_srcdir/tests/integration/service-lib.sh"
need_libsystemd
need systemd-socket-activate
need curl
need python3

port=$(free_port)
systemd-socket-activate -l "127.0.0.1:$port" \
        "$NEUROND" --allow-root --listen 192.0.2.1:9 --db "$TMP/s.db" --web-root "$WEB_ROOT" --backend model:trn1.2xlarge \
        >"$TMP/s.out" 2>"$TMP/s.log" &
pid=$!
PIDS="$PIDS $pid"
wait_for "$TMP/s.log" "Listening on"

# This first request is what starts the daemon; it waits in the backlog.
fetch "http://127.0.0.1:$port/healthz" >"$TMP/health" || { cat "$TMP/s.log" >&2; fail "no answer on the activated socket"; }
grep -q '"status":"ok"' "$TMP/health" || fail "unexpected /healthz: $(cat "$TMP/health")"
grep -q "listening on port $port (socket from the service manager" "$TMP/s.log" ||
        { cat "$TMP/s.log" >&2; fail "neurond did not report serving on the passed socket"; }
fetch "http://127.0.0.1:$port/metrics" | grep -q '^neuroncore_utilization_ratio{' || fail "no metrics on the passed socket"
stop_neurond "$pid"
echo "served /healthz and /metrics on the activated socket, port $port"
