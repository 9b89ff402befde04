#!/bin/sh
# Model to sysfs and back: tests/tools/model-sysfs writes the device model's
# state as a driver-style tree each tick while a neurond reads that tree with
# the sysfs backend; every per-device HBM figure the daemon reports must be
# one the model produced for that device, and the figures must move.
. "$(dirname "$0")/lib.sh"
need curl
: "${MODEL_SYSFS:?run through make check}"

tree=$TEST_TMP/tree
# One tick first, so that the daemon finds devices when it opens the tree.
"$MODEL_SYSFS" model:trn1.32xlarge "$tree" 100 1 > "$TEST_TMP/first"
start_daemon roundtrip --backend "sysfs:$tree" --interval 100ms --log-level debug --enable-admin

# Exact match on the static tree, at the next tick.
run_ticks 1
http /metrics --fail > "$TEST_TMP/static"
n=0
while read -r tick dev bytes; do
  got=$(sed -n "s/^neuron_device_memory_used_bytes{neuron_device=\"$dev\"} //p" "$TEST_TMP/static")
  awk -v a="$got" -v b="$bytes" 'BEGIN { exit !(a != "" && a + 0 == b + 0) }' ||
    fail "device $dev: the model said $bytes, sysfs reads '$got'"
  n=$((n + 1))
done < "$TEST_TMP/first"
[ "$n" -eq 16 ] || fail "expected 16 devices from the model, got $n"
grep -q '^neuron_device_memory_total_bytes{neuron_device="15"} 34359738368$' "$TEST_TMP/static" ||
  fail "capacity from the catalog is missing"

# Live: 15 ticks of 200 ms at 50x speed, so the model's memory moves; the
# daemon ticks and is scraped, tick after tick, while the writer runs
# (bounded by the writer's own end, and by a count of ticks).
"$MODEL_SYSFS" model:trn1.32xlarge,speed=50 "$tree" 200 15 > "$TEST_TMP/live" &
writer=$!
i=0
while kill -0 "$writer" 2>/dev/null && [ $i -lt 5000 ]; do
  run_ticks 1
  http /metrics --fail | sed -n 's/^neuron_device_memory_used_bytes{neuron_device="\([0-9]*\)"} /\1 /p' >> "$TEST_TMP/seen"
  i=$((i + 1))
done
wait "$writer"
stop_daemon

# Every figure seen must be one the model wrote for that device.
cat "$TEST_TMP/first" "$TEST_TMP/live" | awk '{ print $2, $3 + 0 }' | sort -u > "$TEST_TMP/model"
awk '{ print $1, $2 + 0 }' "$TEST_TMP/seen" | sort -u > "$TEST_TMP/read"
[ -z "$(comm -13 "$TEST_TMP/model" "$TEST_TMP/read")" ] ||
  fail "sysfs reported HBM figures the model never wrote: $(comm -13 "$TEST_TMP/model" "$TEST_TMP/read" | head)"
distinct=$(awk '$1 == 0' "$TEST_TMP/read" | wc -l)
[ "$distinct" -ge 2 ] || fail "device 0's HBM never changed while the model ran"
echo "$(wc -l < "$TEST_TMP/seen") figures read, $distinct distinct for device 0, all from the model"
