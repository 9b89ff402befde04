#!/bin/sh
# The store through the daemon: /api/v1/series, query_range with agg, rate
# and label filters, the points cap, a damaged database set aside at
# start-up, and a database from a newer neurond refused. The daemon's clock
# is held and driven (/api/v1/admin/ticks): the queries read the ticks the
# test ran, however slowly the daemon runs.
. "$(dirname "$0")/lib.sh"
need sqlite3
need curl

db=$TEST_TMP/neurond.db # the database and log of start_daemon's default name
log=$TEST_TMP/neurond.log

get() { # URL-PATH: body on stdout, status code in $TEST_TMP/code
        # A failed request leaves the code 000 for expect_code to report.
        curl -s -o "$TEST_TMP/body" -w '%{http_code}' "$URL$1" >"$TEST_TMP/code" || true
        cat "$TEST_TMP/body"
}
expect_code() {
        [ "$(cat "$TEST_TMP/code")" = "$1" ] || fail "$2: HTTP $(cat "$TEST_TMP/code"), expected $1: $(cat "$TEST_TMP/body")"
}

# Retention and size settings in the config file.
printf '[neurond]\nretention_raw = 12h\nretention_1m = 7d\nretention_1h = 90d\nmax_db_size = 512M\n' >"$TEST_TMP/ok.conf"
"$NEUROND" --config "$TEST_TMP/ok.conf" --backend model:trn1.2xlarge --db "$db" --check-config >"$log" 2>&1 ||
        fail "retention settings refused"
printf '[neurond]\nmax_db_size = 12X\n' >"$TEST_TMP/bad.conf"
status=0
"$NEUROND" --config "$TEST_TMP/bad.conf" --backend model:trn1.2xlarge --db "$db" --check-config >"$log" 2>&1 || status=$?
[ "$status" = 2 ] || fail "a bad max_db_size was accepted"
grep -q "max_db_size" "$log" || fail "no message naming max_db_size"
printf '[neurond]\nretention_1h = soon\n' >"$TEST_TMP/bad.conf"
status=0
"$NEUROND" --config "$TEST_TMP/bad.conf" --backend model:trn1.2xlarge --db "$db" --check-config >"$log" 2>&1 || status=$?
[ "$status" = 2 ] || fail "a bad retention_1h was accepted"

# A damaged file is set aside and counted.
head -c 16384 /dev/urandom >"$db"
start_daemon --backend model:trn1.2xlarge --interval 1s --enable-admin
hold_ticks
held=${TICK_TIME%.*}
ls "$TEST_TMP" | grep -q '^neurond.db.damaged-[0-9]*$' || fail "the damaged database was not kept aside"
grep -q "failed its integrity check" "$log" || fail "the damaged database was not logged"
get /metrics | grep -q '^neurond_storage_damaged_databases_total 1$' || fail "metric for the damaged database"
get /metrics | grep -q '^neurond_storage_degraded 0$' || fail "storage reported degraded"

# Ten minutes of ticks.
run_ticks 600
get /api/v1/series >/dev/null
expect_code 200 "series"
grep -q '{"__name__":"neuron_device_dma_bytes_total","neuron_device":"0","direction":"device_to_host"}' "$TEST_TMP/body" ||
        fail "series lacks the DMA counter: $(cat "$TEST_TMP/body")"
get "/api/v1/series?metric=neuroncore_utilization_ratio&neuroncore=1" >/dev/null
expect_code 200 "series with a filter"
[ "$(grep -o '__name__' "$TEST_TMP/body" | wc -l)" = 1 ] || fail "series filter: $(cat "$TEST_TMP/body")"

now=$held
end=$((now + 900))
q="/api/v1/query_range?metric=neuron_device_dma_bytes_total&direction=device_to_host&start=$now&end=$end&step=5"
get "$q&rate=1&agg=max" >/dev/null
expect_code 200 "rate=1"
# Rates of a counter are never negative, even across resets.
grep -q '"-' "$TEST_TMP/body" && fail "negative rate: $(cat "$TEST_TMP/body")"
grep -q '"values":\[\[' "$TEST_TMP/body" || fail "no rate points: $(cat "$TEST_TMP/body")"
get "$q&agg=last" >/dev/null
expect_code 200 "agg=last"
get "/api/v1/query_range?metric=neuroncore_utilization_ratio&rate=1&start=$now&end=$end&step=5" >/dev/null
expect_code 400 "rate of a gauge"
get "/api/v1/query_range?metric=neuroncore_utilization_ratio&start=$now&end=$((now + 11001))&step=1" >/dev/null
expect_code 400 "over 11,000 points"
grep -q 'maximum resolution of 11000 points' "$TEST_TMP/body" || fail "points cap message: $(cat "$TEST_TMP/body")"
get "/api/v1/query_range?metric=neuroncore_utilization_ratio&start=$now&end=$((now + 10999))&step=1&neuroncore=0" >/dev/null
expect_code 200 "11,000 points"
get "/api/v1/query_range?metric=neuroncore_utilization_ratio&agg=median" >/dev/null
expect_code 400 "unknown agg"
stop_daemon

# The data is in the tiers a person can read with sqlite3.
[ "$(sqlite3 "$db" "SELECT count(*) > 0 FROM rollup_1m")" = 1 ] || fail "no 1 min rollups"
[ "$(sqlite3 "$db" "SELECT count(*) > 0 FROM chunks")" = 1 ] || fail "no chunks"
[ "$(sqlite3 "$db" "PRAGMA user_version")" = 5 ] || fail "schema version"

# A database from a newer neurond is refused and left alone.
sqlite3 "$db" "PRAGMA user_version = 99"
status=0
"$NEUROND" --allow-root --listen 127.0.0.1:0 --db "$db" --backend model:trn1.2xlarge --web-root "$WEB_ROOT" >"$log" 2>&1 ||
        status=$?
[ "$status" = 2 ] || fail "a newer schema was not refused with the configuration-error status 2"
grep -q "newer neurond" "$log" || fail "no clear error for a newer schema"
[ "$(sqlite3 "$db" "PRAGMA user_version")" = 99 ] || fail "the newer database was changed"
exit 0
