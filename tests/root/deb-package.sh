#!/bin/sh
# The Debian package, from the release tarball to a running daemon:
# - the tarball is the upstream (orig) tarball, debian/ comes from this
#   source tree;
# - a clean root (the base system) installs the build dependencies that
#   debian/control names and nothing else, then dpkg-buildpackage builds
#   the source and binary packages with no network (loopback only);
# - lintian checks them: any tag but the experimental ones fails, unless
#   debian/*lintian-overrides names it with the reason;
# - a second clean root installs the .deb with apt, and the installed daemon,
#   as an unprivileged user with the installed configuration and dashboard,
#   serves / and /metrics;
# - the maintainer scripts are run through install, reinstall, remove,
#   remove again, purge, purge again and install again, checking what stays
#   and what goes at each step.
#
# Usage, as root from the top of the source tree (tests/root/lib.sh):
#   tests/root/deb-package.sh neurond-VERSION.tar.xz
# leaves the .deb in ROOT_WORK, for tests/root/deb-service.sh.
set -eu
. "$(dirname "$0")/lib.sh"
why=$(root_can_make) || { echo "SKIP: cannot make a clean root here: $why"; exit 77; }
tarball=$(cd "$(dirname "${1:?usage: $0 neurond-VERSION.tar.xz}")" && pwd)/$(basename "$1")
version=$(basename "$tarball" .tar.xz)
version=${version#neurond-}

# --- Build
build=$(root_new deb-build)
mkdir "$build/build"
cp "$tarball" "$build/build/neurond_$version.orig.tar.xz"
tar -C "$build/build" -xf "$tarball"
cp -R debian "$build/build/neurond-$version/"
src=/build/neurond-$version
debversion=$(dpkg-parsechangelog -l "$build$src/debian/changelog" -S Version)
deb=neurond_${debversion}_$(dpkg --print-architecture).deb

echo "+ apt-get build-dep $src"
logged "$ROOT_WORK/deb-build-deps.log" root_run "$build" "in_root 'apt-get update -qq && apt-get build-dep -y -qq $src'"
echo "+ dpkg-buildpackage -us -uc (no network)"
logged "$ROOT_WORK/deb-build.log" root_run --net "$build" "in_root 'cd $src && dpkg-buildpackage -us -uc'"
ls "$build/build"

# Every level but lintian's experimental tags; the overrides in
# debian/*lintian-overrides say why each is there.
echo "+ lintian --pedantic --display-info"
lintian --pedantic --display-info --fail-on error,warning,info,pedantic "$build/build/neurond_${debversion}_$(dpkg --print-architecture).changes" ||
  { echo "FAIL: lintian reports the tags above" >&2; exit 1; }
echo "  lintian $(lintian --print-version): no tags (errors, warnings, info, pedantic) but $(cat debian/neurond.lintian-overrides debian/source/lintian-overrides | grep -c '^neurond') documented overrides"

# --- Install and run
inst=$(root_new deb-install)
cp "$build/build/$deb" "$inst/tmp/"
echo "+ apt-get install ./$deb"
logged "$ROOT_WORK/deb-install.log" root_run "$inst" "in_root 'apt-get update -qq && apt-get install -y -qq /tmp/$deb'"

# installed_files: every file the package promises is there.
installed_files() {
  root_run "$inst" "in_root '
    for f in /usr/bin/neurond /lib/systemd/system/neurond.service /lib/systemd/system/neurond.socket \
      /usr/share/man/man8/neurond.8.gz /usr/share/neurond/web/index.html /usr/share/neurond/web/vendor/uPlot.iife.min.js \
      /etc/neurond/neurond.conf; do
      test -f \$f || { echo \"FAIL: \$f is not installed\" >&2; exit 1; }
    done
    test -L /etc/systemd/system/multi-user.target.wants/neurond.service || { echo \"FAIL: neurond.service is not enabled\" >&2; exit 1; }
    test ! -e /etc/systemd/system/sockets.target.wants/neurond.socket || { echo \"FAIL: neurond.socket is enabled\" >&2; exit 1; }
    grep -q \"^ExecStart=/usr/bin/neurond\\\$\" /lib/systemd/system/neurond.service || { echo \"FAIL: the unit does not start /usr/bin/neurond\" >&2; exit 1; }
  '"
}
installed_files
echo "ok: the binary, units (the service enabled, the socket not), man page, dashboard and sample configuration are installed"

echo "+ the installed daemon, as nobody, with the installed configuration and dashboard"
root_run --net "$inst" "
  in_root 'setpriv --reuid=nobody --regid=nogroup --clear-groups /usr/bin/neurond --check-config' | grep 'config /etc/neurond/neurond.conf'
  serves_dashboard '$ROOT_WORK/deb-daemon.log' 'exec setpriv --reuid=nobody --regid=nogroup --clear-groups /usr/bin/neurond --db /tmp/neurond.db --backend model:trn1.32xlarge'
"

# --- Maintainer scripts
# step DESCRIPTION COMMAND: runs COMMAND in the install root (no network).
step() {
  echo "+ $1"
  root_run --net "$inst" "in_root '$2'" || { echo "FAIL: $1" >&2; exit 1; }
}
step "reinstall keeps an edited configuration" \
  "echo \"# edited\" >>/etc/neurond/neurond.conf && dpkg -i /tmp/$deb >/dev/null && tail -n 1 /etc/neurond/neurond.conf | grep -qx \"# edited\""
installed_files
step "remove takes the program and keeps the configuration" \
  "dpkg -r neurond >/dev/null && test ! -e /usr/bin/neurond && test ! -e /lib/systemd/system/neurond.service && test -f /etc/neurond/neurond.conf"
step "remove again does nothing" "dpkg -r neurond 2>&1 && test -f /etc/neurond/neurond.conf"
# The state directory as systemd makes it for the dynamic user.
step "purge takes the configuration, the state directory and the unit's enablement" \
  "mkdir -p /var/lib/private/neurond && touch /var/lib/private/neurond/neurond.db && ln -s private/neurond /var/lib/neurond &&
   dpkg -P neurond >/dev/null && test ! -e /etc/neurond && test ! -e /var/lib/neurond && test ! -e /var/lib/private/neurond &&
   test ! -e /etc/systemd/system/multi-user.target.wants/neurond.service"
step "purge again does nothing" "dpkg -P neurond 2>&1"
step "install after purge" "dpkg -i /tmp/$deb >/dev/null && ! grep -q \"^# edited\" /etc/neurond/neurond.conf"
installed_files

cp "$build/build/$deb" "$ROOT_WORK/"
rm -rf "$build" "$inst"
echo "the package: $ROOT_WORK/$deb"
echo "PASS: the package builds offline from the tarball, installs, runs, and its maintainer scripts are idempotent"
