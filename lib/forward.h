/* What forwarding the stored samples to other systems (remote write)
 * reports about itself, per endpoint, behind an ops table so that the web
 * side can render it without depending on the forwarding code.
 *
 * Threading: get() may be called from any thread at any time. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "lib/cursor.h"

struct forward_stats {
        char endpoint[CURSOR_NAME_MAX];
        uint64_t samples_sent;   /* taken by the receiver (2xx) */
        uint64_t samples_failed; /* refused for good (4xx other than 429), or past the age limit */
        uint64_t retries;        /* requests sent again after a network error, a 5xx or a 429 */
        uint64_t pending;        /* stored samples not sent yet, as last counted */
        double behind_seconds;   /* newest stored sample's time minus the newest sent one's; 0 when caught up */
        int last_status;         /* the last response's HTTP status, 0 before the first or after a network error */
};

struct forward_ops {
        size_t (*count)(void *impl); /* endpoints */
        void (*get)(void *impl, size_t i, struct forward_stats *ret);
};

struct forward {
        const struct forward_ops *ops; /* NULL: no endpoints */
        void *impl;
};
