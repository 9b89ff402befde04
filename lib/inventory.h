/* The shared description of what a backend reports: its series (a metric
 * family and label values), its devices and links, the Neuron runtimes
 * using its cores and the instance it runs on (the inventory), and one
 * tick's values (a sample batch). The collectors fill them, the store keeps
 * them, the web side renders them.
 *
 * NeuronCores are numbered as the AWS tools number them: `neuroncore` is the
 * host-wide index of a logical NeuronCore, lnc physical cores each (LNC 2 on
 * Trainium2 and Trainium3 by default, else 1); device N's logical core k is
 * N * cores_per_device + k. Physical cores appear only as a breakdown. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "lib/metric.h"

/* Fits the driver's longest status name and runtime tags of 63 bytes
 * (longer tags are cut there). */
#define SERIES_LABEL_VALUE_MAX 64
#define INVENTORY_NAME_MAX 64

/* One time series: its family and the values of the family's labels; an
 * empty value is an absent label (lib/metric.h). */
struct series_desc {
        enum metric_id metric;
        char label_values[METRIC_LABELS_MAX][SERIES_LABEL_VALUE_MAX];
};

struct device_info {
        unsigned index;               /* neuron<N> */
        char name[32];                /* sysfs device_name, e.g. "Trainium1" */
        char arch[8];                 /* sysfs arch_type of the device, e.g. "NDv2" */
        char core_arch[8];            /* NeuronCore arch, e.g. "NCv2" */
        unsigned core_count;          /* logical NeuronCores */
        unsigned physical_core_count; /* physical NeuronCores: core_count * lnc */
        unsigned first_core;          /* host-wide logical index of the device's core 0 */
        uint64_t memory_bytes;        /* HBM capacity; 0 when unknown */
        char serial[24];              /* sysfs serial_number, or "" when unknown */
        unsigned n_peers;
        unsigned *peers;      /* device indexes this device links to */
        unsigned *peer_nodes; /* [n_peers] the UltraServer node of each peer (peers index
                               * that node's devices), or NULL: all on this host */
};

/* The UltraServer this host is one node of, as the Neuron driver's
 * /sys/class/neuron_device/{server_id_N,node_id_N} give it, or as the
 * device model makes one up. nodes == 0: not part of an UltraServer. */
struct ultraserver_identity {
        char id[24];     /* the UltraServer's serial: 16 hex digits */
        unsigned node;   /* this host's node id, 0 .. nodes - 1 */
        unsigned nodes;  /* hosts in the UltraServer */
        unsigned modes;  /* the driver's ultraserver_mode: bit m for mode m (1-4); 0 unknown */
        char error[160]; /* why the driver's files could not be read, "" when none */
};

/* The EC2 instance, as its instance metadata (IMDS) describes it, or as
 * the device model makes one up. Empty strings are unknown. */
struct instance_identity {
        char instance_id[32]; /* "i-0123456789abcdef0" */
        char instance_type[INVENTORY_NAME_MAX];
        char instance_name[128];    /* the Name tag, when instance tags are in the metadata */
        char availability_zone[32]; /* "us-east-2b" */
        char availability_zone_id[32];
        char region[32];
        char subnet_id[48];
        char ami_id[32];
        char error[160]; /* why the identity is unknown or partial, "" when none */
};

/* A Neuron runtime: a process that loaded models on NeuronCores. */
struct runtime_info {
        uint32_t pid;
        char tag[SERIES_LABEL_VALUE_MAX]; /* NEURON_PROCESS_TAG, or the pid when it has none */
        unsigned n_cores;
        unsigned *cores; /* the logical NeuronCores it holds, ascending */
};

struct inventory {
        char instance_type[INVENTORY_NAME_MAX]; /* "trn1.32xlarge", or "" when unknown */
        char backend[INVENTORY_NAME_MAX];       /* the resolved backend spec */
        char backend_reason[160];               /* why the backend has no devices, or "" */
        char driver_version[32];                /* Neuron driver version, or "" */
        unsigned lnc;                           /* physical NeuronCores per logical one; 0: no devices */
        struct instance_identity identity;
        struct ultraserver_identity ultraserver;
        unsigned n_devices;
        struct device_info *devices;
        /* The runtimes running now; a backend that knows of none has none. */
        size_t n_runtimes;
        struct runtime_info *runtimes;
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

/* Orders series by family, then label values: 0 for the same series. */
int series_desc_cmp(const struct series_desc *a, const struct series_desc *b);

/* Copies what src says of the hardware into dst: its devices (with their
 * peers), identity, UltraServer and the strings and lnc above, but no
 * series or runtimes. Returns 0 or -ENOMEM (dst then empty). dst is freed
 * with inventory_free(). */
int inventory_copy_hardware(struct inventory *dst, const struct inventory *src);

/* Appends a series to the inventory; label values in the family's order,
 * as many as it has labels (NULL is an empty value). Returns 0 or -ENOMEM. */
int inventory_add_series(struct inventory *inv, enum metric_id metric, const char *const *label_values);

/* Drops every series, to build the list anew. */
void inventory_clear_series(struct inventory *inv);

/* Appends a runtime holding n_cores cores (copied). Returns 0 or -ENOMEM. */
int inventory_add_runtime(struct inventory *inv, uint32_t pid, const char *tag, const unsigned *cores,
                          unsigned n_cores);

/* Drops every runtime. */
void inventory_clear_runtimes(struct inventory *inv);

/* Copies n runtimes with their core lists into a new array (NULL and 0
 * for none). Returns 0 or -ENOMEM. */
int runtime_info_copy(const struct runtime_info *src, size_t n, struct runtime_info **ret);

/* Frees n runtimes' core lists and the array; NULL-safe. */
void runtime_info_free(struct runtime_info *r, size_t n);

/* The runtime holding logical core `core`, or NULL. */
const struct runtime_info *runtime_info_find_core(const struct runtime_info *r, size_t n, unsigned core);
