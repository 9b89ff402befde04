#!/bin/sh
# --backend auto (the default): without the Neuron driver the daemon falls
# back to the model, and both the log and /api/v1/devices say why. With
# sysfs:<root> the devices document says what the tree offers.
set -eu
. "$top_srcdir/tests/integration/sysfs-lib.sh"

if [ -e /sys/devices/virtual/neuron_device ]; then
  echo "a Neuron driver is loaded here: auto would pick it"; exit 77
fi
start_daemon auto
scrape /api/v1/devices > "$work/devices"
stop_daemon
grep -q 'backend model:trn1.32xlarge[^:]*: .*auto chose model (sysfs: /sys/devices/virtual/neuron_device is missing' \
  "$work/auto.log" || { echo "FAIL: the log does not say why auto chose the model"; cat "$work/auto.log"; exit 1; }
grep -q '"backend":"model:trn1.32xlarge[^"]*","backend_reason":"auto chose model (sysfs: ' "$work/devices" ||
  { echo "FAIL: /api/v1/devices does not say why"; cat "$work/devices"; exit 1; }
# The model reports DMA and NeuronLink; the devices document says so.
grep -q '"metrics":\[[^]]*"neuron_device_dma_bytes_total"' "$work/devices" ||
  { echo "FAIL: the model's device lists no DMA metric"; exit 1; }

start_daemon inf1 --backend "sysfs:$top_srcdir/tests/data/inf1"
scrape /api/v1/devices > "$work/inf1"
stop_daemon
for want in '"backend_reason":""' '"driver_version":"2.19.64.0"' '"serial_number":""' '"name":"Inferentia"' \
  '"metrics":["neuroncore_memory_used_bytes","neuroncore_memory_usage_bytes","execution_status_total","neuron_device_up","neuron_device_memory_used_bytes"'; do
  grep -qF "$want" "$work/inf1" || { echo "FAIL: /api/v1/devices for inf1 lacks $want"; cat "$work/inf1"; exit 1; }
done
