/* The metric families neurond knows: names, help, types and label names.
 *
 * Every series a collector reports belongs to one family here, so the
 * exposition, the store and the REST API agree on names without copying them.
 * Names follow the ecosystem where it already has one (what AWS's
 * neuron-monitor-prometheus.py exporter writes and its Grafana dashboard
 * reads: aws-neuron-sdk tools/neuron-sys-tools/neuron-monitor-user-guide.rst,
 * src/examples/neuron-monitor/neuron-monitor-grafana.json) and Prometheus
 * naming rules otherwise (base units, _total for counters).
 * The table is constant: safe to read from any thread. */
#pragma once

#include <stddef.h>

#define METRIC_LABELS_MAX 3

enum metric_type {
        METRIC_GAUGE,
        METRIC_COUNTER,
};

/* The order here is the order of families in /metrics. */
enum metric_id {
        /* per NeuronCore */
        METRIC_CORE_UTILIZATION,
        METRIC_CORE_MEMORY_USED,
        METRIC_CORE_MEMORY_CATEGORY,
        METRIC_CORE_EXECUTION_STATUS,
        METRIC_CORE_EXECUTION_ERRORS,
        /* per device */
        METRIC_DEVICE_UP,
        METRIC_DEVICE_MEMORY_USED,
        METRIC_DEVICE_MEMORY_TOTAL,
        METRIC_DEVICE_HBM_BYTES,
        METRIC_DEVICE_DMA_BYTES,
        METRIC_DEVICE_POWER_UTILIZATION,
        METRIC_DEVICE_ECC_EVENTS,
        /* per NeuronLink direction */
        METRIC_LINK_TX_BYTES,
        METRIC_LINK_RX_BYTES,
        /* host */
        METRIC_SYSTEM_VCPU_USAGE,
        METRIC_SYSTEM_MEMORY_USED,
        METRIC_SYSTEM_MEMORY_TOTAL,
        METRIC__COUNT,
};

struct metric_desc {
        const char *name; /* exposition name; counters end in _total */
        const char *help;
        const char *unit; /* OpenMetrics unit ("bytes", "ratio") or NULL */
        enum metric_type type;
        const char *labels[METRIC_LABELS_MAX]; /* label names, unused slots NULL */
};

extern const struct metric_desc metric_table[METRIC__COUNT];

/* Returns the metric id for an exposition name, or -ENOENT. */
int metric_lookup(const char *name);

/* Number of label names the family has. */
size_t metric_label_count(const struct metric_desc *m);

/* Index of a label name in the family, or -ENOENT. */
int metric_label_index(const struct metric_desc *m, const char *label);
