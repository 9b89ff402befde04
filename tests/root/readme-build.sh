#!/bin/sh
# The README's first command on a clean Debian system. A root with nothing
# but the base system gets this source tree's git files and runs the
# command as the README gives it: its build part (install-deps.sh without
# --test, autogen, configure, make) with the network, then the daemon, in a
# network namespace of its own, which must serve / and /metrics. Then make
# install under /usr/local: the installed daemon, reading the installed
# sample configuration with its web_root line uncommented, serves the
# dashboard too (on the model, named as the README names it: a root without
# the Neuron driver has no devices to show).
#
# Run from the top of a git checkout, as root (tests/root/lib.sh).
set -eu
. "$(dirname "$0")/lib.sh"
why=$(root_can_make) || { echo "SKIP: cannot make a clean root here: $why"; exit 77; }

command=$(grep -m1 '^build-aux/install-deps.sh && ' README.md) || { echo "FAIL: no first command in README.md" >&2; exit 1; }
build=${command%% && daemon/neurond *}
daemon="daemon/neurond ${command#* && daemon/neurond }"
[ "$build" != "$command" ] || { echo "FAIL: the README's first command does not end by starting daemon/neurond" >&2; exit 1; }

root=$(root_new readme)
mkdir "$root/src"
git ls-files -z | xargs -0 cp --parents -t "$root/src"

echo "+ $build"
logged "$ROOT_WORK/readme-build.log" root_run "$root" "in_root 'cd /src && $build'"

echo "+ $daemon"
root_run --net "$root" "serves_dashboard '$ROOT_WORK/readme-daemon.log' 'cd /src && exec $daemon'"

echo "+ make install, and the installed daemon with the installed sample configuration"
logged "$ROOT_WORK/readme-install.log" root_run "$root" "in_root 'cd /src && make install'"
root_run --net "$root" "
  in_root 'sed -i \"s|^# web_root = |web_root = |\" /usr/local/etc/neurond/neurond.conf && grep ^web_root /usr/local/etc/neurond/neurond.conf'
  serves_dashboard '$ROOT_WORK/installed-daemon.log' 'exec /usr/local/bin/neurond --allow-root --db /tmp/installed.db --backend model:trn1.32xlarge'
"
rm -rf "$root"
echo "PASS: the README's first command builds and serves in a clean $ROOT_SUITE root"
