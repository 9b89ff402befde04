#!/bin/sh
# --backend auto (the default): without the Neuron driver the daemon falls
# back to the model, and both the log and /api/v1/devices say why. With
# sysfs:<root> the devices document says what the tree offers.
. "$(dirname "$0")/lib.sh"
need curl

if [ -e /sys/devices/virtual/neuron_device ]; then
  skip "a Neuron driver is loaded here: auto would pick it"
fi
start_daemon auto --log-level debug
http /api/v1/devices --fail > "$TEST_TMP/devices"
stop_daemon
grep -q 'backend model:trn1.32xlarge[^:]*: .*auto chose model (sysfs: /sys/devices/virtual/neuron_device is missing' \
  "$DAEMON_LOG" || fail "the log does not say why auto chose the model"
grep -q '"backend":"model:trn1.32xlarge[^"]*","backend_reason":"auto chose model (sysfs: ' "$TEST_TMP/devices" ||
  fail "/api/v1/devices does not say why: $(cat "$TEST_TMP/devices")"
# The model reports DMA and NeuronLink; the devices document says so.
grep -q '"metrics":\[[^]]*"neuron_device_dma_bytes_total"' "$TEST_TMP/devices" ||
  fail "the model's device lists no DMA metric"

start_daemon inf1 --backend "sysfs:$top_srcdir/tests/data/inf1" --log-level debug
http /api/v1/devices --fail > "$TEST_TMP/inf1"
stop_daemon
for want in '"backend_reason":""' '"driver_version":"2.19.64.0"' '"serial_number":""' '"name":"Inferentia"' \
  '"metrics":["neuroncore_memory_used_bytes","neuroncore_memory_usage_bytes","neuroncore_memory_usage_constants","neuroncore_memory_usage_model_code","neuroncore_memory_usage_model_shared_scratchpad","neuroncore_memory_usage_runtime_memory","neuroncore_memory_usage_tensors","execution_status_total","execution_errors_total","neuroncore_driver_status_total","neuron_device_up","neuron_device_memory_used_bytes"' \
  '"instance":{"instance_id":"",' '"error":"instance metadata at 127.0.0.1:1: Connection refused"'; do
  grep -qF "$want" "$TEST_TMP/inf1" || fail "/api/v1/devices for inf1 lacks $want: $(cat "$TEST_TMP/inf1")"
done
