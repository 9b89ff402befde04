#!/bin/sh
# The command line: bad input gets one line naming the problem and exit 2,
# before anything is opened, and a database the daemon cannot open for the
# operator's reasons exits 2 naming why; --help, --version and
# --check-config work.
. "$(dirname "$0")/lib.sh"

expect_usage_error() {
  needle=$1
  shift
  status=0
  "$NEUROND" --db "$TEST_TMP/never.db" "$@" >"$TEST_TMP/out" 2>"$TEST_TMP/err" || status=$?
  [ "$status" -eq 2 ] || fail "'$*': exit status $status, expected 2"
  [ "$(wc -l <"$TEST_TMP/err")" -eq 1 ] || fail "'$*': error is not one line: $(cat "$TEST_TMP/err")"
  grep -qF -- "$needle" "$TEST_TMP/err" || fail "'$*': error does not mention '$needle': $(cat "$TEST_TMP/err")"
  [ ! -e "$TEST_TMP/never.db" ] || fail "'$*': the database was created despite bad input"
}

expect_usage_error "--bogus" --bogus
expect_usage_error "5x" --interval 5x
expect_usage_error "--interval" --interval
expect_usage_error "localhost:80" --listen localhost:80
expect_usage_error "999999" --listen 127.0.0.1:999999
expect_usage_error "/nonexistent.conf" --config /nonexistent.conf
expect_usage_error "trn9.huge" --backend model:trn9.huge
expect_usage_error "nosuch" --backend nosuch
expect_usage_error "the root /nonexistent" --backend sysfs:/nonexistent
# The root left out: the options start at the comma.
expect_usage_error "is not lnc=1 or lnc=2" --backend sysfs,lnc=3
printf '[neurond]\ninterval = often\n' >"$TEST_TMP/bad.conf"
expect_usage_error "bad.conf:2" --config "$TEST_TMP/bad.conf"
# A users file with a plain-text password is a usage error too, found
# before the database is opened.
printf 'prometheus:hunter2\n' >"$TEST_TMP/users"
printf '[neurond]\nbasic_auth_users = %s\n' "$TEST_TMP/users" >"$TEST_TMP/auth.conf"
expect_usage_error "not bcrypt" --config "$TEST_TMP/auth.conf" --backend model:trn1.2xlarge

"$NEUROND" --help | grep -q -- "--listen ADDR:PORT" || fail "--help does not describe --listen"
"$NEUROND" --version | grep -q "^neurond [0-9]" || fail "--version"
"$NEUROND" --list-instances | grep -q "trn1.32xlarge" || fail "--list-instances lacks trn1.32xlarge"

printf '[neurond]\ninterval = 2s\nbackend = model:trn1.2xlarge\n' >"$TEST_TMP/good.conf"
out=$("$NEUROND" --config "$TEST_TMP/good.conf" --db "$TEST_TMP/never.db" --check-config)
echo "$out" | grep -q "interval 2000ms" || fail "--check-config: $out"
echo "$out" | grep -q "model:trn1.2xlarge" || fail "--check-config: $out"
[ ! -e "$TEST_TMP/never.db" ] || fail "--check-config created the database"
# A database the daemon cannot open for the operator's reasons: no such
# directory, and no permission (as root: the daemon as nobody in the
# test's private directory, mode 0700; not under a wrapper such as
# valgrind's, whose log nobody could not write). Exit 2 with the reason,
# once the database is tried. A file system that is full, read-only or
# out of inodes is no such mistake: the daemon starts degraded
# (reliability-dbopen.sh, tests/unit/test-store-faults.c).
status=0
"$NEUROND" --allow-root --listen 127.0.0.1:0 --db "$TEST_TMP/missing/neurond.db" --backend model:trn1.2xlarge \
  >"$TEST_TMP/run.log" 2>&1 || status=$?
[ "$status" -eq 2 ] || fail "a missing database directory: exit status $status, expected 2"
grep -q "cannot open database.*No such file or directory" "$TEST_TMP/run.log" ||
  fail "no clear message for a missing directory: $(cat "$TEST_TMP/run.log")"
if [ "$(id -u)" = 0 ] && [ -z "${NEUROND_WRAPPER:-}" ] && command -v setpriv >/dev/null 2>&1; then
  status=0
  setpriv --reuid=65534 --regid=65534 --clear-groups "$NEUROND" --listen 127.0.0.1:0 --db "$TEST_TMP/nobody.db" \
    --backend model:trn1.2xlarge >"$TEST_TMP/run.log" 2>&1 || status=$?
  [ "$status" -eq 2 ] || fail "no permission for the database: exit status $status, expected 2"
  grep -q "cannot open database.*Permission denied" "$TEST_TMP/run.log" ||
    fail "no clear message for a permission error: $(cat "$TEST_TMP/run.log")"
fi
# Root is refused unless --allow-root says otherwise (lib.sh passes it).
if [ "$(id -u)" -eq 0 ]; then
  status=0
  "$NEUROND" --listen 127.0.0.1:0 --db "$TEST_TMP/never.db" --backend model:trn1.2xlarge \
    >"$TEST_TMP/out" 2>"$TEST_TMP/err" || status=$?
  [ "$status" -eq 1 ] || fail "running as root without --allow-root: exit status $status, expected 1"
  grep -q "refusing to run as root" "$TEST_TMP/err" || fail "no refusal message: $(cat "$TEST_TMP/err")"
  [ ! -e "$TEST_TMP/never.db" ] || fail "the database was created before refusing root"
fi
echo "cli: ok"
