#!/bin/sh
# Scrapes never wait behind API queries: on the largest model
# (trn3-gen2-ultraserver) with seven simulated days stored, four clients
# run 7-day range queries over every core back to back while 200 idle
# connections are held open; every scrape (every half second, gzip, a 10 s
# timeout as Prometheus sets) must be answered 200, every /healthz must be
# answered, and the daemon's resident memory must stay under 96 MiB.
# Latencies are printed; `make bench` (bench/http-load.sh) records them.
. "$(dirname "$0")/lib.sh"
need curl
need python3

start_daemon --backend model:trn3-gen2-ultraserver,seed=3,speed=43200 --interval 2m
# AddressSanitizer's shadow memory and quarantine multiply resident memory:
# the bound is for the daemon as built, and not checked under it.
rss_limit=96
! grep -q AddressSanitizer "$NEUROND_BIN" || rss_limit=0
python3 "$(dirname "$0")/scrape-under-load.py" "$PORT" "$DAEMON_PID" 20 4 200 >"$TEST_TMP/load.json" ||
  fail "the load driver failed"
python3 - "$TEST_TMP/load.json" "$rss_limit" <<'PY' || fail "under load: see above"
import json, sys
r = json.load(open(sys.argv[1]))
rss_limit = float(sys.argv[2])
scrapes = sorted(t for _, t in r["scrapes"])
problems = []
failed = [s for s in r["scrapes"] if s[0] != 200]
if failed or len(scrapes) < 20:
    problems.append(f"{len(failed)} of {len(scrapes)} scrapes failed: {failed[:5]}")
unanswered = [h for h in r["healthz"] if h[0] not in (200, 503)]
if unanswered:
    problems.append(f"/healthz unanswered: {unanswered[:5]}")
if r["queries"].get("200", 0) < 4:
    problems.append(f"the queries did not run: {r['queries']}")
if rss_limit and r["rss_mib_max"] >= rss_limit:
    problems.append(f"resident memory reached {r['rss_mib_max']:.1f} MiB")
print(f"{len(scrapes)} scrapes: median {scrapes[len(scrapes) // 2] * 1000:.0f} ms, max {scrapes[-1] * 1000:.0f} ms; "
      f"queries {r['queries']}; peak RSS {r['rss_mib_max']:.1f} MiB; idle connections reopened {r['idle_reopened']}")
for p in problems:
    print("FAIL:", p)
sys.exit(1 if problems else 0)
PY
stop_daemon
