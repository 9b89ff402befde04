# Clean Debian roots, for the checks that must start from nothing but the
# base system: the README's first command (readme-build.sh) and the Debian
# package (deb-package.sh). Sourced by them, and again inside the namespaces
# root_run makes; never run. They are not part of make check: they download
# packages from deb.debian.org and npm's registry, and .ci/run runs them.
#
# A root gets the host's network settings: its resolv.conf and, where the
# host trusts local CAs (/usr/local/share/ca-certificates, as behind a
# TLS-inspecting proxy), those CAs for npm (NODE_EXTRA_CA_CERTS); apt uses
# plain HTTP and signed indexes.
#
# Everything lives under ROOT_WORK (default build-root/ in the current
# directory): the base system's tarball, made by mmdebstrap on first use,
# and the roots unpacked from it. Nothing is cached anywhere else.
#
# root_can_make             prints why not and fails when this machine cannot
#                           make roots (no root privileges, no namespaces, no
#                           loopback in a network namespace for root_run --net)
# root_new NAME             ROOT_WORK/NAME: a new root with the base system
#                           (the essential packages and apt); prints its path
# root_run [--net] ROOT SCRIPT
#                           runs the shell SCRIPT on the host side, with this
#                           library's functions, in new mount and PID
#                           namespaces where ROOT has /proc and /dev; with
#                           --net also in a network namespace of its own with
#                           only loopback (offline, and port 9710 is free).
#                           Processes left over die with the namespace.
# logged LOG COMMAND...      runs COMMAND with its output in the file LOG;
#                           prints LOG's end if it fails, and how long it took
# In SCRIPT:
#   in_root COMMAND         runs the shell COMMAND inside ROOT as root, in a
#                           clean environment
#   start_in_root LOG COMMAND
#                           starts the shell COMMAND inside ROOT in the
#                           background, its output in the file LOG; COMMAND
#                           ends by exec'ing the program to stop
#   stop_in_root            SIGTERM to it; fails unless it exits with 0
#   wait_http URL           waits (120 s) until URL answers
#   expect_page URL TEXT    URL answers 200 with TEXT in its body
#   serves_dashboard LOG COMMAND
#                           start_in_root LOG COMMAND (a daemon on the
#                           default 127.0.0.1:9710), which must serve the
#                           page, its uPlot and /metrics; then stop_in_root

ROOT_WORK=${ROOT_WORK:-$PWD/build-root}
ROOT_SUITE=bookworm
ROOT_LOCAL_CAS=usr/local/share/host-local-cas.pem
ROOT_LIB=$(cd "$(dirname "$0")" && pwd)/lib.sh

root_can_make() {
  [ "$(id -u)" -eq 0 ] || { echo "not running as root: mmdebstrap and chroot need root privileges"; return 1; }
  unshare --mount --pid --fork true 2>/dev/null || { echo "cannot create mount and PID namespaces"; return 1; }
  # Bringing loopback up needs CAP_NET_ADMIN, which a container that may
  # make namespaces can lack.
  _ip_error=$(unshare --net ip link set lo up 2>&1) ||
    { echo "cannot bring up loopback in a network namespace: ${_ip_error:-unshare failed}"; return 1; }
}

root_new() {
  _base=$ROOT_WORK/base-$ROOT_SUITE.tar
  if [ ! -f "$_base" ]; then
    mkdir -p "$ROOT_WORK"
    # minbase: the essential packages and apt, less than a fresh install has.
    mmdebstrap --variant=minbase --format=tar --quiet "$ROOT_SUITE" "$_base.part" >&2
    mv "$_base.part" "$_base"
  fi
  rm -rf "${ROOT_WORK:?}/$1"
  mkdir -p "$ROOT_WORK/$1"
  tar -C "$ROOT_WORK/$1" -xf "$_base"
  cp /etc/resolv.conf "$ROOT_WORK/$1/etc/resolv.conf"
  for _ca in /usr/local/share/ca-certificates/*.crt; do
    [ -f "$_ca" ] || continue
    cat "$_ca" >>"$ROOT_WORK/$1/$ROOT_LOCAL_CAS"
  done
  echo "$ROOT_WORK/$1"
}

root_run() {
  _net=
  if [ "$1" = --net ]; then
    _net=--net
    shift
  fi
  ROOT=$1 ROOT_NET=$_net unshare --mount --pid --fork $_net -- sh -euc '
    . "$1"
    [ -z "$ROOT_NET" ] || ip link set lo up
    mount -t proc proc "$ROOT/proc"
    mount --rbind /dev "$ROOT/dev"
    eval "$2"' sh "$ROOT_LIB" "$2"
}

logged() {
  _log=$1
  shift
  _start=$(date +%s)
  if "$@" >"$_log" 2>&1; then
    echo "  done in $(($(date +%s) - _start)) s (log: $_log)"
  else
    _status=$?
    echo "FAIL after $(($(date +%s) - _start)) s; the end of $_log:" >&2
    tail -n 60 "$_log" >&2
    return "$_status"
  fi
}

in_root() {
  _ca=
  [ ! -f "$ROOT/$ROOT_LOCAL_CAS" ] || _ca=NODE_EXTRA_CA_CERTS=/$ROOT_LOCAL_CAS
  chroot "$ROOT" /usr/bin/env -i PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
    HOME=/root LANG=C.UTF-8 DEBIAN_FRONTEND=noninteractive $_ca /bin/sh -euc "$1"
}

start_in_root() {
  _log=$1
  shift
  in_root_exec "$1" >"$_log" 2>&1 &
  ROOT_PID=$!
  ROOT_PID_LOG=$_log
}
in_root_exec() {
  exec chroot "$ROOT" /usr/bin/env -i PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
    HOME=/root LANG=C.UTF-8 /bin/sh -euc "$1"
}

stop_in_root() {
  kill -TERM "$ROOT_PID"
  wait "$ROOT_PID" || { echo "FAIL: it exited with status $?; its log:" >&2; cat "$ROOT_PID_LOG" >&2; return 1; }
}

wait_http() {
  _i=0
  until curl -s -o /dev/null --max-time 2 "$1"; do
    _i=$((_i + 1))
    [ "$_i" -lt 240 ] || { echo "FAIL: $1 did not answer within 120 s" >&2; return 1; }
    sleep 0.5
  done
}

expect_page() {
  _body=$(curl -sS --fail --max-time 10 "$1") || { echo "FAIL: $1 did not answer 200" >&2; return 1; }
  case $_body in
    *"$2"*) echo "ok: $1 answers with '$2'" ;;
    *) echo "FAIL: $1 answered without '$2'" >&2; return 1 ;;
  esac
}

serves_dashboard() {
  start_in_root "$1" "$2"
  wait_http http://127.0.0.1:9710/metrics || { cat "$1" >&2; return 1; }
  expect_page http://127.0.0.1:9710/ '<title>'
  expect_page http://127.0.0.1:9710/vendor/uPlot.iife.min.js 'uPlot'
  expect_page http://127.0.0.1:9710/metrics 'neuroncore_utilization_ratio{'
  stop_in_root
}
