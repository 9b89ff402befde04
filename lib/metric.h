/* The metric families neurond knows: names, help, types and label names.
 *
 * Every series a collector reports belongs to one family here, so the
 * exposition, the store and the REST API agree on names without copying them.
 * Names follow the ecosystem where it already has one (what AWS's
 * neuron-monitor-prometheus.py exporter writes and its Grafana dashboard
 * reads: aws-neuron-sdk tools/neuron-sys-tools/neuron-monitor-user-guide.rst,
 * src/examples/neuron-monitor/neuron-monitor-grafana.json), with the same
 * labels and meaning, and Prometheus naming rules otherwise (base units,
 * _total for counters). docs/metrics.md says which is which.
 *
 * A series' label value may be empty: the label is then absent, as
 * Prometheus reads an empty label. That is how one family holds both the
 * runtime-level series a runtime reports (runtime_tag set, no core) and the
 * per-core series the driver reports (core set, no runtime_tag).
 *
 * The table is constant: safe to read from any thread. */
#pragma once

#include <stddef.h>
#include <stdint.h>

#define METRIC_LABELS_MAX 4

enum metric_type {
        METRIC_GAUGE,
        METRIC_COUNTER,
        METRIC_INFO,    /* value 1, the facts in its labels; the name ends in _info */
        METRIC_UNTYPED, /* a gauge named as the ecosystem names it with a suffix the exposition rules keep for
                           histograms (system_vcpu_count): declared untyped, so that linters accept the name */
};

/* The order here is the order of families in /metrics. */
enum metric_id {
        /* per NeuronCore: the logical core the AWS tools number */
        METRIC_CORE_UTILIZATION,
        METRIC_CORE_BUSY_SECONDS,
        METRIC_CORE_PHYSICAL_UTILIZATION,
        METRIC_CORE_MEMORY_USED,
        METRIC_CORE_MEMORY_CATEGORY,
        METRIC_CORE_MEMORY_CONSTANTS,
        METRIC_CORE_MEMORY_MODEL_CODE,
        METRIC_CORE_MEMORY_SCRATCHPAD,
        METRIC_CORE_MEMORY_RUNTIME,
        METRIC_CORE_MEMORY_TENSORS,
        METRIC_CORE_FLOPS,
        METRIC_CORE_EXECUTION_STATUS,
        METRIC_CORE_EXECUTION_ERRORS,
        METRIC_CORE_DRIVER_STATUS,
        /* per Neuron runtime (a process using NeuronCores) */
        METRIC_RUNTIME_INFO,
        METRIC_RUNTIME_LATENCY,
        METRIC_RUNTIME_DEVICE_LATENCY,
        METRIC_RUNTIME_MEMORY_USED,
        METRIC_RUNTIME_HOST_MEMORY,
        METRIC_RUNTIME_VCPU_USAGE,
        /* per device */
        METRIC_DEVICE_UP,
        METRIC_DEVICE_MEMORY_USED,
        METRIC_DEVICE_MEMORY_TOTAL,
        METRIC_DEVICE_HBM_BYTES,
        METRIC_DEVICE_DMA_BYTES,
        METRIC_DEVICE_POWER_UTILIZATION,
        METRIC_DEVICE_ECC_EVENTS,
        METRIC_DEVICE_HEALTH,
        /* per NeuronLink direction */
        METRIC_LINK_TX_BYTES,
        METRIC_LINK_RX_BYTES,
        /* host */
        METRIC_SYSTEM_VCPU_COUNT,
        METRIC_SYSTEM_VCPU_USAGE,
        METRIC_SYSTEM_VCPU_SECONDS,
        METRIC_SYSTEM_MEMORY_USED,
        METRIC_SYSTEM_MEMORY_TOTAL,
        METRIC_SYSTEM_SWAP_USED,
        METRIC_SYSTEM_SWAP_TOTAL,
        METRIC__COUNT,
};

/* The five runtime memory categories neuron-monitor reports per core, in
 * the order of METRIC_CORE_MEMORY_CONSTANTS..TENSORS. */
#define METRIC_CORE_MEMORY_KINDS 5
extern const char *const metric_core_memory_kinds[METRIC_CORE_MEMORY_KINDS];

/* execution_status_total's status_type values, neuron-monitor's
 * execution_summary keys. */
enum metric_exec_status {
        EXEC_COMPLETED,
        EXEC_COMPLETED_WITH_ERR,
        EXEC_COMPLETED_WITH_NUM_ERR,
        EXEC_TIMED_OUT,
        EXEC_INCORRECT_INPUT,
        EXEC_FAILED_TO_QUEUE,
        EXEC_STATUS__COUNT,
};
extern const char *const metric_exec_status_names[EXEC_STATUS__COUNT];

/* execution_errors_total's error_type values, neuron-monitor's
 * error_summary keys. */
enum metric_exec_error {
        EXEC_ERROR_GENERIC,
        EXEC_ERROR_NUMERICAL,
        EXEC_ERROR_TRANSIENT,
        EXEC_ERROR_MODEL,
        EXEC_ERROR_RUNTIME,
        EXEC_ERROR_HARDWARE,
        EXEC_ERROR__COUNT,
};
extern const char *const metric_exec_error_names[EXEC_ERROR__COUNT];

/* neuron_runtime_host_memory_used_bytes' memory_type values, the host
 * categories of neuron-monitor's usage_breakdown. */
enum metric_host_memory {
        HOST_MEM_APPLICATION,
        HOST_MEM_CONSTANTS,
        HOST_MEM_DMA_BUFFERS,
        HOST_MEM_TENSORS,
        HOST_MEM__COUNT
};
extern const char *const metric_host_memory_names[HOST_MEM__COUNT];

/* execution_latency_seconds' percentile values, neuron-monitor's keys. */
#define METRIC_PERCENTILES 7
extern const char *const metric_percentile_names[METRIC_PERCENTILES];
extern const double metric_percentiles[METRIC_PERCENTILES]; /* 0, 1, 25 ... 100 */

/* How a family follows from another one, sample by sample: the store
 * codes such a series' history as what the rule does not predict
 * (storage/derive.h). */
enum metric_derive {
        DERIVE_NONE,
        DERIVE_MEAN,     /* the mean of the source series (a logical core: its physical cores) */
        DERIVE_INTEGRAL, /* metric_busy_us() of the source summed, in seconds */
        DERIVE_EQUAL,    /* the source's value (what a link receives: what its peer sends) */
};

struct metric_desc {
        const char *name; /* exposition name; counters end in _total, info families in _info */
        const char *help;
        const char *unit; /* OpenMetrics unit ("bytes", "ratio") when the name ends in it, or NULL */
        enum metric_type type;
        const char *labels[METRIC_LABELS_MAX]; /* label names, unused slots NULL */
        /* With derive set: the family of its sources, which are the series
         * of that family whose labels match this one's: each label of this
         * family equals the source family's label that derived_labels names
         * in its place (NULL: the label of the same name, where the source
         * family has one). */
        enum metric_derive derive;
        enum metric_id derived_from;
        const char *derived_labels[METRIC_LABELS_MAX];
};

extern const struct metric_desc metric_table[METRIC__COUNT];

/* Returns the metric id for an exposition name, or -ENOENT. */
int metric_lookup(const char *name);

/* Busy time in whole microseconds that a busy ratio (0-1) held over
 * elapsed_ms gives: what a busy-seconds counter adds for one interval, so
 * that its rate over any window is the time-weighted mean of the ratio's
 * samples in it. Nothing for a negative or empty interval. */
uint64_t metric_busy_us(double ratio, int64_t elapsed_ms);

/* Number of label names the family has. */
size_t metric_label_count(const struct metric_desc *m);

/* Index of a label name in the family, or -ENOENT. */
int metric_label_index(const struct metric_desc *m, const char *label);
