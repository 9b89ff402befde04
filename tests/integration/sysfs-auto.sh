#!/bin/sh
# No simulation by surprise. On a host whose Neuron driver lists no device
# the daemon runs with the sysfs backend, serves no device series (never
# zeros) and says why: in its log (once), /api/v1/status and
# neurond_backend_devices. When the driver lists devices, the next tick
# takes them in with their series, without a restart; when they are gone,
# so are their series. Each change is logged once. The default backend and
# "auto" are sysfs, never the device model. With sysfs:<root> the devices
# document says what the tree offers.
. "$(dirname "$0")/lib.sh"
need curl

root=$TEST_TMP/root
devices=$root/devices/virtual/neuron_device
mkdir -p "$root/devices/virtual"
start_daemon late --backend "sysfs:$root" --enable-admin
hold_ticks

# device_series: the lines of /metrics about devices and cores.
device_series() {
  http /metrics --fail | grep -E '^(neuron_|neuroncore_|hardware_ecc_|execution_)' || true
}
# status_has TEXT: /api/v1/status holds TEXT.
status_has() {
  http /api/v1/status --fail >"$TEST_TMP/status" || fail "/api/v1/status failed"
  grep -qF "$1" "$TEST_TMP/status" || fail "/api/v1/status lacks $1: $(cat "$TEST_TMP/status")"
}

# No driver: nothing of devices, and why.
[ -z "$(device_series)" ] || fail "device series without a driver: $(device_series | head -n 3)"
metric_is neurond_backend_devices 0 || fail "neurond_backend_devices is '$(metric_value neurond_backend_devices)', not 0"
status_has "\"backend\":\"sysfs:$root\",\"devices\":0,\"backend_state\":\"no_devices\",\"backend_reason\":\"$devices is missing: is the Neuron driver loaded?\""
[ "$(http_status /healthz)" = 200 ] || fail "/healthz is not 200 without devices"
http /api/v1/devices --fail | grep -q '"devices":\[\]' || fail "/api/v1/devices lists devices without a driver"
grep -q "backend sysfs:$root: no devices: $devices is missing: is the Neuron driver loaded?" "$DAEMON_LOG" ||
  fail "the log does not say at start why there are no devices"

# The driver lists its devices (as tests/data/trn1 has them: neuron0 and
# neuron3): the next tick has them and their series.
cp -R "$top_srcdir/tests/data/trn1/." "$root/"
chmod -R u+w "$root"
run_ticks 1
metric_is 'neuron_device_up{neuron_device="3"}' 1 || fail "device 3 is not up once the driver lists it"
metric_is 'neuroncore_memory_used_bytes{neuron_device="3",neuroncore="3"}' 1266679808 ||
  fail "core 3's memory is '$(metric_value 'neuroncore_memory_used_bytes{neuron_device="3",neuroncore="3"}')'"
metric_is neurond_backend_devices 2 || fail "neurond_backend_devices is not 2 once the driver lists two"
http /metrics --fail | grep -q '^neuron_hardware_info{neuron_device_count="2",' || fail "no neuron_hardware_info"
status_has '"devices":2,"backend_state":"ok","backend_reason":"","instance_type":"trn1.32xlarge"'
http /api/v1/devices/3 --fail | grep -q '"device":{"index":3,"name":"Trainium1"' || fail "/api/v1/devices/3 does not list it"
run_ticks 2
[ "$(grep -c 'collector sysfs: 2 devices found (Neuron driver 2.19.64.0); polling them' "$DAEMON_LOG")" = 1 ] ||
  fail "the log does not say once that devices were found: $(grep 'devices found' "$DAEMON_LOG")"

# The devices go (the driver unloads them; the module stays): their series go.
rm -rf "$devices"
run_ticks 1
[ -z "$(device_series)" ] || fail "device series once every device is gone: $(device_series | head -n 3)"
metric_is neurond_backend_devices 0 || fail "neurond_backend_devices is not 0 once every device is gone"
status_has "\"devices\":0,\"backend_state\":\"no_devices\",\"backend_reason\":\"$devices is missing, though the Neuron driver 2.19.64.0 is loaded\""
run_ticks 2
[ "$(grep -c "collector sysfs: every device is gone: $devices is missing" "$DAEMON_LOG")" = 1 ] ||
  fail "the log does not say once that the devices are gone: $(grep 'gone' "$DAEMON_LOG")"
[ "$(grep -c 'devices found' "$DAEMON_LOG")" = 1 ] || fail "devices found said more than once"
stop_daemon late

# The default backend, and "auto", are sysfs on /sys; never the model.
start_daemon default
http /api/v1/status --fail | grep -q '"backend":"sysfs:/sys",' || fail "the default backend is not sysfs:/sys: $(http /api/v1/status)"
stop_daemon default
grep -q 'model' "$DAEMON_LOG" && fail "the default backend mentions the model: $(grep model "$DAEMON_LOG")"
start_daemon auto --backend auto
http /api/v1/status --fail | grep -q '"backend":"sysfs:/sys",' || fail "auto is not sysfs:/sys: $(http /api/v1/status)"
stop_daemon auto
grep -q "backend 'auto' is another name for 'sysfs': it no longer falls back to the device model" "$DAEMON_LOG" ||
  fail "auto does not say that it is sysfs"

start_daemon inf1 --backend "sysfs:$top_srcdir/tests/data/inf1" --log-level debug
http /api/v1/devices --fail > "$TEST_TMP/inf1"
stop_daemon
for want in '"backend_reason":""' '"driver_version":"2.19.64.0"' '"serial_number":""' '"name":"Inferentia"' \
  '"metrics":["neuroncore_memory_used_bytes","neuroncore_memory_usage_bytes","neuroncore_memory_usage_constants","neuroncore_memory_usage_model_code","neuroncore_memory_usage_model_shared_scratchpad","neuroncore_memory_usage_runtime_memory","neuroncore_memory_usage_tensors","execution_status_total","execution_errors_total","neuroncore_driver_status_total","neuron_device_up","neuron_device_memory_used_bytes"' \
  '"instance":{"instance_id":"",' '"error":"instance metadata at 127.0.0.1:1: Connection refused"'; do
  grep -qF "$want" "$TEST_TMP/inf1" || fail "/api/v1/devices for inf1 lacks $want: $(cat "$TEST_TMP/inf1")"
done
