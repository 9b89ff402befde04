/* The collector interface: how the daemon gets samples from a backend.
 *
 * A collector is opened once, declares its inventory (devices, links and the
 * list of series it reports, fixed for its lifetime), and is then read once
 * per tick into a sample batch parallel to that series list.
 *
 * Collectors never log and never retry: they return a negative errno and the
 * daemon owns back-off and complaints. A value a collector cannot read is
 * marked invalid in the batch, never reported as zero.
 *
 * Threading: a collector is used by one thread at a time (the tick loop). */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "collectors/metric.h"

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

struct collector_args {
        const char *options; /* the part of the backend spec after "name:", or NULL */
        char *err;           /* where open() may explain a failure, one line */
        size_t errlen;
};

struct collector;

struct collector_ops {
        const char *name;
        /* 0 when the backend is usable here, -ENODEV when absent, <0 on error. */
        int (*probe)(const struct collector_args *args);
        /* Opens the collector and fills its inventory. -EINVAL on bad options. */
        int (*open)(const struct collector_args *args, struct collector **ret);
        /* Reads the values as of now_ms (Unix milliseconds, stamped by the
         * daemon once per tick) into out, which has inventory.n_series slots
         * with valid[] cleared. Bounded in time. */
        int (*read)(struct collector *c, int64_t now_ms, struct sample_batch *out);
        void (*close)(struct collector *c); /* NULL-safe */
};

/* Every collector implementation starts with this header. */
struct collector {
        const struct collector_ops *ops;
        struct inventory inv;
        /* Simulated seconds per wall-clock second: 1 for real hardware,
         * the model's speed= option otherwise. */
        double time_scale;
        /* Why the last read() lost series, one line ("neuron3/...: value went
         * backwards"), or "" when it lost none; for the daemon's debug log. */
        char reason[192];
};

void inventory_free(struct inventory *inv);

/* Appends a series to the inventory; label values in the family's order,
 * as many as it has labels. Returns 0 or -ENOMEM. */
int inventory_add_series(struct inventory *inv, enum metric_id metric, const char *const *label_values);

/* Looks up a backend by its spec ("model:trn1.32xlarge,seed=3", "auto"),
 * opens it and returns it. On failure writes a reason to err. */
int collector_open_spec(const char *spec, struct collector **ret, char *err, size_t errlen);

void collector_close(struct collector *c);

/* Reads up to size bytes of path (relative to dir_fd) into buf, retrying
 * EINTR. Returns 0 when the whole file fit, 1 when it is longer and only
 * its first size bytes were read, or a negative errno. */
int collector_read_file(int dir_fd, const char *path, char *buf, size_t size, size_t *ret_len);
