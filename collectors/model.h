/* The device model: a deterministic simulation of Neuron hardware.
 *
 * Spec options: "<instance>[,scenario=<name>][,seed=<n>][,speed=<x>]
 * [,memory_categories=on][,fault=<fault>]...". Same seed, same options and
 * same tick timestamps give the same series. docs/metrics.md documents the
 * series and the fault syntax.
 *
 * Threading: read() runs on the tick loop's thread; model_fault_inject(),
 * model_fault_clear() and model_fault_list() may be called from any other
 * thread at the same time (they take the model's lock; read() applies what
 * they queued at its next call). */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "collectors/collector.h"

enum model_topology {
        TOPOLOGY_NONE,     /* single device */
        TOPOLOGY_RING,     /* devices in a ring, 2 neighbours */
        TOPOLOGY_TORUS_2D, /* torus_width x torus_height per server, 4 neighbours */
        TOPOLOGY_SWITCH,   /* all-to-all through NeuronSwitch */
};

/* One accelerator chip generation; every figure names its source. */
struct model_chip {
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

struct model_instance {
        const char *name;
        const struct model_chip *chip;
        unsigned devices;
        enum model_topology topology;
        unsigned torus_width, torus_height; /* TOPOLOGY_TORUS_2D, per server */
        unsigned servers;                   /* > 1: a ring joins same-position chips of the servers */
        double link_bandwidth;              /* per device inside a server, bytes/s; 0 without links */
        double cross_link_bandwidth;        /* per device between servers, bytes/s */
        unsigned host_vcpus;
        uint64_t host_memory_bytes;
};

extern const struct model_instance model_catalog[];
extern const size_t model_catalog_size;

/* Returns the catalog entry for an instance name, or NULL. */
const struct model_instance *model_catalog_find(const char *name);

/* "none", "ring", "2d-torus", "2d-torus+ring", "switch". */
const char *model_topology_name(const struct model_instance *inst);

/* Fills ret_peers (room for inst->devices entries) with the devices device d
 * has a NeuronLink path to, and returns how many. For TOPOLOGY_SWITCH that is
 * every other device. */
unsigned model_topology_peers(const struct model_instance *inst, unsigned d, unsigned *ret_peers);

/* ---- faults ---------------------------------------------------------- */

enum model_fault_kind {
        FAULT_DEVICE_DOWN, /* device:  the device disappears; back when the fault ends */
        FAULT_CORE_STUCK,  /* core:    0 % busy, memory stays allocated */
        FAULT_ECC,         /* device:  ECC events of one type */
        FAULT_LINK_DOWN,   /* device + peer: no traffic either way */
        FAULT_EXEC_ERRORS, /* core:    a burst of failed executions */
        FAULT__COUNT,
};

enum model_ecc_type { ECC_MEM_UNCORRECTED, ECC_MEM_REPAIRABLE_UNCORRECTED, ECC_SRAM_UNCORRECTED, ECC__COUNT };

/* The sysfs file names under stats/hardware/, used as event_type labels. */
extern const char *const model_ecc_names[ECC__COUNT];

#define MODEL_PEER_SWITCH UINT32_MAX
#define MODEL_FAULT_FOREVER INT64_MAX

struct model_fault {
        enum model_fault_kind kind;
        unsigned target; /* device or host-wide core index */
        unsigned peer;   /* FAULT_LINK_DOWN: peer device or MODEL_PEER_SWITCH */
        enum model_ecc_type ecc;
        double rate;         /* FAULT_EXEC_ERRORS: failures per second */
        int64_t start_ms;    /* after the model's first read (spec) or after injection (admin) */
        int64_t duration_ms; /* MODEL_FAULT_FOREVER: until cleared; 0: one ECC event */
};

/* Parses "<kind>:<target>[:<arg>][@<start>][+<duration>]" (docs/metrics.md).
 * Returns 0, or -EINVAL with a reason in err. Checks only the syntax; the
 * indexes are checked against an instance by model_fault_inject(). */
int model_fault_parse(const char *text, struct model_fault *ret, char *err, size_t errlen);

/* Writes a fault back in the syntax model_fault_parse() reads. */
void model_fault_format(const struct model_fault *f, char *out, size_t size);

/* True when c is a device model. */
bool model_is(const struct collector *c);

/* Queues a fault; it starts f->start_ms after the next read. Returns 0,
 * -EINVAL (index out of range for this instance, reason in err) or -ENOSPC
 * (too many faults at once). */
int model_fault_inject(struct collector *c, const struct model_fault *f, char *err, size_t errlen);

/* Ends every fault at the next read (devices come back, links carry traffic). */
void model_fault_clear(struct collector *c);

/* A fault as the model holds it: queued until the next read, then in force
 * from start_ms to end_ms (simulated Unix ms; INT64_MAX: until cleared). */
struct model_fault_status {
        struct model_fault fault;
        bool pending;
        int64_t start_ms, end_ms;
};

/* Copies up to max faults (queued first, then in force and not yet over)
 * into out. Returns how many there are in all. */
size_t model_fault_list(struct collector *c, struct model_fault_status *out, size_t max);

extern const struct collector_ops model_collector_ops;
