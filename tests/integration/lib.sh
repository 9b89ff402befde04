# The integration tests' library, sourced by every tests/integration/*.sh
# and by the shell benchmarks; never run. It starts the built daemon on
# 127.0.0.1 port 0 with a database in the test's own temporary folder,
# waits with bounded loops, stops the daemon and checks that it exited
# cleanly, and writes the TLS and password fixtures.
#
# From make check: NEUROND (the daemon, or a wrapper that execs it, such as
# tests/valgrind-neurond.sh when NEUROND_WRAPPER is set), NEUROND_BIN (the
# built binary itself), WEB_ROOT and top_srcdir.
#
# Verdicts      fail MESSAGE | skip MESSAGE | need COMMAND... | need_libsystemd
# Daemons       start_daemon [NAME] [ARGS...] | spawn_daemon [NAME] [ARGS...]
#               stop_daemon [NAME] | expect_clean_exit [NAME] | kill_daemon [NAME]
#               daemon_pid NAME | daemon_port NAME | wrap_neurond PREFIX
# Other programs start_helper COMMAND... | wait_helper PID
# Waiting       wait_until [SECONDS] COMMAND... | wait_exit SECONDS PID | file_has FILE PATTERN
#               metric_is SERIES VALUE | tick_at_least N
# Driven ticks  hold_ticks | run_ticks N | ticks_until N COMMAND... (a daemon started with --enable-admin), tick_of JSON
# HTTP          http PATH [CURL-ARGS...] | http_status PATH [CURL-ARGS...]
#               metric_value SERIES | healthz_tick | stable_metrics | free_port
# Fixtures      make_tls_cert | make_users_file FILE USER PASSWORD [COST]
#               mount_small_tmpfs SIZE | enter_mount_namespace [net] | install_into DESTDIR
#               need_image_prefix
#               pod_ready PID

set -eu

: "${NEUROND:?run through make check}" "${WEB_ROOT:?run through make check}"
: "${top_srcdir:?run through make check}"
TEST_TMP=$(mktemp -d "${TMPDIR:-/tmp}/neurond-test.XXXXXX")

# Every bound on waiting is ten times longer when the daemon runs under a
# wrapper (tests/valgrind-neurond.sh: memcheck starts the 144-device model
# in about 10 s).
SLOW=1
[ -z "${NEUROND_WRAPPER:-}" ] || SLOW=10

DAEMON_NAMES=     # every name start_daemon or spawn_daemon was given
DAEMON_NAME=      # the last daemon started, and its pid, log, port and base URL
DAEMON_PID=
DAEMON_LOG=
PORT=
URL=
HELPER_PIDS=
WRAPPERS=0

# At exit: daemons still running are killed, and fail a test that would
# pass (its daemons' exit status must be checked: stop_daemon); other
# programs are asked to stop.
cleanup() {
  _status=$?
  for _name in $DAEMON_NAMES; do
    _pid=$(daemon_pid "$_name")
    [ -n "$_pid" ] || continue
    kill -KILL "$_pid" 2>/dev/null || true
    wait "$_pid" 2>/dev/null || true
    if [ "$_status" -eq 0 ]; then
      echo "FAIL: daemon $_name still ran at the end of the test; stop_daemon checks its exit" >&2
      _status=1
    fi
  done
  for _pid in $HELPER_PIDS; do kill -TERM "$_pid" 2>/dev/null || true; done
  for _pid in $HELPER_PIDS; do wait "$_pid" 2>/dev/null || true; done
  # A test in a mount namespace of its own: what it mounted below
  # $TEST_TMP goes first, deepest first (a read-only bind is not emptied).
  if [ -n "${NEUROND_TEST_NS:-}" ]; then
    findmnt -rn -o TARGET | grep "^$TEST_TMP/" | sort -r | while read -r _mount; do
      umount -l "$_mount" 2>/dev/null || true
    done
  fi
  rm -rf "$TEST_TMP"
  exit "$_status"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# --- Verdicts

# fail MESSAGE: the test fails; the end of every daemon's log follows.
fail() {
  echo "FAIL: $*" >&2
  for _name in $DAEMON_NAMES; do
    [ -s "$TEST_TMP/$_name.log" ] || continue
    echo "--- the end of daemon $_name's log" >&2
    tail -n 30 "$TEST_TMP/$_name.log" >&2
  done
  exit 1
}

# skip MESSAGE: the test cannot run here (exit 77).
skip() {
  echo "SKIP: $*" >&2
  exit 77
}

# need COMMAND...: skip unless every COMMAND is installed.
need() {
  for _cmd; do
    command -v "$_cmd" >/dev/null 2>&1 || skip "$_cmd is not installed"
  done
}

need_libsystemd() {
  ldd "${NEUROND_BIN:-$NEUROND}" | grep -q libsystemd || skip "neurond was built without libsystemd"
}

# --- Daemons
#
# Each daemon has a NAME (letters, digits, _; neurond unless given): its
# database is $TEST_TMP/NAME.db, unless ARGS name another with --db, and
# its stdout and stderr go to $TEST_TMP/NAME.log. Later ARGS override the
# defaults (--listen, --web-root, --db). Several may run at once; the
# functions that take [NAME] default to the daemon started last.

# spawn_daemon [NAME] [ARGS...]: starts the daemon in the background
# without waiting for anything; sets DAEMON_NAME, DAEMON_PID and DAEMON_LOG.
# For a daemon that does not log a port to its stderr (socket activation,
# the journal); start_daemon is for everything else.
spawn_daemon() {
  case ${1:-} in
    '' | -*) DAEMON_NAME=neurond ;;
    *) DAEMON_NAME=$1 && shift ;;
  esac
  case $DAEMON_NAME in *[!A-Za-z0-9_]*) fail "daemon name '$DAEMON_NAME': letters, digits and _ only" ;; esac
  [ -z "$(daemon_pid "$DAEMON_NAME")" ] || fail "daemon $DAEMON_NAME is already running"
  DAEMON_LOG=$TEST_TMP/$DAEMON_NAME.log
  # Emptied here, not by the child, which may run late: until then the log
  # of an earlier daemon of that name would show its port.
  : >"$DAEMON_LOG"
  # Loopback only: the instance metadata service a real host would ask is
  # a closed port here, unless the test serves one (a later flag wins).
  "$NEUROND" --allow-root --listen 127.0.0.1:0 --web-root "$WEB_ROOT" --db "$TEST_TMP/$DAEMON_NAME.db" \
    --instance-metadata 127.0.0.1:1 "$@" >>"$DAEMON_LOG" 2>&1 &
  DAEMON_PID=$!
  eval "DAEMON_PID_$DAEMON_NAME=\$DAEMON_PID"
  case " $DAEMON_NAMES " in *" $DAEMON_NAME "*) ;; *) DAEMON_NAMES="$DAEMON_NAMES $DAEMON_NAME" ;; esac
  PORT=
  URL=
}

# start_daemon [NAME] [ARGS...]: spawn_daemon, then waits (20 s, times
# SLOW) until the daemon logs the port it bound; sets PORT and URL
# (http://127.0.0.1:PORT) too. Fails if the daemon exits meanwhile.
start_daemon() {
  spawn_daemon "$@"
  wait_until 20 port_logged || fail "daemon $DAEMON_NAME did not log its port within $((20 * SLOW)) s"
  PORT=$(daemon_port "$DAEMON_NAME")
  URL=http://127.0.0.1:$PORT
}
port_logged() {
  [ -z "$(daemon_port "$DAEMON_NAME")" ] || return 0
  ! kill -0 "$DAEMON_PID" 2>/dev/null || return 1
  _status=0
  wait "$DAEMON_PID" || _status=$?
  forget_daemon "$DAEMON_NAME"
  fail "daemon $DAEMON_NAME exited at start-up with status $_status"
}

# stop_daemon [NAME]: SIGTERM, then expect_clean_exit.
stop_daemon() {
  _name=${1:-$DAEMON_NAME}
  _pid=$(daemon_pid "$_name")
  [ -n "$_pid" ] || fail "stop_daemon: daemon $_name is not running"
  kill -TERM "$_pid"
  expect_clean_exit "$_name"
}

# expect_clean_exit [NAME]: waits (20 s, times SLOW) for the daemon to
# exit, without signalling it; fails unless its exit status is 0.
expect_clean_exit() {
  _name=${1:-$DAEMON_NAME}
  _pid=$(daemon_pid "$_name")
  [ -n "$_pid" ] || fail "expect_clean_exit: daemon $_name is not running"
  wait_until 20 not_running "$_pid" || fail "daemon $_name did not exit within $((20 * SLOW)) s"
  _status=0
  wait "$_pid" || _status=$?
  forget_daemon "$_name"
  [ "$_status" -eq 0 ] || fail "daemon $_name exited with status $_status"
}
not_running() {
  ! kill -0 "$1" 2>/dev/null
}

# kill_daemon [NAME]: SIGKILL, and the exit status is not checked (crash tests).
kill_daemon() {
  _name=${1:-$DAEMON_NAME}
  _pid=$(daemon_pid "$_name")
  [ -n "$_pid" ] || fail "kill_daemon: daemon $_name is not running"
  kill -KILL "$_pid" 2>/dev/null || true
  wait "$_pid" 2>/dev/null || true
  forget_daemon "$_name"
}

forget_daemon() {
  eval "DAEMON_PID_$1="
}

# daemon_pid NAME: its pid while it runs, else nothing.
daemon_pid() {
  eval "echo \"\${DAEMON_PID_$1:-}\""
}

# daemon_port NAME: the port it logged, or nothing yet.
daemon_port() {
  sed -n 's/.*listening on port \([0-9]*\).*/\1/p' "$TEST_TMP/$1.log" 2>/dev/null | head -n 1
}

# wrap_neurond PREFIX: from now on the daemon runs as
#   exec PREFIX "$NEUROND" ARGS...
# from a script in $TEST_TMP; PREFIX is shell text, such as
# 'env WATCHDOG_PID=$$ WATCHDOG_USEC=400000' or a launcher like
# "systemd-socket-activate -l 127.0.0.1:$port". exec keeps the pid, so $$
# in PREFIX is the daemon's pid too.
wrap_neurond() {
  WRAPPERS=$((WRAPPERS + 1))
  printf '#!/bin/sh\nexec %s "%s" "$@"\n' "$1" "$NEUROND" >"$TEST_TMP/neurond-wrapper$WRAPPERS"
  chmod +x "$TEST_TMP/neurond-wrapper$WRAPPERS"
  NEUROND=$TEST_TMP/neurond-wrapper$WRAPPERS
}

# --- Other programs in the background (Prometheus, listeners, nginx)

# start_helper COMMAND...: runs COMMAND in the background and sets
# HELPER_PID; it gets SIGTERM at exit unless wait_helper reaped it.
start_helper() {
  "$@" &
  HELPER_PID=$!
  HELPER_PIDS="$HELPER_PIDS $HELPER_PID"
}

# wait_helper PID: waits for it to exit; returns its exit status.
wait_helper() {
  _rest=
  for _pid in $HELPER_PIDS; do [ "$_pid" = "$1" ] || _rest="$_rest $_pid"; done
  HELPER_PIDS=$_rest
  wait "$1"
}

# --- Waiting

# wait_until [SECONDS] COMMAND...: runs COMMAND every 0.1 s until it
# succeeds, for at most SECONDS (default 10) times SLOW of the wall clock,
# however long each try takes. Returns 1 after saying so on stderr when
# time runs out; callers add `|| fail "why"`.
wait_until() {
  _wait_seconds=10
  case ${1:-} in '' | *[!0-9]*) ;; *) _wait_seconds=$1 && shift ;; esac
  _wait_end=$(($(date +%s%N) / 1000000 + _wait_seconds * SLOW * 1000))
  while ! "$@"; do
    if [ "$(($(date +%s%N) / 1000000))" -ge "$_wait_end" ]; then
      echo "timed out after $((_wait_seconds * SLOW)) s waiting until: $*" >&2
      return 1
    fi
    sleep 0.1
  done
}

# wait_exit SECONDS PID: waits up to SECONDS (times SLOW) for PID, started
# in the background by this shell, to exit, and sets EXIT_STATUS to its
# exit status. Returns 1, having killed it, when it still runs by then.
wait_exit() {
  if ! wait_until "$1" not_running "$2"; then
    kill -KILL "$2" 2>/dev/null || true
    wait "$2" 2>/dev/null || true
    return 1
  fi
  EXIT_STATUS=0
  wait "$2" || EXIT_STATUS=$?
}

# file_has FILE PATTERN: FILE exists and has a line matching PATTERN (grep).
file_has() {
  grep -q -- "$2" "$1" 2>/dev/null
}

# metric_is SERIES VALUE: metric_value SERIES is VALUE.
metric_is() {
  [ "$(metric_value "$1")" = "$2" ]
}

# tick_at_least N: /healthz reports tick N or a later one.
tick_at_least() {
  _tick=$(healthz_tick)
  [ -n "$_tick" ] && [ "$_tick" -ge "$1" ]
}

# --- Driven ticks: the daemon's clock, held and moved by the test through
# /api/v1/admin/ticks (the daemon needs --enable-admin). A test that counts
# ticks asserts the same thing however slowly the daemon runs.

# hold_ticks: the daemon's timer stops; nothing ticks but run_ticks. TICK
# and TICK_TIME are the latest tick's number and stamp.
hold_ticks() {
  _out=$(curl -sS --max-time 10 -X POST "$URL/api/v1/admin/ticks?hold=true" 2>&1) &&
    case $_out in *'"held":true'*) ;; *) false ;; esac || fail "hold_ticks: $_out"
  TICK=$(tick_of "$_out")
  TICK_TIME=$(tick_time_of "$_out")
}

# run_ticks N: holds the timer and runs N ticks, each stamped one interval
# after the last; returns once the last is stored and published, with TICK
# and TICK_TIME set to its number and stamp. The bound is on the whole run
# (300 s, times SLOW).
run_ticks() {
  _out=$(curl -sS --max-time $((300 * SLOW)) -X POST "$URL/api/v1/admin/ticks?run=$1" 2>&1) &&
    case $_out in *'"status":"success"'*) ;; *) false ;; esac || fail "run_ticks $1: $_out"
  TICK=$(tick_of "$_out")
  TICK_TIME=$(tick_time_of "$_out")
}

# ticks_until N COMMAND...: runs one tick at a time until COMMAND succeeds,
# at most N ticks; returns 1 after saying so on stderr when it never did
# (a bound on ticks, not seconds: the same under every instrument).
ticks_until() {
  _ticks_left=$1
  shift
  while ! "$@"; do
    if [ "$_ticks_left" -le 0 ]; then
      echo "not so after the ticks allowed: $*" >&2
      return 1
    fi
    run_ticks 1
    _ticks_left=$((_ticks_left - 1))
  done
}

# tick_of JSON: the "tick" a JSON answer was read from.
tick_of() {
  echo "$1" | sed -n 's/^{"status":"success","tick":\([0-9]*\).*/\1/p'
}

# tick_time_of JSON: the stamp of that tick in an answer of
# /api/v1/admin/ticks, Unix seconds with three decimals.
tick_time_of() {
  echo "$1" | sed -n 's/.*"timestamp":\([0-9]*\.[0-9]*\).*/\1/p'
}

# --- HTTP, to the daemon at $URL (the one started last, unless set)

# http PATH [CURL-ARGS...]: the body of a request, bounded in time; any
# status (CURL-ARGS may add --fail).
http() {
  _http_path=$1
  shift
  curl -sS --max-time 10 "$@" "$URL$_http_path"
}

# http_status PATH [CURL-ARGS...]: only the status code (000 when no answer).
http_status() {
  _http_path=$1
  shift
  curl -sS --max-time 10 -o /dev/null -w '%{http_code}' "$@" "$URL$_http_path"
}

# metric_value SERIES: the value of one exact series on /metrics, such as
# 'neuron_device_up{neuron_device="3"}', or nothing.
metric_value() {
  http /metrics | awk -v s="$1" 'index($0, s " ") == 1 { print $2 }'
}

# healthz_tick: the number of the latest tick, from /healthz.
healthz_tick() {
  http /healthz | sed -n 's/.*"tick":\([0-9]*\).*/\1/p'
}

# stable_metrics: /metrics without what changes from run to run: the
# daemon's own neurond_* and process_* families (timing, build, root path,
# its process) and the host's system_*.
stable_metrics() {
  http /metrics --fail | grep -Ev '^(# (HELP|TYPE) )?(neurond_|system_|process_)'
}

# free_port: a port that was free a moment ago, for programs that cannot
# bind port 0 and say which they got.
free_port() {
  python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

# --- Fixtures

# make_tls_cert: a self-signed certificate for 127.0.0.1 and localhost,
# valid for two days; TLS_CERT and TLS_KEY name its PEM files.
make_tls_cert() {
  need openssl
  TLS_CERT=$TEST_TMP/cert.pem
  TLS_KEY=$TEST_TMP/key.pem
  openssl req -x509 -newkey rsa:2048 -nodes -days 2 -subj /CN=localhost \
    -addext "subjectAltName=IP:127.0.0.1,DNS:localhost" \
    -keyout "$TLS_KEY" -out "$TLS_CERT" >"$TEST_TMP/openssl.log" 2>&1 ||
    fail "openssl: $(cat "$TEST_TMP/openssl.log")"
}

# make_users_file FILE USER PASSWORD [COST]: a basic_auth_users file with
# one user and a bcrypt hash of PASSWORD at COST (default 12). The hash
# comes from the C library's crypt(3) through perl (part of every Debian
# system), as python3's crypt module is gone from Python 3.13. The salt's
# last character carries two bits: one of . O e u.
make_users_file() {
  need perl
  _hash=$(perl -e '
    my ($password, $cost) = @ARGV;
    my @b64 = (".", "/", "A" .. "Z", "a" .. "z", "0" .. "9");
    my $salt = join("", map { $b64[rand @b64] } 1 .. 21) . (".", "O", "e", "u")[rand 4];
    my $hash = crypt($password, sprintf("\$2b\$%02d\$%s", $cost, $salt));
    exit 1 unless defined $hash && $hash =~ /^\$2b\$/;
    print "$hash\n";' "$3" "${4:-12}") || skip "the C library's crypt(3) has no bcrypt"
  printf '%s:%s\n' "$2" "$_hash" >"$1"
}

# need_image_prefix: skips unless this build installs under /usr/local,
# where the image tests (tests/integration/kube-pod.py) mount the
# install tree; make distcheck installs under a prefix of its own.
need_image_prefix() {
  image_prefix=$(sed -n 's/^prefix = //p' "${top_builddir:?run through make check}/Makefile")
  [ "$image_prefix" = /usr/local ] || skip "this build's prefix is $image_prefix, not the image's /usr/local"
}

# install_into DESTDIR: `make install DESTDIR=DESTDIR` of the build tree
# (top_builddir), as a package or an image recipe runs it; its output goes
# to DESTDIR.log. A make of its own, not the one running the tests.
install_into() {
  env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL "${MAKE:-make}" -C "${top_builddir:?run through make check}" install \
    DESTDIR="$1" >"$1.log" 2>&1 || fail "make install DESTDIR=$1: $(tail -n 20 "$1.log")"
}

# pod_ready PID: tests/integration/kube-pod.py, started in the background
# as PID with WORK $TEST_TMP/pod, passed its probes; fails the test when
# it exited instead.
pod_ready() {
  [ ! -f "$TEST_TMP/pod/ready" ] || return 0
  ! kill -0 "$1" 2>/dev/null || return 1
  _status=0
  wait_helper "$1" || _status=$?
  fail "the pod exited with status $_status before it was ready"
}

# enter_mount_namespace [net]: re-runs the test from its start (what came
# before runs twice: call this first) in a private mount namespace, so
# that its mounts are its own; with net, in a network namespace of its own
# too, where only loopback is up (ports are its own); skips where that is
# not allowed: no namespaces, or loopback that cannot be brought up (no
# CAP_NET_ADMIN, as in a container that may make namespaces).
enter_mount_namespace() {
  if [ -n "${NEUROND_TEST_NS:-}" ]; then
    if [ "${1:-}" = net ]; then
      _ip_error=$(ip link set lo up 2>&1) ||
        skip "cannot bring up loopback in a network namespace of its own: ${_ip_error:-ip failed}"
    fi
    return 0
  fi
  _unshare=--mount
  [ "${1:-}" != net ] || _unshare="--mount --net"
  # shellcheck disable=SC2086
  unshare $_unshare true 2>/dev/null || skip "cannot make namespaces ($_unshare)"
  rm -rf "$TEST_TMP"
  # shellcheck disable=SC2086
  NEUROND_TEST_NS=1 exec unshare $_unshare --propagation private sh "$0"
}

# mount_small_tmpfs SIZE: enter_mount_namespace, then a tmpfs of SIZE at
# $TEST_TMP/small, unmounted at exit once the daemons are gone.
mount_small_tmpfs() {
  enter_mount_namespace
  mkdir "$TEST_TMP/small"
  mount -t tmpfs -o "size=$1" tmpfs "$TEST_TMP/small" || skip "cannot mount a tmpfs"
}
