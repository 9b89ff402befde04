#!/bin/sh
# make bench: remote write from neurond against Prometheus's agent mode
# scraping the same daemons and forwarding their samples, both into one
# VictoriaMetrics on 127.0.0.1. DAEMONS daemons (model
# trn3-gen2-ultraserver, 1 s interval) run BENCH_SECONDS in three phases:
#   idle     neither scraped nor writing: the daemons' own cost
#   agent    scraped every second by `prometheus --enable-feature=agent`
#            that remote-writes what it scrapes
#   neurond  other daemons of the same kind, each writing to the receiver
#            itself ([remote_write] section)
# CPU per million samples is the CPU the forwarding adds: for the agent,
# its own CPU plus what the scrapes add to the daemons; for neurond, what
# the daemons with remote write use beyond the idle ones. Prints figures;
# never fails on them.
# Usage: bench/remote-write.sh  (NEUROND=path/to/neurond; run by hand from
# the top of the tree, the built daemon and sources there)
set -eu
: "${NEUROND:=$PWD/daemon/neurond}" "${WEB_ROOT:=$PWD/web/static}" "${top_srcdir:=$PWD}"
. "$(dirname "$0")/../tests/integration/lib.sh"
. "$(dirname "$0")/../tests/integration/receivers.sh"
SECONDS_EACH=${BENCH_SECONDS:-30}
DAEMONS=${BENCH_DAEMONS:-2}
BACKEND=model:trn3-gen2-ultraserver,seed=3
need prometheus
need victoria-metrics

echo "machine: $(uname -m), $(nproc) cores, $(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -n 1)"
TICK=$(getconf CLK_TCK)

# cpu_seconds PID...: user plus system CPU seconds of the processes so far.
cpu_seconds() {
  for _p in "$@"; do
    # Fields 14 and 15 of /proc/PID/stat, counted after the ")" that ends
    # the command name (which may hold spaces).
    sed 's/.*) //' "/proc/$_p/stat" | awk '{ print $12 + $13 }'
  done | awk -v tick="$TICK" '{ s += $1 } END { printf "%.3f\n", s / tick }'
}

# sum_metric URL NAME: the sum of a family's samples on URL's /metrics.
sum_metric() {
  curl -sS --max-time 10 "$1/metrics" | awk -v n="$2" '$1 == n || index($1, n "{") == 1 { s += $NF } END { printf "%.0f\n", s }'
}

start_victoria_metrics vm

# The daemons the agent scrapes: no remote write.
scraped_pids=
targets=
k=0
while [ "$k" -lt "$DAEMONS" ]; do
  start_daemon "plain$k" --backend "$BACKEND" --interval 1s
  scraped_pids="$scraped_pids $DAEMON_PID"
  targets="$targets${targets:+, }'127.0.0.1:$PORT'"
  k=$((k + 1))
done
sleep 5

# Phase idle.
c0=$(cpu_seconds $scraped_pids)
sleep "$SECONDS_EACH"
idle_cpu=$(python3 -c "import sys; print(float(sys.argv[2]) - float(sys.argv[1]))" "$c0" "$(cpu_seconds $scraped_pids)")

# Phase agent.
agent_port=$(free_port)
cat >"$TEST_TMP/agent.yml" <<CONF
global:
  scrape_interval: 1s
  scrape_timeout: 1s
scrape_configs:
  - job_name: neurond
    static_configs:
      - targets: [$targets]
remote_write:
  - url: $(receiver_write_url vm)
CONF
start_helper prometheus --enable-feature=agent --config.file="$TEST_TMP/agent.yml" \
  --storage.agent.path="$TEST_TMP/agent" --web.listen-address="127.0.0.1:$agent_port" >"$TEST_TMP/agent.log" 2>&1
agent_pid=$HELPER_PID
wait_until 60 curl -sf -o /dev/null "http://127.0.0.1:$agent_port/-/ready" || fail "the agent did not start"
sleep 5
a0=$(cpu_seconds "$agent_pid")
d0=$(cpu_seconds $scraped_pids)
s0=$(sum_metric "http://127.0.0.1:$agent_port" prometheus_remote_storage_samples_total)
sleep "$SECONDS_EACH"
a1=$(cpu_seconds "$agent_pid")
d1=$(cpu_seconds $scraped_pids)
s1=$(sum_metric "http://127.0.0.1:$agent_port" prometheus_remote_storage_samples_total)
kill -TERM "$agent_pid"
wait_helper "$agent_pid" || true
k=0
while [ "$k" -lt "$DAEMONS" ]; do
  stop_daemon "plain$k"
  k=$((k + 1))
done

# Phase neurond.
cat >"$TEST_TMP/rw.conf" <<CONF
[remote_write vm]
url = $(receiver_write_url vm)
CONF
writer_pids=
writer_urls=
k=0
while [ "$k" -lt "$DAEMONS" ]; do
  start_daemon "writer$k" --backend "$BACKEND" --interval 1s --config "$TEST_TMP/rw.conf"
  writer_pids="$writer_pids $DAEMON_PID"
  writer_urls="$writer_urls $URL"
  k=$((k + 1))
done
sleep 5
sent() {
  for _u in $writer_urls; do sum_metric "${_u%/}" neurond_remote_write_samples_sent_total; done | awk '{ s += $1 } END { print s }'
}
w0=$(cpu_seconds $writer_pids)
n0=$(sent)
sleep "$SECONDS_EACH"
w1=$(cpu_seconds $writer_pids)
n1=$(sent)
k=0
while [ "$k" -lt "$DAEMONS" ]; do
  stop_daemon "writer$k"
  k=$((k + 1))
done

python3 - "$SECONDS_EACH" "$DAEMONS" "$idle_cpu" "$a0" "$a1" "$d0" "$d1" "$s0" "$s1" "$w0" "$w1" "$n0" "$n1" <<'PY'
import sys
secs, daemons, idle, a0, a1, d0, d1, s0, s1, w0, w1, n0, n1 = map(float, sys.argv[1:])
agent_samples = s1 - s0
agent_cpu = (a1 - a0) + (d1 - d0) - idle
rw_samples = n1 - n0
rw_cpu = (w1 - w0) - idle
print(f"{int(daemons)} daemons of trn3-gen2-ultraserver at a 1 s interval, {int(secs)} s a phase")
print(f"{'PATH':<36} {'SAMPLES/S':>10} {'CPU_S':>8} {'CPU_S/1M':>9}")
for name, n, cpu in (("prometheus --enable-feature=agent", agent_samples, agent_cpu),
                     ("neurond remote write", rw_samples, rw_cpu)):
    per_m = cpu / n * 1e6 if n > 0 else float("nan")
    print(f"{name:<36} {n / secs:10.0f} {cpu:8.2f} {per_m:9.2f}")
print(f"(the daemons alone: {idle:.2f} CPU s; the agent itself: {a1 - a0:.2f}, the scrapes on the daemons: {d1 - d0 - idle:.2f})")
PY
