#include "config.h"

#include <errno.h>
#include <math.h>
#include <string.h>

#include "lib/metric.h"

const char *const metric_core_memory_kinds[METRIC_CORE_MEMORY_KINDS] = {
        "constants", "model_code", "model_shared_scratchpad", "runtime_memory", "tensors",
};

const char *const metric_exec_status_names[EXEC_STATUS__COUNT] = {
        [EXEC_COMPLETED] = "completed",
        [EXEC_COMPLETED_WITH_ERR] = "completed_with_err",
        [EXEC_COMPLETED_WITH_NUM_ERR] = "completed_with_num_err",
        [EXEC_TIMED_OUT] = "timed_out",
        [EXEC_INCORRECT_INPUT] = "incorrect_input",
        [EXEC_FAILED_TO_QUEUE] = "failed_to_queue",
};

const char *const metric_exec_error_names[EXEC_ERROR__COUNT] = {
        [EXEC_ERROR_GENERIC] = "generic", [EXEC_ERROR_NUMERICAL] = "numerical", [EXEC_ERROR_TRANSIENT] = "transient",
        [EXEC_ERROR_MODEL] = "model",     [EXEC_ERROR_RUNTIME] = "runtime",     [EXEC_ERROR_HARDWARE] = "hardware",
};

const char *const metric_host_memory_names[HOST_MEM__COUNT] = {
        [HOST_MEM_APPLICATION] = "application_memory",
        [HOST_MEM_CONSTANTS] = "constants",
        [HOST_MEM_DMA_BUFFERS] = "dma_buffers",
        [HOST_MEM_TENSORS] = "tensors",
};

const char *const metric_percentile_names[METRIC_PERCENTILES] = { "p0", "p1", "p25", "p50", "p75", "p99", "p100" };
const double metric_percentiles[METRIC_PERCENTILES] = { 0, 1, 25, 50, 75, 99, 100 };

#define CORE_MEMORY_KIND(id, kind)                                                                                     \
        [id] = {                                                                                                       \
                .name = "neuroncore_memory_usage_" kind,                                                               \
                .help = "Device memory the Neuron runtime holds on the NeuronCore for " kind                           \
                        ", in bytes (neuron-monitor's neuroncore_memory_usage).",                                      \
                .type = METRIC_GAUGE,                                                                                  \
                .labels = { "neuron_device", "neuroncore", "runtime_tag" },                                            \
        }

const struct metric_desc metric_table[METRIC__COUNT] = {
        [METRIC_CORE_UTILIZATION] = {
                .name = "neuroncore_utilization_ratio",
                .help = "Fraction of time the NeuronCore was busy over the last interval (0-1); runtime_tag names the runtime holding it.",
                .unit = "ratio",
                .type = METRIC_GAUGE,
                .labels = { "neuron_device", "neuroncore", "runtime_tag" },
                .derive = DERIVE_MEAN,
                .derived_from = METRIC_CORE_PHYSICAL_UTILIZATION,
        },
        [METRIC_CORE_BUSY_SECONDS] = {
                .name = "neuroncore_busy_seconds_total",
                .help = "Time the NeuronCore was busy since neurond started, in seconds (to the microsecond): each interval adds neuroncore_utilization_ratio times its length.",
                .unit = "seconds",
                .type = METRIC_COUNTER,
                .labels = { "neuron_device", "neuroncore", "runtime_tag" },
                .derive = DERIVE_INTEGRAL,
                .derived_from = METRIC_CORE_UTILIZATION,
        },
        [METRIC_CORE_PHYSICAL_UTILIZATION] = {
                .name = "neuroncore_physical_utilization_ratio",
                .help = "Busy fraction of each physical NeuronCore that makes up a logical one (LNC 2), 0-1.",
                .unit = "ratio",
                .type = METRIC_GAUGE,
                .labels = { "neuron_device", "neuroncore", "physical_neuroncore" },
        },
        [METRIC_CORE_MEMORY_USED] = {
                .name = "neuroncore_memory_used_bytes",
                .help = "Device memory (HBM) allocated by the NeuronCore, in bytes.",
                .unit = "bytes",
                .type = METRIC_GAUGE,
                .labels = { "neuron_device", "neuroncore" },
        },
        [METRIC_CORE_MEMORY_CATEGORY] = {
                .name = "neuroncore_memory_usage_bytes",
                .help = "Device memory (HBM) allocated by the NeuronCore, by the driver's usage category, in bytes.",
                .unit = "bytes",
                .type = METRIC_GAUGE,
                .labels = { "neuron_device", "neuroncore", "category" },
        },
        CORE_MEMORY_KIND(METRIC_CORE_MEMORY_CONSTANTS, "constants"),
        CORE_MEMORY_KIND(METRIC_CORE_MEMORY_MODEL_CODE, "model_code"),
        CORE_MEMORY_KIND(METRIC_CORE_MEMORY_SCRATCHPAD, "model_shared_scratchpad"),
        CORE_MEMORY_KIND(METRIC_CORE_MEMORY_RUNTIME, "runtime_memory"),
        CORE_MEMORY_KIND(METRIC_CORE_MEMORY_TENSORS, "tensors"),
        [METRIC_CORE_FLOPS] = {
                .name = "neuroncore_floating_point_operations_total",
                .help = "Floating point operations the NeuronCore performed for the runtime holding it.",
                .type = METRIC_COUNTER,
                .labels = { "neuron_device", "neuroncore", "runtime_tag" },
        },
        [METRIC_CORE_EXECUTION_STATUS] = {
                .name = "execution_status_total",
                .help = "Executions by outcome (completed, completed_with_err, completed_with_num_err, timed_out, incorrect_input, failed_to_queue), per runtime or per NeuronCore.",
                .type = METRIC_COUNTER,
                .labels = { "neuron_device", "neuroncore", "runtime_tag", "status_type" },
        },
        [METRIC_CORE_EXECUTION_ERRORS] = {
                .name = "execution_errors_total",
                .help = "Execution errors by type (generic, numerical, transient, model, runtime, hardware), per runtime or per NeuronCore.",
                .type = METRIC_COUNTER,
                .labels = { "neuron_device", "neuroncore", "runtime_tag", "error_type" },
        },
        [METRIC_CORE_DRIVER_STATUS] = {
                .name = "neuroncore_driver_status_total",
                .help = "The driver's execution status counters of the NeuronCore under their sysfs names.",
                .type = METRIC_COUNTER,
                .labels = { "neuron_device", "neuroncore", "status" },
        },
        [METRIC_RUNTIME_INFO] = {
                .name = "neuron_runtime_info",
                .help = "A Neuron runtime (a process using NeuronCores): its tag and process id; always 1.",
                .type = METRIC_INFO,
                .labels = { "runtime_tag", "pid" },
        },
        [METRIC_RUNTIME_LATENCY] = {
                .name = "execution_latency_seconds",
                .help = "Latency of the runtime's executions over the last interval as the runtime measures it, by percentile (p0 ... p100).",
                .unit = "seconds",
                .type = METRIC_GAUGE,
                .labels = { "runtime_tag", "percentile" },
        },
        [METRIC_RUNTIME_DEVICE_LATENCY] = {
                .name = "execution_device_latency_seconds",
                .help = "Time of the runtime's executions on the Neuron device alone over the last interval, by percentile.",
                .unit = "seconds",
                .type = METRIC_GAUGE,
                .labels = { "runtime_tag", "percentile" },
        },
        [METRIC_RUNTIME_MEMORY_USED] = {
                .name = "neuron_runtime_memory_used_bytes",
                .help = "Memory the Neuron runtime uses, by location (host, neuron_device), in bytes.",
                .unit = "bytes",
                .type = METRIC_GAUGE,
                .labels = { "runtime_tag", "memory_location" },
        },
        [METRIC_RUNTIME_HOST_MEMORY] = {
                .name = "neuron_runtime_host_memory_used_bytes",
                .help = "Host memory the Neuron runtime uses, by category (application_memory, constants, dma_buffers, tensors), in bytes.",
                .unit = "bytes",
                .type = METRIC_GAUGE,
                .labels = { "runtime_tag", "category" },
        },
        [METRIC_RUNTIME_VCPU_USAGE] = {
                .name = "neuron_runtime_vcpu_usage_ratio",
                .help = "Share of the host's vCPU time the Neuron runtime used over the last interval, by usage type (user, system).",
                .unit = "ratio",
                .type = METRIC_GAUGE,
                .labels = { "runtime_tag", "usage_type" },
        },
        [METRIC_DEVICE_UP] = {
                .name = "neuron_device_up",
                .help = "1 when the Neuron device answered the latest poll, 0 when it is missing.",
                .type = METRIC_GAUGE,
                .labels = { "neuron_device" },
        },
        [METRIC_DEVICE_MEMORY_USED] = {
                .name = "neuron_device_memory_used_bytes",
                .help = "Device memory (HBM) in use on the Neuron device, summed over its cores, in bytes.",
                .unit = "bytes",
                .type = METRIC_GAUGE,
                .labels = { "neuron_device" },
        },
        [METRIC_DEVICE_MEMORY_TOTAL] = {
                .name = "neuron_device_memory_total_bytes",
                .help = "Device memory (HBM) capacity of the Neuron device, in bytes.",
                .unit = "bytes",
                .type = METRIC_GAUGE,
                .labels = { "neuron_device" },
        },
        [METRIC_DEVICE_HBM_BYTES] = {
                .name = "neuron_device_hbm_bytes_total",
                .help = "Bytes read from or written to the device's HBM, by direction (read, write).",
                .unit = "bytes",
                .type = METRIC_COUNTER,
                .labels = { "neuron_device", "direction" },
        },
        [METRIC_DEVICE_DMA_BYTES] = {
                .name = "neuron_device_dma_bytes_total",
                .help = "Bytes moved by the device's DMA engines, by direction.",
                .unit = "bytes",
                .type = METRIC_COUNTER,
                .labels = { "neuron_device", "direction" },
        },
        [METRIC_DEVICE_POWER_UTILIZATION] = {
                .name = "neuron_device_power_utilization_ratio",
                .help = "Average power draw of the device over the last minute as a fraction of its maximum (0-1).",
                .unit = "ratio",
                .type = METRIC_GAUGE,
                .labels = { "neuron_device" },
        },
        [METRIC_DEVICE_ECC_EVENTS] = {
                .name = "hardware_ecc_events_total",
                .help = "ECC events on the device by type (mem_ecc_uncorrected, mem_ecc_repairable_uncorrected, sram_ecc_uncorrected).",
                .type = METRIC_COUNTER,
                .labels = { "neuron_device_index", "event_type" },
        },
        [METRIC_DEVICE_HEALTH] = {
                .name = "neuron_device_health",
                .help = "1 for the device's health state (healthy, degraded, unhealthy, unknown), 0 for the others; docs/health.md gives the rules.",
                .type = METRIC_GAUGE,
                .labels = { "neuron_device", "state" },
        },
        [METRIC_LINK_TX_BYTES] = {
                .name = "neuron_link_transmit_bytes_total",
                .help = "Bytes sent by the device over its NeuronLink to the peer device.",
                .unit = "bytes",
                .type = METRIC_COUNTER,
                .labels = { "neuron_device", "peer_device", "peer_node" },
        },
        [METRIC_LINK_RX_BYTES] = {
                .name = "neuron_link_receive_bytes_total",
                .help = "Bytes received by the device over its NeuronLink from the peer device.",
                .unit = "bytes",
                .type = METRIC_COUNTER,
                .labels = { "neuron_device", "peer_device", "peer_node" },
                .derive = DERIVE_EQUAL,
                .derived_from = METRIC_LINK_TX_BYTES,
                .derived_labels = { "peer_device", "neuron_device" },
        },
        [METRIC_SYSTEM_VCPU_COUNT] = {
                .name = "system_vcpu_count",
                .help = "vCPUs of the host (a gauge).",
                .type = METRIC_UNTYPED,
        },
        [METRIC_SYSTEM_VCPU_USAGE] = {
                .name = "system_vcpu_usage_ratio",
                .help = "Share of the host's vCPU time in use over the last interval (0-1): user (user, nice) and system (system, io_wait, irq, soft_irq).",
                .unit = "ratio",
                .type = METRIC_GAUGE,
                .labels = { "usage_type" },
        },
        [METRIC_SYSTEM_VCPU_SECONDS] = {
                .name = "system_vcpu_seconds_total",
                .help = "vCPU time of the host since boot, summed over its vCPUs, by mode (/proc/stat's states).",
                .unit = "seconds",
                .type = METRIC_COUNTER,
                .labels = { "mode" },
        },
        [METRIC_SYSTEM_MEMORY_USED] = {
                .name = "system_memory_used_bytes",
                .help = "Host memory in use (total minus available), in bytes.",
                .unit = "bytes",
                .type = METRIC_GAUGE,
        },
        [METRIC_SYSTEM_MEMORY_TOTAL] = {
                .name = "system_memory_total_bytes",
                .help = "Host memory installed, in bytes.",
                .unit = "bytes",
                .type = METRIC_GAUGE,
        },
        [METRIC_SYSTEM_SWAP_USED] = {
                .name = "system_swap_used_bytes",
                .help = "Host swap space in use, in bytes.",
                .unit = "bytes",
                .type = METRIC_GAUGE,
        },
        [METRIC_SYSTEM_SWAP_TOTAL] = {
                .name = "system_swap_total_bytes",
                .help = "Host swap space configured, in bytes.",
                .unit = "bytes",
                .type = METRIC_GAUGE,
        },
};

int metric_lookup(const char *name) {
        for (int i = 0; i < METRIC__COUNT; i++)
                if (strcmp(metric_table[i].name, name) == 0)
                        return i;
        return -ENOENT;
}

uint64_t metric_busy_us(double ratio, int64_t elapsed_ms) {
        if (!(ratio > 0) || elapsed_ms <= 0)
                return 0;
        return (uint64_t) llround(ratio * (double) elapsed_ms * 1000.0);
}

size_t metric_label_count(const struct metric_desc *m) {
        size_t n = 0;
        while (n < METRIC_LABELS_MAX && m->labels[n])
                n++;
        return n;
}

int metric_label_index(const struct metric_desc *m, const char *label) {
        for (size_t i = 0; i < metric_label_count(m); i++)
                if (strcmp(m->labels[i], label) == 0)
                        return (int) i;
        return -ENOENT;
}
