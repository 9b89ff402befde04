#!/bin/sh
# End-to-end test of the dashboard in headless Chromium against the real
# daemon on the device model (tests/browser/dashboard.mjs does the work).
# Skips (77) only when node or chromium is missing; install-deps.sh --test
# installs both.
. "$top_srcdir/tests/integration/lib.sh"
CHROMIUM=${CHROMIUM:-/usr/bin/chromium}
need node
[ -x "$CHROMIUM" ] || skip "$CHROMIUM is not installed"
export CHROMIUM
node "$top_srcdir/tests/browser/dashboard.mjs"
