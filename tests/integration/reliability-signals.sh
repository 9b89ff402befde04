#!/bin/sh
# Signals under load: a storm of SIGHUPs while clients scrape and query,
# clients that hang up in the middle of a response (SIGPIPE and resets on
# the server's side), and SIGTERM while queries are running. Every answer
# is complete and 200, the daemon lives through it, and it stops cleanly
# with an intact database.
. "$(dirname "$0")/lib.sh"
need curl
need python3
need sqlite3

printf '[neurond]\ninterval = 1s\n' >"$TEST_TMP/neurond.conf"
start_daemon --backend model:trn1.32xlarge,seed=2,speed=20 --config "$TEST_TMP/neurond.conf"

# client N: 25 scrapes and 25 range queries, each answer checked whole.
client() {
  n=0
  while [ $n -lt 25 ]; do
    code=$(curl -sS --max-time 10 -o "$TEST_TMP/m$1" -w '%{http_code}' "$URL/metrics") || code=curl
    { [ "$code" = 200 ] && grep -q '^neurond_build_info' "$TEST_TMP/m$1"; } || echo "scrape $n: $code" >>"$TEST_TMP/errors"
    code=$(curl -sS --max-time 10 -o "$TEST_TMP/q$1" -w '%{http_code}' \
      "$URL/api/v1/query_range?metric=neuroncore_utilization_ratio&step=10s") || code=curl
    { [ "$code" = 200 ] && grep -q '^{"status":"success".*]}}$' "$TEST_TMP/q$1"; } || echo "query $n: $code" >>"$TEST_TMP/errors"
    n=$((n + 1))
  done
}
: >"$TEST_TMP/errors"
client 1 &
c1=$!
client 2 &
c2=$!
client 3 &
c3=$!
hups=0
while [ $hups -lt 150 ]; do
  kill -HUP "$DAEMON_PID"
  hups=$((hups + 1))
  [ $((hups % 10)) -eq 0 ] && sleep 0.05
done
wait $c1 $c2 $c3
[ ! -s "$TEST_TMP/errors" ] || fail "answers during the SIGHUP storm: $(head -5 "$TEST_TMP/errors")"
kill -0 "$DAEMON_PID" 2>/dev/null || fail "the daemon died in the SIGHUP storm"
reloads=$(grep -c "reloaded configuration" "$DAEMON_LOG")
[ "$reloads" -ge 1 ] || fail "no reload logged"
grep -q "reload:.*keeping" "$DAEMON_LOG" && fail "a reload failed"

# Clients that hang up mid-response: read a little, then reset or close.
python3 - "$PORT" <<'PY' || fail "hang-up clients"
import socket, struct, sys
port = int(sys.argv[1])
for i in range(60):
    s = socket.socket()
    s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    s.connect(("127.0.0.1", port))
    path = "/metrics" if i % 2 else "/api/v1/query_range?metric=neuroncore_utilization_ratio&step=1s"
    s.sendall(f"GET {path} HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n".encode())
    s.recv(100)
    if i % 3 == 0:  # reset rather than close
        s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    s.close()
PY
kill -0 "$DAEMON_PID" 2>/dev/null || fail "the daemon died from clients hanging up"
[ "$(http_status /healthz)" = 200 ] || fail "/healthz after clients hung up"
http /metrics | grep -q '^neurond_build_info' || fail "/metrics after clients hung up"

# SIGTERM while queries run: a clean exit, the database intact.
client 4 2>/dev/null &
c4=$!
client 5 2>/dev/null &
c5=$!
# Once a query of theirs has been answered, queries are running.
wait_until file_has "$TEST_TMP/q4" '"status":"success"' || fail "no query answered before SIGTERM"
stop_daemon
wait $c4 $c5 || true
grep -q "received SIGTERM" "$DAEMON_LOG" || fail "SIGTERM not logged"
[ "$(sqlite3 "$TEST_TMP/neurond.db" 'PRAGMA integrity_check')" = ok ] || fail "integrity_check after SIGTERM"
echo "reliability-signals: ok ($hups SIGHUPs, $reloads reloads logged)"
