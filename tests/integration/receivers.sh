# Real Prometheus and VictoriaMetrics servers for the integration tests and
# benchmarks, as remote write receivers or (Prometheus) scrapers, sourced
# after lib.sh; never run. Each is a real server on 127.0.0.1 with its data
# in $TEST_TMP/NAME: Debian's Prometheus with its remote write receiver, or
# Debian's VictoriaMetrics. Both are stopped at exit (lib.sh's
# helpers); stop_receiver and start_receiver again stop and restart one on
# the same port and data, for outages.
#
# Receivers   start_prometheus_receiver NAME [FLAGS...] | start_victoria_metrics NAME [FLAGS...]
#             stop_receiver NAME | restart_receiver NAME | receiver_url NAME | receiver_write_url NAME
# Queries     rx_query NAME PROMQL [TIME]        every result as "LABELS VALUE" lines, LABELS sorted
#             rx_value NAME PROMQL [TIME]        the first result's value, or nothing
#             rx_samples NAME SELECTOR START END the raw samples of each matching series, as
#                                               "LABELS TS VALUE" lines (TS in ms), oldest first
# TIME, START and END are Unix seconds (decimals allowed); no TIME is now.

: "${TEST_TMP:?source lib.sh first}"
need python3
need curl

RECEIVER_NAMES=

# receiver_var NAME FIELD: a receiver's field (kind, port, pid, flags).
receiver_var() {
  eval "echo \"\${RX_$2_$1:-}\""
}

_rx_set() {
  eval "RX_$2_$1=\$3"
}

# start_prometheus_receiver NAME [FLAGS...]: Prometheus with
# --web.enable-remote-write-receiver; FLAGS are added to its command line.
# $TEST_TMP/NAME.yml is its configuration: a test that scrapes writes it
# first with its scrape jobs; otherwise one without any is written here.
start_prometheus_receiver() {
  need prometheus
  _name=$1
  shift
  [ -f "$TEST_TMP/$_name.yml" ] || printf 'global:\n  scrape_interval: 1m\n' >"$TEST_TMP/$_name.yml"
  _rx_set "$_name" kind prometheus
  _rx_set "$_name" port "$(free_port)"
  _rx_set "$_name" flags "$*"
  RECEIVER_NAMES="$RECEIVER_NAMES $_name"
  _start_receiver "$_name"
}

# start_victoria_metrics NAME [FLAGS...]: single-node VictoriaMetrics; its
# queries see the newest samples at once (-search.latencyOffset=0s).
start_victoria_metrics() {
  need victoria-metrics
  _name=$1
  shift
  _rx_set "$_name" kind victoria
  _rx_set "$_name" port "$(free_port)"
  _rx_set "$_name" flags "$*"
  RECEIVER_NAMES="$RECEIVER_NAMES $_name"
  _start_receiver "$_name"
}

_start_receiver() {
  _port=$(receiver_var "$1" port)
  # shellcheck disable=SC2046
  case $(receiver_var "$1" kind) in
    prometheus)
      start_helper prometheus --config.file="$TEST_TMP/$1.yml" --storage.tsdb.path="$TEST_TMP/$1" \
        --web.listen-address="127.0.0.1:$_port" --web.enable-remote-write-receiver \
        $(receiver_var "$1" flags) >>"$TEST_TMP/$1.log" 2>&1
      _ready=/-/ready
      ;;
    victoria)
      start_helper victoria-metrics -httpListenAddr="127.0.0.1:$_port" -storageDataPath="$TEST_TMP/$1" \
        -retentionPeriod=100y -search.latencyOffset=0s -loggerLevel=WARN \
        $(receiver_var "$1" flags) >>"$TEST_TMP/$1.log" 2>&1
      _ready=/health
      ;;
  esac
  _rx_set "$1" pid "$HELPER_PID"
  wait_until 60 receiver_ready "$1" "$_ready" ||
    fail "receiver $1 did not start: $(tail -n 5 "$TEST_TMP/$1.log")"
}

receiver_ready() {
  kill -0 "$(receiver_var "$1" pid)" 2>/dev/null || fail "receiver $1 exited: $(tail -n 5 "$TEST_TMP/$1.log")"
  [ "$(curl -s -o /dev/null -w '%{http_code}' --max-time 2 "$(receiver_url "$1")$2")" = 200 ]
}

# stop_receiver NAME: SIGTERM, and wait for it to exit (its data stays).
stop_receiver() {
  _pid=$(receiver_var "$1" pid)
  [ -n "$_pid" ] || fail "stop_receiver: $1 is not running"
  kill -TERM "$_pid"
  wait_helper "$_pid" || true
  _rx_set "$1" pid ""
}

# restart_receiver NAME: starts it again on its port and data.
restart_receiver() {
  _start_receiver "$1"
}

receiver_url() {
  echo "http://127.0.0.1:$(receiver_var "$1" port)"
}

receiver_write_url() {
  echo "$(receiver_url "$1")/api/v1/write"
}

# rx_query NAME PROMQL [TIME]
rx_query() {
  _url=$(receiver_url "$1")/api/v1/query
  _query=$2
  if [ -n "${3:-}" ]; then set -- --data-urlencode "time=$3"; else set --; fi
  curl -sS --max-time 60 --get --data-urlencode "query=$_query" "$@" "$_url" | python3 -c '
import json, sys
answer = json.load(sys.stdin)
if answer.get("status") != "success":
    sys.exit("query failed: %s" % answer.get("error"))
data = answer["data"]
if data["resultType"] in ("scalar", "string"):
    print("{}", data["result"][1])
    sys.exit()
for r in data["result"]:
    labels = ",".join("%s=%s" % kv for kv in sorted(r["metric"].items()))
    print("{%s}" % labels, r["value"][1])'
}

# rx_value NAME PROMQL [TIME]
rx_value() {
  rx_query "$@" | awk 'NR == 1 { print $NF }'
}

# rx_samples NAME SELECTOR START END: every stored sample as the receiver
# holds it, repeats included: VictoriaMetrics' export API, which returns
# raw samples; Prometheus's range selector at END (its storage keeps no
# repeats: it refuses a sample older than the newest of its series and
# ignores an identical one).
rx_samples() {
  if [ "$(receiver_var "$1" kind)" = victoria ]; then
    curl -sS --max-time 60 --get --data-urlencode "match[]=$2" --data-urlencode "start=$3" \
      --data-urlencode "end=$4" "$(receiver_url "$1")/api/v1/export" | python3 -c '
import json, sys
for line in sys.stdin:
    r = json.loads(line)
    labels = ",".join("%s=%s" % kv for kv in sorted(r["metric"].items()))
    for ts, v in sorted(zip(r["timestamps"], r["values"])):
        print("{%s}" % labels, ts, v)'
    return
  fi
  _range=$(python3 -c "import math, sys; print('%ds' % math.ceil(float(sys.argv[2]) - float(sys.argv[1])))" "$3" "$4")
  curl -sS --max-time 60 --get --data-urlencode "query=$2[$_range]" --data-urlencode "time=$4" \
    "$(receiver_url "$1")/api/v1/query" | python3 -c '
import json, sys
answer = json.load(sys.stdin)
if answer.get("status") != "success":
    sys.exit("query failed: %s" % answer.get("error"))
for r in answer["data"]["result"]:
    labels = ",".join("%s=%s" % kv for kv in sorted(r["metric"].items()))
    for ts, v in r["values"]:
        print("{%s}" % labels, round(float(ts) * 1000), v)'
}
