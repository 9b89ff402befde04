#!/bin/sh
# Golden-file test of /metrics for each fixture tree, in the style of
# node_exporter's end-to-end test: start the daemon on tests/data/<tree>,
# scrape, drop the volatile lines, compare with tests/data/<tree>.metrics.
# UPDATE_GOLDEN=1 rewrites the golden files instead.
. "$(dirname "$0")/lib.sh"
need curl

failed=0
for tree in inf1 inf2 trn1 trn2 trn2u; do
  start_daemon "$tree" --backend "sysfs:$top_srcdir/tests/data/$tree" --log-level debug
  stable_metrics > "$TEST_TMP/$tree.metrics"
  http /api/v1/devices --fail > "$TEST_TMP/$tree.devices"
  stop_daemon
  golden=$top_srcdir/tests/data/$tree.metrics
  if [ "${UPDATE_GOLDEN:-0}" = 1 ]; then
    cp "$TEST_TMP/$tree.metrics" "$golden"
    echo "updated $golden"
  elif ! diff -u "$golden" "$TEST_TMP/$tree.metrics"; then
    echo "FAIL: $tree: /metrics differs from $golden (UPDATE_GOLDEN=1 to accept)"
    failed=1
  fi
  # Never a zero for what the driver does not expose: no series at all.
  if grep -Eq '^neuron_(device_dma|device_hbm|link)_' "$TEST_TMP/$tree.metrics"; then
    echo "FAIL: $tree: DMA, HBM bandwidth or NeuronLink series from sysfs"
    failed=1
  fi
  if grep -q 'neuron_device_dma_bytes_total\|neuron_link_' "$TEST_TMP/$tree.devices"; then
    echo "FAIL: $tree: /api/v1/devices lists metrics sysfs cannot report"
    failed=1
  fi
  grep -q '"metrics":\["' "$TEST_TMP/$tree.devices" || { echo "FAIL: $tree: no metrics list"; failed=1; }
done
[ "$failed" -eq 0 ] || fail "a fixture tree failed (see above)"
