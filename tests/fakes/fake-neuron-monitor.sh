#!/bin/sh
# A stand-in for neuron-monitor: prints line N of LINES every 0.2 s, as
# neuron-monitor prints one JSON document per period, N read from STEP
# each time (1 while STEP is absent), so that a test moves it on by
# renaming a new STEP into place (a STEP read while it is rewritten in
# place is empty, and `sed -n p` prints every line). Writes its pid to
# PIDFILE, so that the test can kill it.
# Usage: fake-neuron-monitor.sh LINES STEP PIDFILE
set -eu
echo $$ >"$3"
while :; do
  n=$(cat "$2" 2>/dev/null || echo 1)
  sed -n "${n}p" "$1"
  sleep 0.2
done
