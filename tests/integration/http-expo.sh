#!/bin/sh
# /metrics to the letter of both formats: Accept negotiation as Prometheus
# sends it, promtool and python3-prometheus-client's parsers, gzip,
# self metrics, content types on every kind of response.
. "$(dirname "$0")/lib.sh"
need curl
need promtool
PYTHON=/usr/bin/python3
[ -x "$PYTHON" ] && "$PYTHON" -c 'import prometheus_client' 2>/dev/null || skip "python3-prometheus-client is not installed"

start_daemon --backend model:trn1.32xlarge,seed=3 --interval 200ms
PROM_ACCEPT='application/openmetrics-text;version=1.0.0,application/openmetrics-text;version=0.0.1;q=0.75,text/plain;version=0.0.4;q=0.5,*/*;q=0.1'

# content_type PATH [CURL-ARGS...]: the Content-Type of a GET, body to $TEST_TMP/body.
content_type() {
  path=$1
  shift
  curl -sS --max-time 10 -o "$TEST_TMP/body" -w '%{content_type}' "$@" "$URL$path"
}

# Text format by default and for text/plain.
ct=$(content_type /metrics)
[ "$ct" = "text/plain; version=0.0.4; charset=utf-8" ] || fail "default content type '$ct'"
cp "$TEST_TMP/body" "$TEST_TMP/text"
promtool check metrics <"$TEST_TMP/text" >"$TEST_TMP/promtool.out" 2>&1 || fail "promtool: $(cat "$TEST_TMP/promtool.out")"
[ ! -s "$TEST_TMP/promtool.out" ] || fail "promtool reported: $(cat "$TEST_TMP/promtool.out")"
! grep -q '^# EOF' "$TEST_TMP/text" || fail "text format ends with # EOF"
! grep -qE ' (NaN|[+-]Inf)$' "$TEST_TMP/text" || fail "a NaN or Inf value leaked: $(grep -E ' (NaN|[+-]Inf)$' "$TEST_TMP/text" | head -n 1)"

# OpenMetrics for Prometheus's own Accept header.
ct=$(content_type /metrics -H "Accept: $PROM_ACCEPT")
[ "$ct" = "application/openmetrics-text; version=1.0.0; charset=utf-8" ] || fail "OpenMetrics content type '$ct'"
cp "$TEST_TMP/body" "$TEST_TMP/om"
[ "$(tail -n 1 "$TEST_TMP/om")" = "# EOF" ] || fail "OpenMetrics does not end with # EOF"
grep -q '^# TYPE neuron_device_dma_bytes counter$' "$TEST_TMP/om" || fail "counter family not named without _total"
grep -q '^# UNIT neuron_device_dma_bytes bytes$' "$TEST_TMP/om" || fail "no UNIT line for a bytes counter"
grep -q '^neuron_device_dma_bytes_total{' "$TEST_TMP/om" || fail "counter samples lack _total"
# Text preferred by q-value.
ct=$(content_type /metrics -H 'Accept: application/openmetrics-text;version=1.0.0;q=0.4,text/plain;version=0.0.4;q=0.9')
[ "$ct" = "text/plain; version=0.0.4; charset=utf-8" ] || fail "q-values ignored: '$ct'"

# Both parsers of the reference client library accept the pages.
"$PYTHON" - "$TEST_TMP/text" "$TEST_TMP/om" <<'PY' >"$TEST_TMP/py.out" 2>&1 || fail "python parsers: $(cat "$TEST_TMP/py.out")"
import sys
from prometheus_client.parser import text_string_to_metric_families as text_parse
from prometheus_client.openmetrics.parser import text_string_to_metric_families as om_parse
text = {f.name: f for f in text_parse(open(sys.argv[1]).read())}
om = {f.name: f for f in om_parse(open(sys.argv[2]).read())}
for want in ("neuroncore_utilization_ratio", "neurond_collector_up", "neurond_poll_duration_seconds",
             "neurond_last_poll_timestamp_seconds"):
    assert want in text and want in om, want
assert om["neuron_device_dma_bytes"].type == "counter"
assert om["neuron_device_dma_bytes"].unit == "bytes"
assert om["neurond_build"].type == "info"
for fam in ("neurond_samples_stored", "neurond_store_errors", "neurond_http_requests"):
    assert om[fam].type == "counter", fam
cores = [s for s in om["neuroncore_utilization_ratio"].samples]
assert len(cores) == 32, len(cores)
assert all(0 <= s.value <= 1 for s in cores)
up = {s.labels["collector"]: s.value for s in om["neurond_collector_up"].samples}
assert up.get("backend") == 1.0 and all(v == 1.0 for v in up.values()), up
print(len(text), len(om))
PY

# gzip when accepted, identical once decompressed; identity otherwise.
enc=$(curl -sS --max-time 10 -H 'Accept-Encoding: gzip' -o "$TEST_TMP/gz" -w '%header{content-encoding}' "$URL/metrics")
[ "$enc" = "gzip" ] || fail "no gzip for Accept-Encoding: gzip (got '$enc')"
gzip -t "$TEST_TMP/gz" || fail "the gzip body is not valid gzip"
gunzip -c "$TEST_TMP/gz" | grep -q '^neuroncore_utilization_ratio{' || fail "gzip body lacks the metrics"
# One gzip member holds the whole page: clients that read only the first
# (curl --compressed, browsers) see neurond's own metrics too.
"$PYTHON" -c 'import sys, zlib
d = zlib.decompressobj(31)
page = d.decompress(open(sys.argv[1], "rb").read())
assert d.eof and not d.unused_data, "more than one gzip member"
assert b"\nneurond_build_info{" in page' "$TEST_TMP/gz" || fail "the gzip body is not one member with every family"
curl -sS --max-time 10 --compressed -o "$TEST_TMP/compressed" "$URL/metrics"
grep -q '^neurond_collector_up{' "$TEST_TMP/compressed" || fail "curl --compressed does not see neurond_* families"
grep -q '^neuroncore_utilization_ratio{' "$TEST_TMP/compressed" || fail "curl --compressed does not see the series"
curl -sS --max-time 10 -H 'Accept-Encoding: gzip' -H "Accept: $PROM_ACCEPT" -o "$TEST_TMP/omgz" "$URL/metrics"
[ "$(gunzip -c "$TEST_TMP/omgz" | tail -n 1)" = "# EOF" ] || fail "gzip OpenMetrics does not end with # EOF"
gunzip -c "$TEST_TMP/omgz" | grep -q '^neuroncore_utilization_ratio{' || fail "gzip OpenMetrics lacks the series"
"$PYTHON" -c 'import gzip, sys; from prometheus_client.openmetrics.parser import text_string_to_metric_families as p
list(p(gzip.decompress(open(sys.argv[1], "rb").read()).decode()))' "$TEST_TMP/omgz" || fail "gzip OpenMetrics does not parse"
enc=$(curl -sS --max-time 10 -H 'Accept-Encoding: gzip;q=0, identity' -o /dev/null -w '%header{content-encoding}' "$URL/metrics")
[ -z "$enc" ] || fail "gzip sent although refused"

# Self metrics move: requests are counted by code, in the page of the
# next tick (the page is rendered once per tick).
http /nonexistent.html >/dev/null
counted_404() {
  http /metrics | grep -q '^neurond_http_requests_total{code="404"} [1-9]'
}
wait_until 5 counted_404 || fail "404 not counted"
stored=$(http /metrics | sed -n 's/^neurond_samples_stored_total \([0-9]*\)$/\1/p')
[ "${stored:-0}" -gt 0 ] || fail "neurond_samples_stored_total is '$stored'"
http /metrics | grep -q '^neurond_store_errors_total 0$' || fail "store errors on a healthy store"

# Every response says what it is.
for path in /metrics /healthz /api/v1/devices /api/v1/latest /api/v1/status /api/v1/nope /nope /index.html /app.js /style.css; do
  ct=$(content_type "$path")
  [ -n "$ct" ] || fail "$path has no Content-Type"
done
[ "$(content_type /app.js)" = "text/javascript; charset=utf-8" ] || fail "app.js MIME type"
[ "$(content_type /style.css)" = "text/css; charset=utf-8" ] || fail "style.css MIME type"
[ "$(content_type /api/v1/nope)" = "application/json" ] || fail "API 404 is not JSON"
# HEAD has the headers and no body; other methods get 405 with Allow.
[ "$(curl -sS --max-time 10 -I -o /dev/null -w '%{http_code}' "$URL/metrics")" = 200 ] || fail "HEAD /metrics"
[ "$(http_status /metrics -X POST)" = 405 ] || fail "POST /metrics is not 405"

stop_daemon

# A device that is down: its series are absent in both formats, not NaN or 0,
# and both parsers still accept the pages.
start_daemon --backend model:trn1.32xlarge,seed=3,fault=device_down:3 --interval 200ms --enable-admin
run_ticks 5
content_type /metrics >/dev/null
cp "$TEST_TMP/body" "$TEST_TMP/down-text"
content_type /metrics -H "Accept: $PROM_ACCEPT" >/dev/null
cp "$TEST_TMP/body" "$TEST_TMP/down-om"
for f in down-text down-om; do
  grep -q '^neuron_device_up{neuron_device="3"} 0$' "$TEST_TMP/$f" || fail "$f: device 3 is not down"
  grep -q '^neuron_device_health{neuron_device="3",state="unhealthy"} 1$' "$TEST_TMP/$f" ||
    fail "$f: device 3 is not unhealthy"
  # Its up (0) and its health state (unhealthy) stay: they say it is gone.
  n=$(grep -Ev '^neuron_device_(up|health)\{' "$TEST_TMP/$f" | grep -c 'neuron_device="3"' || true)
  [ "$n" -eq 0 ] || fail "$f: $n series of the down device are still there"
  ! grep -qE ' (NaN|[+-]Inf)$' "$TEST_TMP/$f" || fail "$f: a NaN or Inf value leaked"
  grep -q '^neuroncore_utilization_ratio{neuron_device="2",' "$TEST_TMP/$f" || fail "$f: other devices vanished"
done
promtool check metrics <"$TEST_TMP/down-text" >"$TEST_TMP/promtool.out" 2>&1 || fail "promtool: $(cat "$TEST_TMP/promtool.out")"
"$PYTHON" -c 'import sys; from prometheus_client.openmetrics.parser import text_string_to_metric_families as p
list(p(open(sys.argv[1]).read()))' "$TEST_TMP/down-om" || fail "OpenMetrics with a device down does not parse"
stop_daemon
echo "PASS: $(cat "$TEST_TMP/py.out") families parsed (text, OpenMetrics)"
