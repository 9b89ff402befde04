/* The collector interface: how the daemon gets samples from a backend.
 *
 * A collector is opened once, declares its inventory (devices, links, the
 * runtimes using its cores and the list of series it reports), and is then
 * read once per tick into a sample batch parallel to that series list.
 * Runtimes start and exit, and a collector that knows of them brings its
 * runtimes and series up to date in refresh() before each read (the series
 * of a runtime that exited are gone, never left stale). Devices and links
 * are fixed, but for a backend that can have none: sysfs opens without
 * devices when the driver lists none, and its refresh() takes them in
 * when they appear and forgets them when all are gone (backend_reason says
 * why there are none). Only the tick loop's thread sees the inventory
 * change; others read the copy in the snapshot's series set.
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

#include "lib/inventory.h"

struct collector_args {
        const char *options; /* the part of the backend spec after "name:", or NULL */
        char *err;           /* where open() may explain a failure, one line */
        size_t errlen;
};

struct collector;

struct collector_ops {
        const char *name;
        /* 0 when the backend has something to poll here, -ENODEV when not
         * (the reason in args->err), <0 on error. */
        int (*probe)(const struct collector_args *args);
        /* Opens the collector and fills its inventory. -EINVAL on bad options. */
        int (*open)(const struct collector_args *args, struct collector **ret);
        /* Brings inventory.runtimes, inventory.series and, for a backend
         * whose devices may come and go, inventory.devices and
         * backend_reason up to date as of now_ms, before read() at the same
         * time. Returns 1 when the inventory changed, 0 when not, <0 on
         * error (the inventory is then as before). NULL for a collector
         * whose series never change. */
        int (*refresh)(struct collector *c, int64_t now_ms);
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

/* Looks up a backend by its spec ("sysfs", "model:trn1.32xlarge,seed=3";
 * "auto" is sysfs), opens it and returns it. On failure writes a reason to
 * err. */
int collector_open_spec(const char *spec, struct collector **ret, char *err, size_t errlen);

void collector_close(struct collector *c);
