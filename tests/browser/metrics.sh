#!/bin/sh
# /metrics with gzip in headless Chromium against the real daemon
# (tests/browser/metrics.mjs does the work). Skips (77) as dashboard.sh does.
. "$top_srcdir/tests/integration/lib.sh"
CHROMIUM=${CHROMIUM:-/usr/bin/chromium}
need node
[ -x "$CHROMIUM" ] || skip "$CHROMIUM is not installed"
[ -f "$NODE_MODULES/playwright-core/package.json" ] ||
        skip "playwright-core is not in $NODE_MODULES (configure found no npm, or NODE_MODULES lacks it)"
export CHROMIUM
node "$top_srcdir/tests/browser/metrics.mjs"
