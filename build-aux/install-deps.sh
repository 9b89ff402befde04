#!/bin/sh
# Installs what neurond needs on Debian 12: the build dependencies, and with
# --test also the real clients and servers the test suite drives.
# Runs apt-get through sudo when not root.
set -eu

build_packages="build-essential autoconf automake libtool pkg-config
  libmicrohttpd-dev libsqlite3-dev libsystemd-dev libinih-dev zlib1g-dev libcrypt-dev libgnutls28-dev
  libgrpc-dev libprotobuf-c-dev protobuf-c-compiler libcurl4-gnutls-dev libsnappy-dev
  libjson-c-dev"
# In a git checkout the dashboard's web assets (uPlot) come from npm through
# package-lock.json (a release tarball carries them), and so does the
# browser test's driver (playwright-core), at make check.
# A Node.js that already ships npm (e.g. NodeSource's) is kept as is; Debian's
# own nodejs needs the separate npm package.
if command -v npm >/dev/null 2>&1; then
  build_packages="$build_packages nodejs"
else
  build_packages="$build_packages nodejs npm"
fi
# tests/root/ (run by .ci/run) makes clean Debian roots with mmdebstrap,
# boots one with systemd-nspawn and checks the package with lintian.
# python3-grpcio and python3-grpc-tools: the test suite's stand-in kubelet;
# socat: the Kubernetes pod's relay to it.
test_packages="libcmocka-dev sqlite3 curl prometheus victoria-metrics python3-prometheus-client
  clang libclang-rt-14-dev clang-format mandoc systemd python3 python3-yaml openssl gzip wrk nginx-light
  chromium valgrind mmdebstrap systemd-container lintian iproute2 git
  python3-grpcio python3-grpc-tools socat"

packages=$build_packages
case "${1:-}" in
  --test) packages="$build_packages $test_packages" ;;
  "") ;;
  *) echo "usage: $0 [--test]" >&2; exit 2 ;;
esac

sudo=
[ "$(id -u)" -eq 0 ] || sudo=sudo

missing=
for p in $packages; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing="$missing $p"
done
if [ -n "$missing" ]; then
  $sudo apt-get update -qq
  # shellcheck disable=SC2086
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends $missing
fi
