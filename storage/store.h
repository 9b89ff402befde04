/* The time-series store: every tick's samples in one SQLite file.
 *
 * Errors are negative errnos; SQLite codes are translated here:
 * -EIO for I/O and corruption, -ENOSPC for a full disk, -EROFS for a
 * read-only database, -ENOMEM, -EINVAL for bad arguments.
 *
 * Threading: store_register_series() and store_append() are called by one
 * thread (the tick loop); store_query_range() may be called from any number
 * of other threads at the same time (it uses its own connection). */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "collectors/collector.h"

#define STORE_MATCHERS_MAX 8
#define STORE_LABEL_VALUE_MAX 64

struct store;

/* Opens or creates the database at path (WAL mode). */
int store_open(const char *path, struct store **ret);
void store_close(struct store *s); /* NULL-safe */

/* Tells the store the series that store_append()'s arrays describe, in
 * order. Series seen in earlier runs keep their identity. */
int store_register_series(struct store *s, const struct series_desc *series, size_t n);

/* Stores one tick: values[i] for every registered series i with valid[i].
 * One transaction: the tick is stored whole or not at all. */
int store_append(struct store *s, int64_t timestamp_ms, const double *values, const uint8_t *valid, size_t n);

enum store_agg {
        STORE_AGG_AVG,
        STORE_AGG_MIN,
        STORE_AGG_MAX,
        STORE_AGG_LAST,
        STORE_AGG_SUM,
};

struct store_matcher {
        char name[SERIES_LABEL_VALUE_MAX];
        char value[STORE_LABEL_VALUE_MAX];
};

struct store_query {
        enum metric_id metric;
        int64_t start_ms, end_ms, step_ms; /* start <= end, step > 0 */
        enum store_agg agg;
        size_t n_matchers;
        struct store_matcher matchers[STORE_MATCHERS_MAX]; /* label equality, all must hold */
};

struct store_point {
        int64_t timestamp_ms; /* bucket start: a multiple of step_ms */
        double value;
};

struct store_series_result {
        struct series_desc desc;
        size_t n_points;
        struct store_point *points;
};

struct store_result {
        size_t n_series;
        struct store_series_result *series;
};

/* Reads the series of q->metric matching every matcher, one point per
 * step-aligned bucket in [start, end] that holds samples. */
int store_query_range(struct store *s, const struct store_query *q, struct store_result **ret);
void store_result_free(struct store_result *r); /* NULL-safe */
