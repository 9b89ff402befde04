#!/bin/sh
# End-to-end test of the dashboard in headless Chromium against the real
# daemon on the device model (tests/browser/dashboard.mjs does the work).
# The pods card needs the test suite's kubelet (python3-grpcio,
# python3-grpc-tools), which install-deps.sh --test installs.
. "$top_srcdir/tests/integration/lib.sh"
. "$top_srcdir/tests/browser/lib.sh"
need_browser
node "$top_srcdir/tests/browser/dashboard.mjs"
