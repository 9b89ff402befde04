#!/bin/sh
# Dashboard benchmark (`make bench`): first meaningful paint, main-thread
# time per live update and memory over a run of live updates, in headless
# Chromium against the model. BENCH_SECONDS (default 600) sets the length,
# BENCH_INSTANCE the model instance (default trn3-gen2-ultraserver when the
# catalog has it, else trn1.32xlarge).
set -eu
command -v node >/dev/null 2>&1 || { echo "node is not installed" >&2; exit 1; }
[ -x "${CHROMIUM:-/usr/bin/chromium}" ] || { echo "chromium is not installed" >&2; exit 1; }
here=$(cd "$(dirname "$0")" && pwd)
exec node "$here/dashboard.mjs"
