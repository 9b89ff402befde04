/* The shared description of what a backend reports: its series (a metric
 * family and label values), its devices and links (the inventory), and one
 * tick's values (a sample batch). The collectors fill them, the store keeps
 * them, the web side renders them. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "lib/metric.h"

#define SERIES_LABEL_VALUE_MAX 48 /* fits the driver's longest status name */
#define INVENTORY_NAME_MAX 64

/* One time series: its family and the values of the family's labels. */
struct series_desc {
        enum metric_id metric;
        char label_values[METRIC_LABELS_MAX][SERIES_LABEL_VALUE_MAX];
};

struct device_info {
        unsigned index;        /* neuron<N> */
        char name[32];         /* sysfs device_name, e.g. "Trainium1" */
        char arch[8];          /* sysfs arch_type of the device, e.g. "NDv2" */
        char core_arch[8];     /* NeuronCore arch, e.g. "NCv2" */
        unsigned core_count;   /* physical NeuronCores */
        unsigned first_core;   /* host-wide index of the device's core 0 */
        uint64_t memory_bytes; /* HBM capacity; 0 when unknown */
        char serial[24];       /* sysfs serial_number, or "" when unknown */
        unsigned n_peers;
        unsigned *peers; /* device indexes this device links to */
};

struct inventory {
        char instance_type[INVENTORY_NAME_MAX]; /* "trn1.32xlarge", or "" when unknown */
        char backend[INVENTORY_NAME_MAX];       /* the resolved backend spec */
        char backend_reason[160];               /* why "auto" chose it, or "" */
        char driver_version[32];                /* Neuron driver version, or "" */
        unsigned n_devices;
        struct device_info *devices;
        size_t n_series;
        struct series_desc *series;
};

/* Values for one tick, parallel to the collector's inventory.series. */
struct sample_batch {
        size_t n;
        double *values;
        uint8_t *valid; /* 1 when values[i] was read this tick */
};

void inventory_free(struct inventory *inv);

/* Appends a series to the inventory; label values in the family's order,
 * as many as it has labels. Returns 0 or -ENOMEM. */
int inventory_add_series(struct inventory *inv, enum metric_id metric, const char *const *label_values);
