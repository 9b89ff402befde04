#!/bin/sh
# make bench: /metrics latency while the API is under load. On the largest
# model (trn3-gen2-ultraserver) with seven simulated days stored, scrapes
# (every half second, gzip, OpenMetrics) are timed alone, then while four
# clients run 7-day range queries over every core back to back and 200
# idle connections are held open. Goal: p99 under 100 ms, no scrape lost.
# Prints figures; never fails on them.
# Usage: bench/http-load.sh  (NEUROND=path/to/neurond; run by hand from
# the top of the tree, the built daemon and sources there)
set -eu
: "${NEUROND:=$PWD/daemon/neurond}" "${WEB_ROOT:=$PWD/web/static}" "${top_srcdir:=$PWD}"
. "$(dirname "$0")/../tests/integration/lib.sh"
SECONDS_EACH=${BENCH_SECONDS:-30}
need python3

echo "machine: $(uname -m), $(nproc) cores, $(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -n 1)"
start_daemon --backend model:trn3-gen2-ultraserver,seed=3,speed=43200 --interval 2m
printf '%-34s %8s %8s %8s %8s %7s %10s\n' LOAD SCRAPES P50_MS P99_MS MAX_MS FAILED RSS_MIB
for load in "alone:0:0" "4 queries + 200 idle:4:200"; do
  name=${load%%:*}
  rest=${load#*:}
  python3 "$top_srcdir/tests/integration/scrape-under-load.py" "$PORT" "$DAEMON_PID" "$SECONDS_EACH" "${rest%%:*}" \
    "${rest#*:}" >"$TEST_TMP/load.json"
  python3 - "$TEST_TMP/load.json" "$name" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
t = sorted(s[1] * 1000 for s in r["scrapes"])
failed = sum(1 for s in r["scrapes"] if s[0] != 200)
p99 = t[min(len(t) - 1, int(len(t) * 0.99))]
print(f"{sys.argv[2]:<34} {len(t):8} {t[len(t) // 2]:8.1f} {p99:8.1f} {t[-1]:8.1f} {failed:7} {r['rss_mib_max']:10.1f}")
PY
done
stop_daemon
