#!/bin/sh
# End-to-end test of the dashboard in headless Chromium against the real
# daemon on the device model (tests/browser/dashboard.mjs does the work).
# Skips (77) only when node or chromium is missing; install-deps.sh --test
# installs both.
set -u
CHROMIUM=${CHROMIUM:-/usr/bin/chromium}
command -v node >/dev/null 2>&1 || { echo "SKIP: node is not installed"; exit 77; }
[ -x "$CHROMIUM" ] || { echo "SKIP: $CHROMIUM is not installed"; exit 77; }
export CHROMIUM
exec node "$top_srcdir/tests/browser/dashboard.mjs"
