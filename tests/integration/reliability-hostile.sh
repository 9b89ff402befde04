#!/bin/sh
# Hostile requests against every endpoint (reliability-hostile.py lists
# them): each gets a 4xx with a body, the daemon stays up, and nothing but
# the ticks' own samples is written: the series, the schema and every
# table that is not sample data are the same before and after.
. "$(dirname "$0")/lib.sh"
need curl
need python3
need sqlite3

start_daemon --backend model:trn1.2xlarge --interval 200ms

# Everything in the database but the rows of the tables the ticks write:
# the samples, and the hours whose rollups are due (pending). A tick may
# close a head chunk, or an hour, at any moment of the test.
non_sample_state() {
  sqlite3 "$TEST_TMP/neurond.db" "SELECT type, name, sql FROM sqlite_master ORDER BY name" >"$1"
  for table in $(sqlite3 "$TEST_TMP/neurond.db" "SELECT name FROM sqlite_master WHERE type = 'table'"); do
    case $table in
      recent | head | chunks | pending | rollup_* | events) ;; # written by ticks, as samples are
      *) sqlite3 "$TEST_TMP/neurond.db" "SELECT '$table', * FROM $table ORDER BY 2" ;;
    esac
  done >>"$1"
}
non_sample_state "$TEST_TMP/before"
grep -q '^series|' "$TEST_TMP/before" || fail "no series registered before the test"

python3 "$top_srcdir/tests/integration/reliability-hostile.py" "$PORT" >"$TEST_TMP/hostile.out" 2>&1 ||
  fail "hostile requests: $(cat "$TEST_TMP/hostile.out")"
cat "$TEST_TMP/hostile.out"
kill -0 "$DAEMON_PID" 2>/dev/null || fail "the daemon died"
[ "$(http_status /healthz)" = 200 ] || fail "/healthz after the hostile requests"
http "/api/v1/query_range?metric=neuron_device_memory_total_bytes&step=1s" | grep -q '"status":"success"' ||
  fail "a valid query after the hostile requests"

non_sample_state "$TEST_TMP/after"
diff -u "$TEST_TMP/before" "$TEST_TMP/after" || fail "hostile requests changed the database"
stop_daemon
echo "reliability-hostile: ok"
