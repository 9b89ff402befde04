/* Prometheus text exposition (format 0.0.4) from the latest snapshot.
 *
 * expo_new() precomputes, once per inventory, each series' rendered name and
 * labels and the order that groups series by family, so that a scrape is one
 * pass of memcpy and number formatting. An expo is read-only after creation:
 * any number of threads may render with it at once. */
#pragma once

#include <stddef.h>

#include "collectors/collector.h"
#include "daemon/snapshot.h"
#include "web/buf.h"

#define EXPO_CONTENT_TYPE "text/plain; version=0.0.4; charset=utf-8"

struct expo;

/* What the exposition says about neurond itself. */
struct expo_self {
        const char *version;
        const char *backend;
        const char *instance_type;
        size_t n_collectors;
        const char *const *collector_names; /* parallel to snapshot->collector_up */
};

int expo_new(const struct series_desc *series, size_t n, struct expo **ret);
void expo_free(struct expo *e); /* NULL-safe */

/* Appends the exposition of snap (may be NULL before the first tick).
 * Series not valid in the snapshot are left out. */
void expo_render(const struct expo *e, const struct snapshot *snap, const struct expo_self *self, struct buf *out);

/* Appends a label value escaped for the text format (\\, \" and \n). */
void expo_escape_label_value(struct buf *out, const char *value);
