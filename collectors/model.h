/* The device model: a deterministic simulation of Neuron hardware.
 *
 * Spec options: "<instance>[,scenario=<name>][,seed=<n>][,speed=<x>]".
 * Same seed and same tick timestamps give the same series. */
#pragma once

#include <stdint.h>

#include "collectors/collector.h"

enum model_topology {
        TOPOLOGY_NONE,    /* single device */
        TOPOLOGY_TORUS_2D, /* torus_width x torus_height, 4 neighbours */
};

/* One accelerator chip generation; every figure names its source. */
struct model_chip {
        const char *family;      /* "Trainium" */
        const char *device_name; /* sysfs info/architecture/device_name */
        const char *arch;        /* sysfs arch_type of the device */
        const char *core_arch;   /* arch_type of its NeuronCores */
        unsigned cores;          /* physical NeuronCores per chip */
        uint64_t memory_bytes;   /* device memory capacity */
        double memory_bandwidth; /* bytes per second */
        double dma_bandwidth;    /* bytes per second, all engines */
        double link_bandwidth;   /* NeuronLink bytes per second per device */
};

struct model_instance {
        const char *name;
        const struct model_chip *chip;
        unsigned devices;
        enum model_topology topology;
        unsigned torus_width, torus_height;
};

extern const struct model_instance model_catalog[];
extern const size_t model_catalog_size;

/* Returns the catalog entry for an instance name, or NULL. */
const struct model_instance *model_catalog_find(const char *name);

extern const struct collector_ops model_collector_ops;
