/* The device model: a deterministic simulation of Neuron hardware.
 *
 * Spec options: "<instance>[,node=<k>][,scenario=<name>][,seed=<n>]
 * [,speed=<x>][,lnc=1|2][,memory_categories=on][,fault=<fault>]...". Same
 * seed, same options and same tick timestamps give the same series;
 * node=K is host K of an UltraServer, and the nodes' daemons of one seed
 * agree on the traffic between them (docs/metrics.md). docs/metrics.md
 * documents the series, the runtimes each scenario runs and the fault
 * syntax. The runtimes alive at a time are a function of it: refresh()
 * lists them (and their series) before each read.
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
#include "lib/catalog.h"
#include "lib/driver.h"
#include "lib/faults.h"

/* ---- faults ---------------------------------------------------------- */

enum model_fault_kind {
        FAULT_DEVICE_DOWN, /* device:  the device disappears; back when the fault ends */
        FAULT_CORE_STUCK,  /* core:    0 % busy, memory stays allocated (cores: logical indexes) */
        FAULT_ECC,         /* device:  ECC events of one type */
        FAULT_LINK_DOWN,   /* device + peer: no traffic either way */
        FAULT_EXEC_ERRORS, /* core:    a burst of failed executions */
        FAULT_HBM_FULL,    /* device:  its cores' memory held up to a share of their part */
        FAULT__COUNT,
};

#define MODEL_PEER_SWITCH UINT32_MAX
#define MODEL_FAULT_FOREVER INT64_MAX

struct model_fault {
        enum model_fault_kind kind;
        unsigned target;     /* device or host-wide core index */
        unsigned peer;       /* FAULT_LINK_DOWN: peer device or MODEL_PEER_SWITCH */
        unsigned ecc;        /* FAULT_ECC: the event type, an index of the model's ECC names */
        double rate;         /* FAULT_EXEC_ERRORS: failures per second; FAULT_ECC: events per second;
                                FAULT_HBM_FULL: the share of memory held */
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

/* The faults above as lib/faults.h's interface; impl is the model's
 * struct collector. */
extern const struct fault_ops model_fault_ops;

extern const struct collector_ops model_collector_ops;
