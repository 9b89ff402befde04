#!/bin/sh
# Generates ./configure. The TAP test driver comes from the installed
# automake, which only copies it on request.
set -e
cd "$(dirname "$0")"
autoreconf -fi
cp -f "$(automake --print-libdir)/tap-driver.sh" build-aux/
