#!/bin/sh
# Generates ./configure. The test drivers (TAP's, and the shell tests')
# come from the installed automake, which only copies them on request.
set -e
cd "$(dirname "$0")"
autoreconf -fi
cp -f "$(automake --print-libdir)/tap-driver.sh" "$(automake --print-libdir)/test-driver" build-aux/
