#!/bin/sh
# The largest catalog entry end to end: every core of a Trn3 Gen2
# UltraServer under the MoE scenario is served on /metrics, the exposition
# is clean for promtool, and /api/v1/devices lists the all-to-all peers.
. "${top_srcdir:-.}/tests/integration/model-lib.sh"
need curl promtool

start_daemon --backend model:trn3-gen2-ultraserver,scenario=moe
curl -sf "$base/metrics" >"$work/metrics" || fail "GET /metrics"

cores=$(grep -c '^neuroncore_utilization_ratio{' "$work/metrics")
[ "$cores" -eq 1152 ] || fail "expected 1152 neuroncore_utilization_ratio series, got $cores"
distinct=$(sed -n 's/^neuroncore_utilization_ratio{.*neuroncore="\([0-9]*\)".*/\1/p' "$work/metrics" | sort -un | wc -l)
[ "$distinct" -eq 1152 ] || fail "expected cores 0-1151, got $distinct distinct"
devices=$(grep -c '^neuron_device_up{.*} 1$' "$work/metrics")
[ "$devices" -eq 144 ] || fail "expected 144 devices up, got $devices"
ports=$(grep -c '^neuron_link_transmit_bytes_total{.*peer_device="switch"}' "$work/metrics")
[ "$ports" -eq 144 ] || fail "expected one NeuronSwitch port per device, got $ports"
promtool check metrics <"$work/metrics" >"$work/promtool" 2>&1 || { cat "$work/promtool"; fail "promtool check metrics"; }
[ ! -s "$work/promtool" ] || { cat "$work/promtool"; fail "promtool has remarks"; }

curl -sf "$base/api/v1/devices" >"$work/devices" || fail "GET /api/v1/devices"
grep -q '"instance_type":"trn3-gen2-ultraserver"' "$work/devices" || fail "instance type in /api/v1/devices"
grep -q '"index":143,' "$work/devices" || fail "device 143 in /api/v1/devices"
# Device 0 reaches every other device through the switch: 1,...,143.
grep -q '"first_core":0,"memory_total_bytes":154618822656,"peers":\[1,2,3,' "$work/devices" || fail "device 0's peers"

rss=$(awk '/^VmRSS/ { print $2 }' "/proc/$pid/status")
echo "trn3-gen2-ultraserver: $(grep -vc '^#' "$work/metrics") samples on /metrics, daemon RSS ${rss} KiB"
stop_daemon
