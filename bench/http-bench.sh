#!/bin/sh
# /metrics throughput against nginx serving the same bytes as a static file:
# both on loopback, same wrk settings, one instance type at a time.
# Goal (issue 6): neurond >= 0.5 x nginx. Prints figures; never fails on them.
# Usage: bench/http-bench.sh [INSTANCE...]  (NEUROND=path/to/neurond)
set -eu
: "${NEUROND:=daemon/neurond}"
DURATION=${BENCH_DURATION:-10s}
CONNECTIONS=${BENCH_CONNECTIONS:-32}
THREADS=${BENCH_THREADS:-2}
for tool in wrk nginx curl; do
  command -v "$tool" >/dev/null 2>&1 || { echo "bench: $tool is not installed (build-aux/install-deps.sh --test)" >&2; exit 77; }
done
TMP=$(mktemp -d "${TMPDIR:-/tmp}/neurond-bench.XXXXXX")
NEUROND_PID=
NGINX_PID=
cleanup() {
  [ -z "$NEUROND_PID" ] || kill -TERM "$NEUROND_PID" 2>/dev/null || true
  [ -z "$NGINX_PID" ] || kill -TERM "$NGINX_PID" 2>/dev/null || true
  wait 2>/dev/null || true
  rm -rf "$TMP"
}
trap cleanup EXIT

free_port() {
  python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

# rps URL: requests per second wrk measured.
rps() {
  wrk -t"$THREADS" -c"$CONNECTIONS" -d"$DURATION" "$1" >"$TMP/wrk.out" 2>&1
  if grep -q 'Non-2xx' "$TMP/wrk.out"; then
    echo "bench: non-2xx answers from $1" >&2
    cat "$TMP/wrk.out" >&2
    exit 1
  fi
  sed -n 's/^Requests\/sec: *\([0-9.]*\).*/\1/p' "$TMP/wrk.out"
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

printf '%-24s %8s %12s %12s %7s %14s %14s\n' INSTANCE BYTES NEUROND_RPS NGINX_RPS RATIO NEUROND_US/REQ NGINX_US/REQ
for inst in $instances; do
  note=
  if ! echo "$catalog" | grep -q "^$inst "; then
    note=" (stand-in: $inst is not in this build's model catalog)"
    inst=trn1.32xlarge
  fi
  # shellcheck disable=SC2046
  "$NEUROND" --listen 127.0.0.1:0 --db "$TMP/$inst.db" --backend "model:$inst" --interval 1s \
    --web-root "$TMP" $([ "$(id -u)" -ne 0 ] || echo --allow-root) >"$TMP/neurond.log" 2>&1 &
  NEUROND_PID=$!
  port=
  i=0
  while [ -z "$port" ]; do
    [ $i -lt 100 ] || { echo "bench: neurond did not start" >&2; cat "$TMP/neurond.log" >&2; exit 1; }
    sleep 0.1
    port=$(sed -n 's/.*listening on port \([0-9]*\).*/\1/p' "$TMP/neurond.log" | head -n 1)
    i=$((i + 1))
  done
  mkdir -p "$TMP/www"
  curl -sS --max-time 10 -o "$TMP/www/metrics" "http://127.0.0.1:$port/metrics"
  bytes=$(wc -c <"$TMP/www/metrics")
  # nginx's workers drop root privileges: let them read the file.
  chmod 755 "$TMP" "$TMP/www"
  chmod 644 "$TMP/www/metrics"

  nport=$(free_port)
  cat >"$TMP/nginx.conf" <<CONF
daemon off;
worker_processes 2;
pid $TMP/nginx.pid;
error_log $TMP/nginx-error.log;
events { worker_connections 1024; }
http {
  access_log off;
  client_body_temp_path $TMP/nginx-body;
  proxy_temp_path $TMP/nginx-proxy;
  fastcgi_temp_path $TMP/nginx-fastcgi;
  uwsgi_temp_path $TMP/nginx-uwsgi;
  scgi_temp_path $TMP/nginx-scgi;
  server {
    listen 127.0.0.1:$nport;
    root $TMP/www;
    location / { default_type "text/plain; version=0.0.4; charset=utf-8"; }
  }
}
CONF
  nginx -c "$TMP/nginx.conf" -e "$TMP/nginx-error.log" &
  NGINX_PID=$!
  i=0
  until curl -s -o /dev/null "http://127.0.0.1:$nport/metrics"; do
    [ $i -lt 100 ] || { echo "bench: nginx did not start" >&2; cat "$TMP/nginx-error.log" >&2; exit 1; }
    sleep 0.1
    i=$((i + 1))
  done

  # CPU time per request (user + system, from /proc) is steadier than
  # requests per second on a machine shared with other work.
  cpu0=$(cpu_ticks "$NEUROND_PID")
  n=$(rps "http://127.0.0.1:$port/metrics")
  cpu1=$(cpu_ticks "$NEUROND_PID")
  n_req=$(sed -n 's/^ *\([0-9]*\) requests in.*/\1/p' "$TMP/wrk.out")
  workers=$(pgrep -P "$NGINX_PID" | tr '\n' ' ')
  # shellcheck disable=SC2086
  gcpu0=$(cpu_ticks $workers)
  g=$(rps "http://127.0.0.1:$nport/metrics")
  # shellcheck disable=SC2086
  gcpu1=$(cpu_ticks $workers)
  g_req=$(sed -n 's/^ *\([0-9]*\) requests in.*/\1/p' "$TMP/wrk.out")
  ratio=$(awk -v n="$n" -v g="$g" 'BEGIN { printf "%.2f", (g > 0 ? n / g : 0) }')
  printf '%-24s %8s %12s %12s %7s %14s %14s%s\n' "$inst" "$bytes" "$n" "$g" "$ratio" \
    "$(per_request $((cpu1 - cpu0)) "$n_req")" "$(per_request $((gcpu1 - gcpu0)) "$g_req")" "$note"

  kill -TERM "$NGINX_PID" "$NEUROND_PID"
  wait "$NGINX_PID" 2>/dev/null || true
  wait "$NEUROND_PID" 2>/dev/null || true
  NGINX_PID=
  NEUROND_PID=
done
