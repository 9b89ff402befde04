/* Fault injection at run time, as the admin endpoint drives it: an ops
 * table that a backend able to simulate faults implements (the model's
 * model_fault_ops), so that the web layer needs no collector code. Faults
 * are exchanged as text in the backend's spec syntax (docs/metrics.md).
 *
 * Threading: every operation may be called from any thread while the
 * backend is read (the backend takes its own lock). */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define FAULT_SPEC_MAX 128

/* A fault as the backend holds it: queued until its next read, then in
 * force from start_ms to end_ms (simulated Unix ms; INT64_MAX: until
 * cleared). */
struct fault_entry {
        char spec[FAULT_SPEC_MAX]; /* canonical spelling */
        bool pending;
        int64_t start_ms, end_ms;
};

struct fault_ops {
        /* Parses spec and queues the fault; writes its canonical spelling to
         * canonical. Returns 0, -EINVAL with a reason in err (bad syntax, an
         * index out of range) or -ENOSPC (too many faults at once). */
        int (*inject)(void *impl, const char *spec, char *canonical, size_t canonical_size, char *err, size_t errlen);
        /* Ends every fault at the next read. */
        void (*clear)(void *impl);
        /* Copies up to max faults (queued first, then those in force) into
         * out; returns how many there are in all. */
        size_t (*list)(void *impl, struct fault_entry *out, size_t max);
};

struct fault_control {
        const struct fault_ops *ops; /* NULL: the backend cannot simulate faults */
        void *impl;
};
