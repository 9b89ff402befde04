#!/bin/sh
# A damaged driver tree never crashes the daemon: damage a copy of the Trn1
# fixture between the daemon's ticks (the test holds its clock and runs
# each tick), check that /metrics keeps answering and drops what it cannot
# read, then repair the tree and check that the next ticks report the
# fixture's figures again.
. "$(dirname "$0")/lib.sh"
need curl

root=$TEST_TMP/root
mkdir "$root"
cp -R "$top_srcdir/tests/data/trn1/." "$root"
chmod -R u+w "$root" # make distcheck's source tree is read-only
cp -R "$root" "$TEST_TMP/pristine"
dev=$root/devices/virtual/neuron_device

start_daemon damaged --backend "sysfs:$root" --interval 100ms --log-level debug --enable-admin
run_ticks 1
stable_metrics > "$TEST_TMP/before"

# metrics_has PATTERN: whether the current /metrics has a matching line.
metrics_has() {
  http /metrics --fail >"$TEST_TMP/scrape"
  grep -q "$1" "$TEST_TMP/scrape"
}
# after_ticks N PATTERN: after N more ticks, /metrics has a line matching PATTERN.
after_ticks() {
  run_ticks "$1"
  metrics_has "$2" || fail "/metrics does not show '$2' $1 ticks on: $(cat "$TEST_TMP/scrape")"
}

mem=$dev/neuron0/neuron_core1/stats/memory_usage/device_mem/total
for junk in '' 'garbage' '-1' '99999999999999999999999' "$(printf '\001\002\377')"; do
  printf '%s' "$junk" > "$mem"
  run_ticks 1
  ! metrics_has 'neuroncore_memory_used_bytes{neuron_device="0",neuroncore="1"}' ||
    fail "an unreadable device_mem/total ('$junk') still gives a value"
  metrics_has 'neuroncore_memory_used_bytes{neuron_device="0",neuroncore="0"}' ||
    fail "one bad file took other series with it"
done
# A file bigger than a sysfs page, a file turned into a directory, binary junk.
head -c 10000 /dev/zero | tr '\0' '7' > "$dev/neuron0/stats/hardware/sram_ecc_uncorrected"
rm "$dev/neuron0/stats/power/utilization" && mkdir "$dev/neuron0/stats/power/utilization"
head -c 512 /dev/urandom > "$dev/neuron0/neuron_core0/stats/tensor_engine/pe_cntrs"
printf 'POWER_STATUS_VALID,1,1,1\n' > "$dev/neuron3/stats/power/utilization"
# A device vanishes.
mv "$dev/neuron3" "$TEST_TMP/neuron3"
after_ticks 1 'neuron_device_up{neuron_device="3"} 0'
! metrics_has 'neuron_device="3",neuroncore' || fail "series of a vanished device are still reported"
# The driver is unloaded altogether: the devices and their series go, and
# the collector, up, has nothing to poll.
rm -rf "$root/devices"
after_ticks 1 '^neurond_backend_devices 0$'
! metrics_has '^neuron_device_up' || fail "series of devices the driver no longer lists are still reported"
metrics_has '^neurond_collector_up{collector="backend"} 1$' || fail "the backend is not up without devices"
http /healthz --fail >/dev/null

# Repair: the next tick takes the devices in again, and from then on every
# figure is back.
rm -rf "$root"
cp -R "$TEST_TMP/pristine" "$root"
after_ticks 1 'neuron_device_up{neuron_device="3"} 1'
run_ticks 1
stable_metrics > "$TEST_TMP/after"
diff -u "$TEST_TMP/before" "$TEST_TMP/after" || fail "figures did not recover"
stop_daemon
grep -q 'collector sysfs: every device is gone: .*neuron_device is missing' "$DAEMON_LOG" ||
  fail "no warning that the devices are gone"
grep -q 'collector sysfs: 2 devices found' "$DAEMON_LOG" || fail "no warning that the devices are back"
# Partly damaged trees: the debug line names a file and why it failed.
grep -q 'series unreadable this tick; first: devices/virtual/neuron_device/neuron[0-9]*/.*: ' "$DAEMON_LOG" ||
  fail "no debug line naming an unreadable file"
