#!/bin/sh
# /metrics throughput against nginx serving the same bytes as a static file:
# both on loopback, same wrk settings, one instance type at a time, plain
# and gzip-compressed (nginx sends the page neurond compressed, as a
# pre-compressed file with its Content-Encoding).
# Goals: neurond >= 1.0 x nginx for trn2.48xlarge, >= 0.9 x for
# trn3-gen2-ultraserver, plain and gzip. Prints figures; never fails on them.
# Usage: bench/http-bench.sh [INSTANCE...]  (NEUROND=path/to/neurond)
set -eu
# Run by hand from the top of the tree, the built daemon and sources there.
: "${NEUROND:=$PWD/daemon/neurond}" "${WEB_ROOT:=$PWD/web/static}" "${top_srcdir:=$PWD}"
. "$(dirname "$0")/../tests/integration/lib.sh"
DURATION=${BENCH_DURATION:-10s}
CONNECTIONS=${BENCH_CONNECTIONS:-32}
THREADS=${BENCH_THREADS:-2}
need wrk nginx curl # build-aux/install-deps.sh --test installs them

# rps URL [WRK-ARGS...]: requests per second wrk measured.
rps() {
  _url=$1
  shift
  wrk -t"$THREADS" -c"$CONNECTIONS" -d"$DURATION" "$@" "$_url" >"$TEST_TMP/wrk.out" 2>&1
  if grep -q 'Non-2xx' "$TEST_TMP/wrk.out"; then
    echo "bench: non-2xx answers from $1" >&2
    cat "$TEST_TMP/wrk.out" >&2
    exit 1
  fi
  sed -n 's/^Requests\/sec: *\([0-9.]*\).*/\1/p' "$TEST_TMP/wrk.out"
}

instances=${*:-"trn2.48xlarge trn3-gen2-ultraserver"}
catalog=$("$NEUROND" --list-instances)
echo "machine: $(uname -m), $(nproc) CPUs, $(sed -n 's/^model name[^:]*: //p' /proc/cpuinfo | head -n 1)"
echo "wrk -t$THREADS -c$CONNECTIONS -d$DURATION on 127.0.0.1; nginx $(nginx -v 2>&1 | sed 's/.*nginx\///'), 2 workers, access log off"
# cpu_ticks PID...: user + system clock ticks the processes have used.
cpu_ticks() {
  for p in "$@"; do awk '{ print $14 + $15 }' "/proc/$p/stat"; done | awk '{ t += $1 } END { print t + 0 }'
}
# per_request TICKS REQUESTS: microseconds of CPU per request.
per_request() {
  awk -v t="$1" -v r="$2" -v hz="$(getconf CLK_TCK)" 'BEGIN { printf "%.1f", (r > 0 ? t / hz / r * 1e6 : 0) }'
}

printf '%-30s %8s %12s %12s %7s %14s %14s\n' INSTANCE BYTES NEUROND_RPS NGINX_RPS RATIO NEUROND_US/REQ NGINX_US/REQ
for inst in $instances; do
  note=
  if ! echo "$catalog" | grep -q "^$inst "; then
    note=" (stand-in: $inst is not in this build's model catalog)"
    inst=trn1.32xlarge
  fi
  start_daemon --db "$TEST_TMP/$inst.db" --backend "model:$inst" --interval 1s
  mkdir -p "$TEST_TMP/www"
  http /metrics --fail -o "$TEST_TMP/www/metrics"
  http /metrics --fail -H 'Accept-Encoding: gzip' -o "$TEST_TMP/www/metrics.gz"
  # nginx's workers drop root privileges: let them read the files.
  chmod 755 "$TEST_TMP" "$TEST_TMP/www"
  chmod 644 "$TEST_TMP/www/metrics" "$TEST_TMP/www/metrics.gz"

  nport=$(free_port)
  cat >"$TEST_TMP/nginx.conf" <<CONF
daemon off;
worker_processes 2;
pid $TEST_TMP/nginx.pid;
error_log $TEST_TMP/nginx-error.log;
events { worker_connections 1024; }
http {
  access_log off;
  client_body_temp_path $TEST_TMP/nginx-body;
  proxy_temp_path $TEST_TMP/nginx-proxy;
  fastcgi_temp_path $TEST_TMP/nginx-fastcgi;
  uwsgi_temp_path $TEST_TMP/nginx-uwsgi;
  scgi_temp_path $TEST_TMP/nginx-scgi;
  server {
    listen 127.0.0.1:$nport;
    root $TEST_TMP/www;
    location / { default_type "text/plain; version=0.0.4; charset=utf-8"; }
    location = /metrics.gz {
      default_type "text/plain; version=0.0.4; charset=utf-8";
      add_header Content-Encoding gzip;
    }
  }
}
CONF
  start_helper nginx -c "$TEST_TMP/nginx.conf" -e "$TEST_TMP/nginx-error.log"
  nginx_pid=$HELPER_PID
  wait_until curl -s -o /dev/null "http://127.0.0.1:$nport/metrics" ||
    fail "nginx did not start: $(cat "$TEST_TMP/nginx-error.log")"

  # CPU time per request (user + system, from /proc) is steadier than
  # requests per second on a machine shared with other work.
  workers=$(pgrep -P "$nginx_pid" | tr '\n' ' ')
  for encoding in plain gzip; do
    if [ "$encoding" = plain ]; then
      file=metrics
      set --
    else
      file=metrics.gz
      set -- -H 'Accept-Encoding: gzip'
    fi
    bytes=$(wc -c <"$TEST_TMP/www/$file")
    cpu0=$(cpu_ticks "$DAEMON_PID")
    n=$(rps "$URL/metrics" "$@")
    cpu1=$(cpu_ticks "$DAEMON_PID")
    n_req=$(sed -n 's/^ *\([0-9]*\) requests in.*/\1/p' "$TEST_TMP/wrk.out")
    # shellcheck disable=SC2086
    gcpu0=$(cpu_ticks $workers)
    g=$(rps "http://127.0.0.1:$nport/$file" "$@")
    # shellcheck disable=SC2086
    gcpu1=$(cpu_ticks $workers)
    g_req=$(sed -n 's/^ *\([0-9]*\) requests in.*/\1/p' "$TEST_TMP/wrk.out")
    ratio=$(awk -v n="$n" -v g="$g" 'BEGIN { printf "%.2f", (g > 0 ? n / g : 0) }')
    printf '%-30s %8s %12s %12s %7s %14s %14s%s\n' "$inst $encoding" "$bytes" "$n" "$g" "$ratio" \
      "$(per_request $((cpu1 - cpu0)) "$n_req")" "$(per_request $((gcpu1 - gcpu0)) "$g_req")" "$note"
  done

  kill -TERM "$nginx_pid"
  wait_helper "$nginx_pid" || true
  stop_daemon
done
