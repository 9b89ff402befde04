#!/bin/sh
# The largest catalog entry end to end: every core of a Trn3 Gen2
# UltraServer under the MoE scenario is served on /metrics (576 logical
# NeuronCores at the default LNC 2, with their 1152 physical cores as a
# breakdown), the exposition is clean for promtool, and /api/v1/devices
# lists the all-to-all peers.
. "$(dirname "$0")/lib.sh"
need curl
need promtool

start_daemon --backend model:trn3-gen2-ultraserver,scenario=moe
curl -sf --max-time 10 "$URL/metrics" >"$TEST_TMP/metrics" || fail "GET /metrics"

cores=$(grep -c '^neuroncore_utilization_ratio{' "$TEST_TMP/metrics")
[ "$cores" -eq 576 ] || fail "expected 576 neuroncore_utilization_ratio series, got $cores"
distinct=$(sed -n 's/^neuroncore_utilization_ratio{.*neuroncore="\([0-9]*\)".*/\1/p' "$TEST_TMP/metrics" | sort -un | wc -l)
[ "$distinct" -eq 576 ] || fail "expected cores 0-575, got $distinct distinct"
physical=$(sed -n 's/^neuroncore_physical_utilization_ratio{.*physical_neuroncore="\([0-9]*\)".*/\1/p' "$TEST_TMP/metrics" |
  sort -un | wc -l)
[ "$physical" -eq 1152 ] || fail "expected physical cores 0-1151, got $physical distinct"
devices=$(grep -c '^neuron_device_up{.*} 1$' "$TEST_TMP/metrics")
[ "$devices" -eq 144 ] || fail "expected 144 devices up, got $devices"
ports=$(grep -c '^neuron_link_transmit_bytes_total{.*peer_device="switch"}' "$TEST_TMP/metrics")
[ "$ports" -eq 144 ] || fail "expected one NeuronSwitch port per device, got $ports"
promtool check metrics <"$TEST_TMP/metrics" >"$TEST_TMP/promtool" 2>&1 || { cat "$TEST_TMP/promtool"; fail "promtool check metrics"; }
[ ! -s "$TEST_TMP/promtool" ] || { cat "$TEST_TMP/promtool"; fail "promtool has remarks"; }

curl -sf --max-time 10 "$URL/api/v1/devices" >"$TEST_TMP/devices" || fail "GET /api/v1/devices"
grep -q '"instance_type":"trn3-gen2-ultraserver"' "$TEST_TMP/devices" || fail "instance type in /api/v1/devices"
grep -q '"index":143,' "$TEST_TMP/devices" || fail "device 143 in /api/v1/devices"
# Device 0 reaches every other device through the switch: 1,...,143.
grep -q '"first_core":0,"memory_total_bytes":154618822656,"peers":\[1,2,3,' "$TEST_TMP/devices" || fail "device 0's peers"

rss=$(awk '/^VmRSS/ { print $2 }' "/proc/$DAEMON_PID/status")
echo "trn3-gen2-ultraserver: $(grep -vc '^#' "$TEST_TMP/metrics") samples on /metrics, daemon RSS ${rss} KiB"
stop_daemon
