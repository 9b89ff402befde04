#!/bin/sh
# A damaged driver tree never crashes the daemon: damage a copy of the Trn1
# fixture while the daemon polls it every 100 ms, check that /metrics keeps
# answering and drops what it cannot read, then repair the tree and check
# that the next ticks report the fixture's figures again.
set -eu
. "$top_srcdir/tests/integration/sysfs-lib.sh"

root=$work/root
mkdir "$root"
cp -R "$top_srcdir/tests/data/trn1/." "$root"
chmod -R u+w "$root" # make distcheck's source tree is read-only
cp -R "$root" "$work/pristine"
dev=$root/devices/virtual/neuron_device

start_daemon damaged --backend "sysfs:$root" --interval 100ms
stable_metrics > "$work/before"

# waits_for PATTERN: polls /metrics until a line matches (at most 5 s).
waits_for() {
  i=0
  while [ $i -lt 50 ]; do
    metrics_has "$1" && return 0
    sleep 0.1
    i=$((i + 1))
  done
  echo "FAIL: /metrics never showed '$1'"; scrape /metrics; cat "$work/damaged.log"
  exit 1
}

mem=$dev/neuron0/neuron_core1/stats/memory_usage/device_mem/total
for junk in '' 'garbage' '-1' '99999999999999999999999' "$(printf '\001\002\377')"; do
  printf '%s' "$junk" > "$mem"
  sleep 0.25
  if metrics_has 'neuroncore_memory_used_bytes{neuron_device="0",neuroncore="1"}'; then
    echo "FAIL: an unreadable device_mem/total ('$junk') still gives a value"; exit 1
  fi
  metrics_has 'neuroncore_memory_used_bytes{neuron_device="0",neuroncore="0"}' ||
    { echo "FAIL: one bad file took other series with it"; exit 1; }
done
# A file bigger than a sysfs page, a file turned into a directory, binary junk.
head -c 10000 /dev/zero | tr '\0' '7' > "$dev/neuron0/stats/hardware/sram_ecc_uncorrected"
rm "$dev/neuron0/stats/power/utilization" && mkdir "$dev/neuron0/stats/power/utilization"
head -c 512 /dev/urandom > "$dev/neuron0/neuron_core0/stats/tensor_engine/pe_cntrs"
printf 'POWER_STATUS_VALID,1,1,1\n' > "$dev/neuron3/stats/power/utilization"
# A device vanishes.
mv "$dev/neuron3" "$work/neuron3"
waits_for 'neuron_device_up{neuron_device="3"} 0'
if metrics_has 'neuron_device="3",neuroncore'; then
  echo "FAIL: series of a vanished device are still reported"; exit 1
fi
# The driver is unloaded altogether.
rm -rf "$root/devices"
sleep 0.3
metrics_has '^neurond_collector_up{collector="backend"} 0' ||
  { echo "FAIL: the backend should be down without any device"; exit 1; }
scrape /healthz > /dev/null

# Repair: the next ticks recover every figure.
rm -rf "$root"
cp -R "$work/pristine" "$root"
waits_for 'neuron_device_up{neuron_device="3"} 1'
sleep 0.3
stable_metrics > "$work/after"
diff -u "$work/before" "$work/after" || { echo "FAIL: figures did not recover"; exit 1; }
stop_daemon
grep -q 'collector sysfs: read failed' "$work/damaged.log" ||
  { echo "FAIL: no debug reason for the failed reads"; cat "$work/damaged.log"; exit 1; }
# Partly damaged trees: the debug line names a file and why it failed.
grep -q 'series unreadable this tick; first: devices/virtual/neuron_device/neuron[0-9]*/.*: ' "$work/damaged.log" ||
  { echo "FAIL: no debug line naming an unreadable file"; cat "$work/damaged.log"; exit 1; }
