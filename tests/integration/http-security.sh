#!/bin/sh
# Security: HTTPS with a self-signed certificate, basic auth against bcrypt
# hashes, bearer tokens, an open /healthz, static files confined to the web
# root, ETag revalidation, and the 414/431 request limits.
. "$(dirname "$0")/lib.sh"
need curl
need openssl

# --- Static files: traversal refused in every spelling; ETag and headers.
mkdir -p "$TEST_TMP/root/sub" "$TEST_TMP/outside"
cp "$WEB_ROOT/index.html" "$WEB_ROOT/app.js" "$WEB_ROOT/style.css" "$TEST_TMP/root/"
echo secret >"$TEST_TMP/outside/secret.txt"
echo inside >"$TEST_TMP/root/sub/ok.txt"
ln -s "$TEST_TMP/outside/secret.txt" "$TEST_TMP/root/link.txt"
ln -s "$TEST_TMP/outside" "$TEST_TMP/root/linkdir"
start_daemon --web-root "$TEST_TMP/root" --backend model:trn1.2xlarge
[ "$(http /sub/ok.txt)" = inside ] || fail "a file in a subdirectory is not served"
for path in /../outside/secret.txt /sub/../../outside/secret.txt /%2e%2e/outside/secret.txt \
  /sub/%2E%2E/%2e%2e/outside/secret.txt /..%2foutside/secret.txt /link.txt /linkdir/secret.txt \
  '/sub/..\..\outside/secret.txt' /.hidden //etc/passwd; do
  code=$(http_status "$path" --path-as-is)
  [ "$code" = 404 ] || fail "$path answered $code"
  curl -sS --max-time 10 --path-as-is "$URL$path" | grep -qx secret && fail "$path leaked the file"
done
curl -sS --max-time 10 -D "$TEST_TMP/h" -o /dev/null "$URL/app.js"
etag=$(sed -n 's/^[Ee][Tt]ag: \(.*\)\r$/\1/p' "$TEST_TMP/h")
[ -n "$etag" ] || fail "no ETag on a static file"
grep -qi '^cache-control: no-cache' "$TEST_TMP/h" || fail "static Cache-Control"
grep -qi '^x-content-type-options: nosniff' "$TEST_TMP/h" || fail "no nosniff"
grep -qi "^content-security-policy: default-src 'none'" "$TEST_TMP/h" || fail "no CSP"
[ "$(http_status /app.js -H "If-None-Match: $etag")" = 304 ] || fail "If-None-Match did not give 304"
[ "$(http_status /app.js -H 'If-None-Match: "other"')" = 200 ] || fail "a stale ETag did not give 200"

# --- Limits: long URLs are 414 and big headers 431, in JSON up to the
# connection's memory limit and from libmicrohttpd past it; the server lives on.
limit() {
  curl -sS --max-time 10 -o /dev/null -w '%{http_code} %{content_type}' "$@"
}
long=$(head -c 20000 /dev/zero | tr '\0' a)
mid=$(head -c 5000 /dev/zero | tr '\0' a)
[ "$(limit "$URL/api/v1/latest?q=$mid")" = "414 application/json" ] || fail "a 5 kB URL"
[ "$(limit "$URL/api/v1/latest?q=$long")" = "414 application/json" ] || fail "a 20 kB URL"
[ "$(limit -H "X-Filler: $mid$mid" "$URL/healthz")" = "431 application/json" ] || fail "10 kB of headers"
[ "$(http_status "/api/v1/latest?q=$long$long$long")" = 414 ] || fail "a 60 kB URL is not 414"
[ "$(http_status /healthz -H "X-Filler: $long$long")" = 431 ] || fail "40 kB of headers is not 431"
[ "$(http_status /healthz)" = 200 ] || fail "server unhealthy after oversized requests"
stop_daemon

# --- TLS and authentication.
make_tls_cert
make_users_file "$TEST_TMP/users" prometheus hunter2 6
printf 'tok-%s\n' "$(od -An -N16 -tx1 /dev/urandom | tr -d ' \n')" >"$TEST_TMP/token"
cat >"$TEST_TMP/secure.conf" <<CONF
[neurond]
tls_cert = $TLS_CERT
tls_key = $TLS_KEY
basic_auth_users = $TEST_TMP/users
bearer_token_file = $TEST_TMP/token
healthz_open = true
CONF
start_daemon --backend model:trn1.2xlarge --config "$TEST_TMP/secure.conf" --enable-admin
https_url="https://127.0.0.1:$PORT"
tls() {
  curl -sS --max-time 10 --cacert "$TLS_CERT" -o "$TEST_TMP/body" -w '%{http_code}' "$@"
}
[ "$(tls "$https_url/metrics")" = 401 ] || fail "no credentials: not 401"
grep -q '"errorType":"unauthorized"' "$TEST_TMP/body" || fail "401 body"
[ "$(tls -u prometheus:hunter2 "$https_url/metrics")" = 200 ] || fail "right password refused"
grep -q '^neuroncore_utilization_ratio{' "$TEST_TMP/body" || fail "no metrics over TLS"
[ "$(tls -u prometheus:hunter2 "$https_url/metrics")" = 200 ] || fail "right password refused the second time"
[ "$(tls -u prometheus:hunter3 "$https_url/metrics")" = 401 ] || fail "wrong password accepted"
[ "$(tls -u grafana:hunter2 "$https_url/metrics")" = 401 ] || fail "unknown user accepted"
[ "$(tls -H "Authorization: Bearer $(cat "$TEST_TMP/token")" "$https_url/api/v1/status")" = 200 ] || fail "token refused"
[ "$(tls -H "Authorization: Bearer $(cat "$TEST_TMP/token")x" "$https_url/api/v1/status")" = 401 ] || fail "bad token accepted"
[ "$(tls "$https_url/healthz")" = 200 ] || fail "healthz_open: /healthz needs credentials"
[ "$(tls "$https_url/")" = 401 ] || fail "the dashboard is open without credentials"
[ "$(tls "$https_url/api/v1/admin/faults")" = 401 ] || fail "the admin endpoint is open without credentials"
[ "$(tls -X POST "$https_url/api/v1/admin/faults?fault=device_down:0")" = 401 ] || fail "admin POST without credentials"
[ "$(tls -u prometheus:hunter2 "$https_url/api/v1/admin/faults")" = 200 ] || fail "admin refused good credentials"
# The certificate is the one we made, and plain HTTP is not spoken.
curl -sS --max-time 10 "$https_url/healthz" >/dev/null 2>&1 && fail "an unknown CA was trusted"
curl -sS --max-time 5 "$URL/healthz" >/dev/null 2>&1 && fail "plain HTTP answered on the TLS port"
stop_daemon

# A certificate without its key is a configuration error.
printf '[neurond]\ntls_cert = %s\n' "$TLS_CERT" >"$TEST_TMP/half.conf"
status=0
"$NEUROND" --config "$TEST_TMP/half.conf" --check-config >"$TEST_TMP/check.out" 2>&1 || status=$?
[ "$status" -eq 2 ] || fail "tls_cert without tls_key: exit $status"
grep -q 'tls_cert and tls_key' "$TEST_TMP/check.out" || fail "message: $(cat "$TEST_TMP/check.out")"
# --check-config reads the TLS files: a missing one, or one that holds no
# PEM block of its kind (here the key and certificate swapped), exits 2.
check_tls() { # cert key expected-message
        printf '[neurond]\ntls_cert = %s\ntls_key = %s\n' "$1" "$2" >"$TEST_TMP/tls.conf"
        status=0
        "$NEUROND" --config "$TEST_TMP/tls.conf" --backend model:trn1.2xlarge --check-config >"$TEST_TMP/check.out" 2>&1 ||
          status=$?
        [ "$status" -eq 2 ] || fail "tls_cert $1, tls_key $2: exit $status"
        grep -q "$3" "$TEST_TMP/check.out" || fail "message: $(cat "$TEST_TMP/check.out")"
}
check_tls "$TEST_TMP/missing.pem" "$TLS_KEY" "reading $TEST_TMP/missing.pem: No such file"
check_tls "$TLS_KEY" "$TLS_CERT" "key.pem holds no PEM CERTIFICATE"
check_tls "$TLS_CERT" "$TLS_CERT" "cert.pem holds no PEM PRIVATE KEY"
check_tls "$TEST_TMP" "$TLS_KEY" "Is a directory"
head -c 70000 /dev/zero >"$TEST_TMP/big.pem"
check_tls "$TEST_TMP/big.pem" "$TLS_KEY" "big.pem is larger than 64 KiB"
printf '[neurond]\ntls_cert = %s\ntls_key = %s\n' "$TLS_CERT" "$TLS_KEY" >"$TEST_TMP/tls.conf"
"$NEUROND" --config "$TEST_TMP/tls.conf" --backend model:trn1.2xlarge --check-config >"$TEST_TMP/check.out" 2>&1 ||
  fail "--check-config refused a good certificate and key: $(cat "$TEST_TMP/check.out")"
# --check-config reads the users file and refuses a plain-text password.
printf 'prometheus:hunter2\n' >"$TEST_TMP/plain-users"
printf '[neurond]\nbasic_auth_users = %s\n' "$TEST_TMP/plain-users" >"$TEST_TMP/plain.conf"
status=0
"$NEUROND" --config "$TEST_TMP/plain.conf" --backend model:trn1.2xlarge --check-config >"$TEST_TMP/check.out" 2>&1 || status=$?
[ "$status" -eq 2 ] || fail "a plain-text password in basic_auth_users: exit $status"
grep -q 'not bcrypt' "$TEST_TMP/check.out" || fail "message: $(cat "$TEST_TMP/check.out")"
printf '[neurond]\nbasic_auth_users = %s\n' "$TEST_TMP/users" >"$TEST_TMP/good.conf"
"$NEUROND" --config "$TEST_TMP/good.conf" --backend model:trn1.2xlarge --check-config >"$TEST_TMP/check.out" 2>&1 ||
  fail "--check-config refused a good users file: $(cat "$TEST_TMP/check.out")"

# Listening on every address without TLS or auth works, with a warning
# (the test still talks to it over loopback only).
start_daemon --backend model:trn1.2xlarge --listen 0.0.0.0:0
[ "$(http_status /healthz)" = 200 ] || fail "0.0.0.0 listener did not answer on loopback"
grep -q 'non-loopback address without TLS or authentication' "$DAEMON_LOG" ||
  fail "no warning for an exposed listener: $(cat "$DAEMON_LOG")"
stop_daemon
echo PASS
