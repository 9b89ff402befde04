/* The latest tick's values, shared between the tick loop (one writer) and
 * the HTTP threads (many readers). The loop builds a new snapshot each tick
 * and publishes it with one pointer swap under a mutex; readers take a
 * reference, so a scrape never sees half a tick and never blocks a tick for
 * longer than the swap. */
#pragma once

#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "lib/health.h"
#include "lib/inventory.h"

#define SNAPSHOT_COLLECTORS_MAX 4

/* The series a snapshot's values belong to, every collector's in order,
 * with the runtimes they name and the devices of the accelerator backend.
 * The list changes only when a backend's inventory does (a runtime starts
 * or exits, the driver's devices appear or go): each change is a new set
 * with the next generation, shared by every snapshot taken until the
 * next. Immutable once made; freed with its last reference. The HTTP
 * threads read devices from here, never from the backend's own inventory,
 * which the tick loop changes. */
struct series_set {
        atomic_int refs;
        uint64_t generation; /* 1 for the first set, one more per change */
        size_t n;
        struct series_desc *series;
        size_t n_runtimes;
        struct runtime_info *runtimes;
        /* The accelerator backend as the set was made: devices, instance,
         * driver and why it has no devices (inventory_copy_hardware(); its
         * series and runtimes are the fields above). */
        struct inventory backend;
};

/* Copies series, and backend's hardware and runtimes (NULL: none), into a
 * new set with one reference. */
struct series_set *series_set_new(uint64_t generation, const struct series_desc *series, size_t n,
                                  const struct inventory *backend);
/* Returns a new reference (NULL-safe). */
struct series_set *series_set_ref(struct series_set *s);
void series_set_unref(struct series_set *s); /* NULL-safe */

struct snapshot {
        int64_t timestamp_ms;   /* the tick's stamp, Unix milliseconds */
        int64_t monotonic_ms;   /* CLOCK_MONOTONIC when the tick was taken */
        uint64_t tick;          /* ticks since start, from 1 */
        double poll_seconds;    /* wall time the collectors took */
        uint64_t overruns;      /* intervals skipped since start because a tick ran late */
        struct series_set *set; /* what values[i] is; a reference, NULL only in tests that need none */
        size_t n;               /* series, parallel to set->series */
        double *values;
        uint8_t *valid;
        uint8_t collector_up[SNAPSHOT_COLLECTORS_MAX];
        struct health_result *health; /* the devices' health as of this tick (lib/health.h), or NULL */
        atomic_int refs;
};

struct snapshot *snapshot_new(size_t n);
/* Returns a new reference (NULL-safe). */
struct snapshot *snapshot_ref(struct snapshot *s);
void snapshot_unref(struct snapshot *s); /* NULL-safe; drops its set's reference too */

struct snapshot_slot {
        pthread_mutex_t lock;
        struct snapshot *latest; /* NULL before the first tick */
};

void snapshot_slot_init(struct snapshot_slot *slot);
void snapshot_slot_destroy(struct snapshot_slot *slot);
/* Takes ownership of s and drops the reference to the previous one. */
void snapshot_slot_publish(struct snapshot_slot *slot, struct snapshot *s);
/* Returns a new reference to the latest snapshot, or NULL before the first tick. */
struct snapshot *snapshot_slot_get(struct snapshot_slot *slot);
