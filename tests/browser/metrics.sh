#!/bin/sh
# /metrics with gzip in headless Chromium against the real daemon
# (tests/browser/metrics.mjs does the work).
. "$top_srcdir/tests/integration/lib.sh"
. "$top_srcdir/tests/browser/lib.sh"
need_browser
node "$top_srcdir/tests/browser/metrics.mjs"
