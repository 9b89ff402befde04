#!/bin/sh
# The store through the daemon: /api/v1/series, query_range with agg, rate
# and label filters, the points cap, a damaged database set aside at
# start-up, and a database from a newer neurond refused.
set -u
: "${NEUROND:=daemon/neurond}"
: "${WEB_ROOT:=web/static}"
command -v sqlite3 >/dev/null 2>&1 || { echo "sqlite3 not installed"; exit 77; }
command -v curl >/dev/null 2>&1 || { echo "curl not installed"; exit 77; }

tmp=$(mktemp -d)
pid=
cleanup() {
        [ -n "$pid" ] && kill -9 "$pid" 2>/dev/null
        rm -rf "$tmp"
}
trap cleanup EXIT
db=$tmp/neurond.db
fail() {
        echo "FAIL: $*"
        cat "$tmp/log" 2>/dev/null
        exit 1
}

start() {
        : >"$tmp/log"
        "$NEUROND" --allow-root --listen 127.0.0.1:0 --db "$db" --backend "model:trn1.2xlarge,speed=600" --interval 1s \
                --web-root "$WEB_ROOT" >"$tmp/log" 2>&1 &
        pid=$!
        port=
        for _ in $(seq 1 100); do
                port=$(sed -n 's/.*listening on port \([0-9]*\).*/\1/p' "$tmp/log" | head -n 1)
                [ -n "$port" ] && return 0
                kill -0 "$pid" 2>/dev/null || fail "neurond exited at start-up"
                sleep 0.1
        done
        fail "neurond did not log its port"
}
stop() {
        kill -TERM "$pid"
        wait "$pid" || fail "neurond did not exit cleanly"
        pid=
}
get() { # URL-PATH: body on stdout, status code in $tmp/code
        curl -s -o "$tmp/body" -w '%{http_code}' "http://127.0.0.1:$port$1" >"$tmp/code"
        cat "$tmp/body"
}
expect_code() {
        [ "$(cat "$tmp/code")" = "$1" ] || fail "$2: HTTP $(cat "$tmp/code"), expected $1: $(cat "$tmp/body")"
}

# Retention and size settings in the config file.
printf '[neurond]\nretention_raw = 12h\nretention_1m = 7d\nretention_1h = 90d\nmax_db_size = 512M\n' >"$tmp/ok.conf"
"$NEUROND" --config "$tmp/ok.conf" --backend model:trn1.2xlarge --db "$db" --check-config >"$tmp/log" 2>&1 ||
        fail "retention settings refused"
printf '[neurond]\nmax_db_size = 12X\n' >"$tmp/bad.conf"
"$NEUROND" --config "$tmp/bad.conf" --backend model:trn1.2xlarge --db "$db" --check-config >"$tmp/log" 2>&1
[ $? = 2 ] || fail "a bad max_db_size was accepted"
grep -q "max_db_size" "$tmp/log" || fail "no message naming max_db_size"
printf '[neurond]\nretention_1h = soon\n' >"$tmp/bad.conf"
"$NEUROND" --config "$tmp/bad.conf" --backend model:trn1.2xlarge --db "$db" --check-config >"$tmp/log" 2>&1
[ $? = 2 ] || fail "a bad retention_1h was accepted"

# A damaged file is set aside and counted.
head -c 16384 /dev/urandom >"$db"
start
ls "$tmp" | grep -q '^neurond.db.damaged-[0-9]*$' || fail "the damaged database was not kept aside"
grep -q "failed its integrity check" "$tmp/log" || fail "the damaged database was not logged"
get /metrics | grep -q '^neurond_storage_damaged_databases_total 1$' || fail "metric for the damaged database"
get /metrics | grep -q '^neurond_storage_degraded 0$' || fail "storage reported degraded"

# Ten simulated minutes at 600x.
sleep 1.5
get /api/v1/series >/dev/null
expect_code 200 "series"
grep -q '{"__name__":"neuron_device_dma_bytes_total","neuron_device":"0","direction":"device_to_host"}' "$tmp/body" ||
        fail "series lacks the DMA counter: $(cat "$tmp/body")"
get "/api/v1/series?metric=neuroncore_utilization_ratio&neuroncore=1" >/dev/null
expect_code 200 "series with a filter"
[ "$(grep -o '__name__' "$tmp/body" | wc -l)" = 1 ] || fail "series filter: $(cat "$tmp/body")"

now=$(date +%s)
end=$((now + 900))
q="/api/v1/query_range?metric=neuron_device_dma_bytes_total&direction=device_to_host&start=$now&end=$end&step=5"
get "$q&rate=1&agg=max" >/dev/null
expect_code 200 "rate=1"
# Rates of a counter are never negative, even across resets.
grep -q '"-' "$tmp/body" && fail "negative rate: $(cat "$tmp/body")"
grep -q '"values":\[\[' "$tmp/body" || fail "no rate points: $(cat "$tmp/body")"
get "$q&agg=last" >/dev/null
expect_code 200 "agg=last"
get "/api/v1/query_range?metric=neuroncore_utilization_ratio&rate=1&start=$now&end=$end&step=5" >/dev/null
expect_code 400 "rate of a gauge"
get "/api/v1/query_range?metric=neuroncore_utilization_ratio&start=$now&end=$((now + 11001))&step=1" >/dev/null
expect_code 400 "over 11,000 points"
grep -q 'maximum resolution of 11000 points' "$tmp/body" || fail "points cap message: $(cat "$tmp/body")"
get "/api/v1/query_range?metric=neuroncore_utilization_ratio&start=$now&end=$((now + 10999))&step=1&neuroncore=0" >/dev/null
expect_code 200 "11,000 points"
get "/api/v1/query_range?metric=neuroncore_utilization_ratio&agg=median" >/dev/null
expect_code 400 "unknown agg"
stop

# The data is in the tiers a person can read with sqlite3.
[ "$(sqlite3 "$db" "SELECT count(*) > 0 FROM rollup_1m")" = 1 ] || fail "no 1 min rollups"
[ "$(sqlite3 "$db" "SELECT count(*) > 0 FROM chunks")" = 1 ] || fail "no chunks"
[ "$(sqlite3 "$db" "PRAGMA user_version")" = 2 ] || fail "schema version"

# A database from a newer neurond is refused and left alone.
sqlite3 "$db" "PRAGMA user_version = 99"
"$NEUROND" --allow-root --listen 127.0.0.1:0 --db "$db" --backend model:trn1.2xlarge --web-root "$WEB_ROOT" >"$tmp/log" 2>&1
[ $? = 2 ] || fail "a newer schema was not refused with the configuration-error status 2"
grep -q "newer neurond" "$tmp/log" || fail "no clear error for a newer schema"
[ "$(sqlite3 "$db" "PRAGMA user_version")" = 99 ] || fail "the newer database was changed"
exit 0
