#!/bin/sh
# Model to sysfs and back: tests/tools/model-sysfs writes the device model's
# state as a driver-style tree each tick while a neurond reads that tree with
# the sysfs backend; every per-device HBM figure the daemon reports must be
# one the model produced for that device, and the figures must move.
set -eu
. "$top_srcdir/tests/integration/sysfs-lib.sh"
: "${MODEL_SYSFS:?run through make check}"

tree=$work/tree
# One tick first, so that the daemon finds devices when it opens the tree.
"$MODEL_SYSFS" model:trn1.32xlarge "$tree" 100 1 > "$work/first"
start_daemon roundtrip --backend "sysfs:$tree" --interval 100ms

# Exact match on the static tree.
sleep 0.3
scrape /metrics > "$work/static"
n=0
while read -r tick dev bytes; do
  got=$(sed -n "s/^neuron_device_memory_used_bytes{neuron_device=\"$dev\"} //p" "$work/static")
  if ! awk -v a="$got" -v b="$bytes" 'BEGIN { exit !(a != "" && a + 0 == b + 0) }'; then
    echo "FAIL: device $dev: the model said $bytes, sysfs reads '$got'"; exit 1
  fi
  n=$((n + 1))
done < "$work/first"
[ "$n" -eq 16 ] || { echo "FAIL: expected 16 devices from the model, got $n"; exit 1; }
grep -q '^neuron_device_memory_total_bytes{neuron_device="15"} 34359738368$' "$work/static" ||
  { echo "FAIL: capacity from the catalog is missing"; exit 1; }

# Live: 30 ticks of 200 ms at 50x speed, so the model's memory moves; scrape
# every 100 ms while it runs (bounded by the writer's own end).
"$MODEL_SYSFS" model:trn1.32xlarge,speed=50 "$tree" 200 30 > "$work/live" &
writer=$!
i=0
while kill -0 "$writer" 2>/dev/null && [ $i -lt 100 ]; do
  scrape /metrics | sed -n 's/^neuron_device_memory_used_bytes{neuron_device="\([0-9]*\)"} /\1 /p' >> "$work/seen"
  sleep 0.1
  i=$((i + 1))
done
wait "$writer"
stop_daemon

# Every figure seen must be one the model wrote for that device.
cat "$work/first" "$work/live" | awk '{ print $2, $3 + 0 }' | sort -u > "$work/model"
awk '{ print $1, $2 + 0 }' "$work/seen" | sort -u > "$work/read"
if [ -n "$(comm -13 "$work/model" "$work/read")" ]; then
  echo "FAIL: sysfs reported HBM figures the model never wrote:"; comm -13 "$work/model" "$work/read" | head
  exit 1
fi
distinct=$(awk '$1 == 0' "$work/read" | wc -l)
[ "$distinct" -ge 2 ] || { echo "FAIL: device 0's HBM never changed while the model ran"; exit 1; }
echo "$(wc -l < "$work/seen") figures read, $distinct distinct for device 0, all from the model"
