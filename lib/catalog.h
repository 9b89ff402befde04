/* The catalog of Neuron chips and the instances and UltraServers built from
 * them, with every figure's source, and their NeuronLink topologies. Both
 * backends read it: the model simulates an entry, the sysfs backend takes
 * a device's memory capacity from it (sysfs does not expose it).
 * Constant data and pure functions: safe from any thread. */
#pragma once

#include <stdbool.h>
#include <stdint.h>

enum catalog_topology {
        TOPOLOGY_NONE,     /* single device */
        TOPOLOGY_RING,     /* devices in a ring, 2 neighbours */
        TOPOLOGY_TORUS_2D, /* torus_width x torus_height per server, 4 neighbours */
        TOPOLOGY_SWITCH,   /* all-to-all through NeuronSwitch */
};

/* One accelerator chip generation; every figure names its source. */
struct catalog_chip {
        const char *family;       /* "Trainium" */
        const char *device_name;  /* sysfs info/architecture/device_name */
        const char *arch;         /* sysfs arch_type of the device */
        const char *core_arch;    /* arch_type of its NeuronCores */
        const char *core_version; /* "NeuronCore-v2" */
        const char *link_version; /* "NeuronLink-v2" */
        unsigned pci_device_id;   /* vendor 0x1d0f */
        unsigned cores;           /* physical NeuronCores per chip */
        uint64_t memory_bytes;    /* device memory capacity */
        const char *memory_kind;  /* "HBM" or "DDR4" */
        double memory_bandwidth;  /* bytes per second */
        double dma_bandwidth;     /* bytes per second, all engines */
        unsigned dma_engines;     /* per chip, including host-facing ones */
        double link_bandwidth;    /* NeuronLink bytes per second per device */
        double fp16_tflops;       /* dense FP16/BF16 */
        double mxfp8_tflops;      /* dense MXFP8; 0 when not published */
};

struct catalog_instance {
        const char *name;
        const struct catalog_chip *chip;
        unsigned devices;
        enum catalog_topology topology;
        unsigned torus_width, torus_height; /* TOPOLOGY_TORUS_2D, per server */
        unsigned servers;                   /* hosts of an UltraServer (> 1), devices / servers each; a
                                             * 2D torus also joins same-position chips of the servers in a ring */
        double link_bandwidth;              /* per device inside a server, bytes/s; 0 without links */
        double cross_link_bandwidth;        /* per device between servers, bytes/s */
        unsigned host_vcpus;
        uint64_t host_memory_bytes;
};

extern const struct catalog_instance catalog[];
extern const size_t catalog_size;

/* Physical NeuronCores per logical one by default: 2 on NeuronCore-v3 and
 * later (Trainium2, Trainium3), as the Neuron runtime and tools default to
 * (NEURON_LOGICAL_NC_CONFIG), else 1. */
unsigned catalog_default_lnc(const struct catalog_chip *chip);

/* Whether the chip's cores can be grouped lnc at a time: 1 always, 2 on
 * NeuronCore-v3 and later. */
bool catalog_lnc_supported(const struct catalog_chip *chip, unsigned lnc);

/* The chip whose sysfs device_name this is, or NULL. */
const struct catalog_chip *catalog_chip_by_device_name(const char *device_name);

/* Returns the catalog entry for an instance name, or NULL. */
const struct catalog_instance *catalog_find(const char *name);

/* "none", "ring", "2d-torus", "2d-torus+ring", "switch". */
const char *catalog_topology_name(const struct catalog_instance *inst);

/* Fills ret_peers (room for inst->devices entries) with the devices device d
 * has a NeuronLink path to, and returns how many. For TOPOLOGY_SWITCH that is
 * every other device. */
unsigned catalog_topology_peers(const struct catalog_instance *inst, unsigned d, unsigned *ret_peers);
