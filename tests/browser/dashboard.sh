#!/bin/sh
# End-to-end test of the dashboard in headless Chromium against the real
# daemon on the device model (tests/browser/dashboard.mjs does the work).
# Skips (77) only when node, chromium or the npm package playwright-core is
# missing; install-deps.sh --test installs the first two and npm, with which
# make check installs the third.
. "$top_srcdir/tests/integration/lib.sh"
CHROMIUM=${CHROMIUM:-/usr/bin/chromium}
need node
[ -x "$CHROMIUM" ] || skip "$CHROMIUM is not installed"
[ -f "$NODE_MODULES/playwright-core/package.json" ] ||
        skip "playwright-core is not in $NODE_MODULES (configure found no npm, or NODE_MODULES lacks it)"
export CHROMIUM
node "$top_srcdir/tests/browser/dashboard.mjs"
