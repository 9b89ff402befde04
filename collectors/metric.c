#include "config.h"

#include <errno.h>
#include <string.h>

#include "collectors/metric.h"

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
        [METRIC_DEVICE_DMA_BYTES] = {
                .name = "neuron_device_dma_bytes_total",
                .help = "Bytes moved by the device's DMA engines, by direction.",
                .unit = "bytes",
                .type = METRIC_COUNTER,
                .labels = { "neuron_device", "direction" },
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
