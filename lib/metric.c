#include "config.h"

#include <errno.h>
#include <string.h>

#include "lib/metric.h"

const struct metric_desc metric_table[METRIC__COUNT] = {
        [METRIC_CORE_UTILIZATION] = {
                .name = "neuroncore_utilization_ratio",
                .help = "Fraction of time the NeuronCore was busy over the last interval (0-1).",
                .unit = "ratio",
                .type = METRIC_GAUGE,
                .labels = { "neuron_device", "neuroncore" },
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
        [METRIC_CORE_EXECUTION_STATUS] = {
                .name = "execution_status_total",
                .help = "Executions on the NeuronCore by outcome (success, failure, timeout, ...).",
                .type = METRIC_COUNTER,
                .labels = { "neuron_device", "neuroncore", "status_type" },
        },
        [METRIC_CORE_EXECUTION_ERRORS] = {
                .name = "execution_errors_total",
                .help = "Failed executions on the NeuronCore by error type.",
                .type = METRIC_COUNTER,
                .labels = { "neuron_device", "neuroncore", "error_type" },
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
                .labels = { "neuron_device", "event_type" },
        },
        [METRIC_LINK_TX_BYTES] = {
                .name = "neuron_link_transmit_bytes_total",
                .help = "Bytes sent by the device over its NeuronLink to the peer device.",
                .unit = "bytes",
                .type = METRIC_COUNTER,
                .labels = { "neuron_device", "peer_device" },
        },
        [METRIC_LINK_RX_BYTES] = {
                .name = "neuron_link_receive_bytes_total",
                .help = "Bytes received by the device over its NeuronLink from the peer device.",
                .unit = "bytes",
                .type = METRIC_COUNTER,
                .labels = { "neuron_device", "peer_device" },
        },
        [METRIC_SYSTEM_VCPU_USAGE] = {
                .name = "system_vcpu_usage_ratio",
                .help = "Share of the host's vCPU time by usage type over the last interval (0-1).",
                .unit = "ratio",
                .type = METRIC_GAUGE,
                .labels = { "usage_type" },
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
};

int metric_lookup(const char *name) {
        for (int i = 0; i < METRIC__COUNT; i++)
                if (strcmp(metric_table[i].name, name) == 0)
                        return i;
        return -ENOENT;
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
