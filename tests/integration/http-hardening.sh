#!/bin/sh
# Hostile clients at the HTTP layer, through the daemon, with real sockets:
# request framing that RFC 9112 says to refuse, sent as raw bytes, answered
# at once with one status line; a Host name that is not allowed (DNS
# rebinding) refused before any handler; TLS 1.0 and 1.1 refused, 1.2 and
# 1.3 accepted, and the versions configurable; credentials with a NUL byte
# refused and the scheme's name taken in any case; a FIFO, a socket and a
# device in the web root refused at once, and SIGTERM obeyed at once while
# clients hold requests for the FIFO.
. "$(dirname "$0")/lib.sh"
need curl
need openssl
need python3

# --- Framing and Host. connection_timeout is long, so that a server
# waiting for a body that never comes would be seen waiting.
printf '[neurond]\nconnection_timeout = 60s\n' >"$TEST_TMP/slow-timeout.conf"
start_daemon --backend model:trn1.2xlarge --config "$TEST_TMP/slow-timeout.conf" --enable-admin
python3 - "$PORT" "$SLOW" <<'PY' >"$TEST_TMP/framing.out" 2>&1 || fail "framing: $(cat "$TEST_TMP/framing.out")"
import socket, sys, time
port, slow = int(sys.argv[1]), int(sys.argv[2])
H = "Host: 127.0.0.1\r\n"
cases = [
    # name, request, status, words of the error
    ("no Host", "GET /healthz HTTP/1.1\r\n\r\n", 400, "needs a Host header"),
    ("two Hosts", "GET /healthz HTTP/1.1\r\n" + H + "Host: localhost\r\n\r\n", 400, "more than one Host"),
    ("space before colon", "GET /healthz HTTP/1.1\r\n" + H + "X-A : 1\r\n\r\n", 400, "between a header name and its colon"),
    ("space in target", "GET /healthz x HTTP/1.1\r\n" + H + "\r\n", 400, "space or tab in the request target"),
    ("CL and TE", "POST /api/v1/latest HTTP/1.1\r\n" + H + "Content-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n"
     "0\r\n\r\n", 400, "both Transfer-Encoding and Content-Length"),
    ("two CLs", "POST /api/v1/latest HTTP/1.1\r\n" + H + "Content-Length: 0\r\nContent-Length: 5\r\n\r\nhello",
     400, "Content-Length headers that differ"),
    ("xchunked", "POST /healthz HTTP/1.1\r\n" + H + "Transfer-Encoding: xchunked\r\n\r\n", 501, "not implemented"),
    ("gzip, chunked", "POST /healthz HTTP/1.1\r\n" + H + "Transfer-Encoding: gzip, chunked\r\n\r\n", 501,
     "not implemented"),
    ("identity", "POST /healthz HTTP/1.1\r\n" + H + "Transfer-Encoding: identity\r\n\r\n", 501, "not implemented"),
    ("rebinding", "GET /api/v1/devices HTTP/1.1\r\nHost: rebind.example:9710\r\n\r\n", 421, "allowed_hosts"),
    ("rebinding, admin", "GET /api/v1/admin/faults HTTP/1.1\r\nHost: rebind.example\r\n\r\n", 421, "allowed_hosts"),
    ("loopback name", "GET /healthz HTTP/1.1\r\nHost: localhost:9710\r\nConnection: close\r\n\r\n", 200, "ok"),
    ("admin, allowed", "GET /api/v1/admin/faults HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n", 200,
     "faults"),
]
bound = 5 * slow  # far below the 60 s a wait for the body would take
for name, request, status, words in cases:
    s = socket.create_connection(("127.0.0.1", port), timeout=bound)
    start = time.monotonic()
    s.sendall(request.encode())
    answer = b""
    try:
        while chunk := s.recv(65536):
            answer += chunk
    except socket.timeout:
        sys.exit(f"{name}: no answer, or the connection kept open, after {bound} s: {answer[:200]!r}")
    took = time.monotonic() - start
    s.close()
    head, _, body = answer.partition(b"\r\n\r\n")
    got = int(head.split(b" ")[1]) if head.startswith(b"HTTP/1.1 ") else 0
    lines = answer.count(b"HTTP/1.1 ") - body.count(b"HTTP/1.1 ")
    if got != status or words.encode() not in body or lines != 1:
        sys.exit(f"{name}: expected {status} saying '{words}' once, got:\n{answer.decode(errors='replace')}")
    print(f"{name}: {status} in {took * 1000:.0f} ms")
PY
[ "$(http_status /healthz)" = 200 ] || fail "/healthz after the framing cases"
stop_daemon

# --- TLS versions. openssl s_client at security level 0, so that the
# client offers the old versions it has; "Cipher is (NONE)" is a refusal.
make_tls_cert
need_version_refused() { # version
  echo | openssl s_client -connect "127.0.0.1:$PORT" "-$1" -cipher 'DEFAULT:@SECLEVEL=0' >"$TEST_TMP/s_client" 2>&1 || true
  grep -q 'Cipher is (NONE)' "$TEST_TMP/s_client" || fail "$1 was accepted: $(grep -i cipher "$TEST_TMP/s_client")"
}
need_version_accepted() { # version
  echo | openssl s_client -connect "127.0.0.1:$PORT" "-$1" -CAfile "$TLS_CERT" >"$TEST_TMP/s_client" 2>&1 || true
  grep -q 'Cipher is (NONE)' "$TEST_TMP/s_client" && fail "$1 was refused: $(tail -n 5 "$TEST_TMP/s_client")"
  grep -q 'Verify return code: 0' "$TEST_TMP/s_client" || fail "$1: $(tail -n 5 "$TEST_TMP/s_client")"
}
printf '[neurond]\ntls_cert = %s\ntls_key = %s\n' "$TLS_CERT" "$TLS_KEY" >"$TEST_TMP/tls.conf"
start_daemon --backend model:trn1.2xlarge --config "$TEST_TMP/tls.conf"
need_version_refused tls1
need_version_refused tls1_1
need_version_accepted tls1_2
need_version_accepted tls1_3
stop_daemon
printf 'tls_priorities = NORMAL:-VERS-ALL:+VERS-TLS1.3\n' >>"$TEST_TMP/tls.conf"
start_daemon --backend model:trn1.2xlarge --config "$TEST_TMP/tls.conf"
need_version_refused tls1_2
need_version_accepted tls1_3
stop_daemon
printf '[neurond]\ntls_priorities = NORMAL:+VERS-TLS9.9\n' >"$TEST_TMP/bad-tls.conf"
status=0
"$NEUROND" --config "$TEST_TMP/bad-tls.conf" --backend model:trn1.2xlarge --check-config >"$TEST_TMP/check.out" 2>&1 ||
  status=$?
[ "$status" -eq 2 ] || fail "a bad tls_priorities: exit $status"
grep -q 'tls_priorities: not a GnuTLS priority string' "$TEST_TMP/check.out" || fail "$(cat "$TEST_TMP/check.out")"

# --- Credentials: a NUL ends nothing; scheme names in any case.
make_users_file "$TEST_TMP/users" prometheus hunter2 4
printf '[neurond]\nbasic_auth_users = %s\n' "$TEST_TMP/users" >"$TEST_TMP/auth.conf"
start_daemon --backend model:trn1.2xlarge --config "$TEST_TMP/auth.conf"
b64() { printf "$1" | base64 -w0; }
[ "$(http_status /metrics -H "Authorization: Basic $(b64 'prometheus:hunter2')")" = 200 ] || fail "right password"
[ "$(http_status /metrics -H "Authorization: basic $(b64 'prometheus:hunter2')")" = 200 ] || fail "scheme 'basic'"
[ "$(http_status /metrics -H "Authorization: BASIC $(b64 'prometheus:hunter2')")" = 200 ] || fail "scheme 'BASIC'"
for junk in 'prometheus:hunter2\0junk' 'prometheus:hunter2\0' 'prometheus\0x:hunter2' 'prometheus:hunter'; do
  code=$(http_status /metrics -H "Authorization: Basic $(b64 "$junk")")
  [ "$code" = 401 ] || fail "credentials '$junk' answered $code"
done
stop_daemon

# --- A FIFO in the web root: refused at once, never opened for a read
# that would wait for a writer; and SIGTERM is obeyed at once while
# clients hold requests to it.
mkdir -p "$TEST_TMP/root"
cp "$WEB_ROOT/index.html" "$TEST_TMP/root/"
mkfifo "$TEST_TMP/root/pipe.txt" "$TEST_TMP/root/app.js"
# A socket, and a device reached through a symlink, are no files to serve either.
python3 -c 'import socket, sys; socket.socket(socket.AF_UNIX).bind(sys.argv[1])' "$TEST_TMP/root/sock.txt"
ln -s /dev/zero "$TEST_TMP/root/zero.txt"
start_daemon --backend model:trn1.2xlarge --web-root "$TEST_TMP/root"
for path in /pipe.txt /app.js /sock.txt /zero.txt; do
  [ "$(http_status "$path" --max-time "$((2 * SLOW))")" = 404 ] || fail "$path (not a regular file) was not refused at once"
done
[ "$(http_status /)" = 200 ] || fail "the dashboard after FIFO requests"
python3 - "$PORT" "$TEST_TMP/held" <<'PY' &
import socket, sys, time
port, marker = int(sys.argv[1]), sys.argv[2]
held = []
for i in range(12):
    s = socket.create_connection(("127.0.0.1", port))
    # Kept-alive requests for the FIFO, half of them not read; and heads
    # that never end.
    if i % 3 == 2:
        s.sendall(b"GET /pipe.txt HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: ")
    else:
        s.sendall(b"GET /pipe.txt HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n" * (1 + i % 2))
    held.append(s)
open(marker, "w").close()
time.sleep(30)
PY
HELPER_PIDS="$HELPER_PIDS $!"
wait_until test -e "$TEST_TMP/held" || fail "the clients did not connect"
start=$(date +%s%N)
kill -TERM "$DAEMON_PID"
wait_until 2 not_running "$DAEMON_PID" || fail "SIGTERM: still running after $((2 * SLOW)) s with FIFO requests held"
echo "SIGTERM to exit with FIFO requests held: $((($(date +%s%N) - start) / 1000000)) ms"
expect_clean_exit
echo "PASS: $(tr '\n' ';' <"$TEST_TMP/framing.out")"
