/* Stored history as the HTTP side asks for it: range queries, the list of
 * stored series and the health of the store, behind an ops table so that
 * the web layer needs no storage code (storage/store.h implements it as
 * store_history_ops; tests may fake it).
 *
 * Threading: every operation may be called from any number of threads at
 * once. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "lib/health.h"
#include "lib/inventory.h"

#define HISTORY_MATCHERS_MAX 8
#define HISTORY_LABEL_VALUE_MAX 64
/* Points one range query may return over all its series (about 100 MB of
 * JSON), whatever the settings: bounds the memory a single request can
 * take. Room for every core of the largest UltraServer at 1,000 points
 * (1,152,000); the HTTP default (max_query_points) is lower. */
#define HISTORY_POINTS_MAX 2000000

enum history_agg {
        HISTORY_AGG_AVG,
        HISTORY_AGG_MIN,
        HISTORY_AGG_MAX,
        HISTORY_AGG_LAST,
        HISTORY_AGG_SUM,
};

struct history_matcher {
        char name[SERIES_LABEL_VALUE_MAX];
        char value[HISTORY_LABEL_VALUE_MAX];
};

struct history_query {
        enum metric_id metric;
        int64_t start_ms, end_ms, step_ms; /* start <= end, step > 0 */
        enum history_agg agg;
        bool rate; /* per-second rate of a counter, resets handled, before agg */
        size_t n_matchers;
        struct history_matcher matchers[HISTORY_MATCHERS_MAX]; /* label equality, all must hold */
        /* Asked between series (may be NULL): true makes the query give up
         * with -ECANCELED, because its client has gone or the server stops. */
        bool (*cancelled)(const void *cancel_cls);
        const void *cancel_cls;
};

struct history_point {
        int64_t timestamp_ms; /* bucket start: a multiple of step_ms */
        double value;
};

struct history_series {
        struct series_desc desc;
        size_t n_points;
        struct history_point *points;
};

struct history_result {
        size_t n_series;
        struct history_series *series;
};

void history_result_free(struct history_result *r); /* NULL-safe */

struct history_stats {
        bool degraded;              /* the latest write attempt failed */
        bool unopened;              /* no database open yet */
        int last_error;             /* its negative errno, or 0 */
        uint64_t write_errors;      /* failed write attempts since open */
        uint64_t ticks_dropped;     /* ticks lost because memory filled while degraded */
        int64_t newest_ms;          /* newest tick stored or buffered, 0 when none */
        unsigned damaged_set_aside; /* damaged files set aside (at open or while running) */
        int64_t used_bytes;         /* pages in use, as of the latest chunk flush; 0 before it */
        /* Series of the registered list that are not stored, degrading
         * storage while they last: each copy of a series that appears more
         * than once (either copy's value would be a guess), and series
         * beyond the store's series limit. */
        size_t series_duplicated, series_over_limit;
        uint64_t series_refused;    /* new series refused at the limit since open */
        uint64_t samples_set_aside; /* samples of the open minute that could not be closed out at open */
        /* The retention per tier and the size cap in force (0: no cap). */
        int64_t raw_retention_ms, minute_retention_ms, hour_retention_ms;
        uint64_t size_cap_bytes;
};

/* Which stored health events (lib/health.h) to read: those stamped in
 * [start_ms, end_ms], of one device, kind and severity where those are
 * >= 0, oldest first, at most limit of them (the newest such). */
struct history_events_query {
        int64_t start_ms, end_ms;
        int device, kind, severity;
        size_t limit;
};

struct history_ops {
        /* Reads the series of q->metric matching every matcher, one point per
         * step-aligned bucket that holds samples stamped in [start, end]
         * (from rollups: whole periods, those that start in [start, end];
         * docs/api.md). Returns 0,
         * -EINVAL when rate is asked of a gauge or for a bad window, -E2BIG
         * when the matching series times the buckets exceed
         * HISTORY_POINTS_MAX, -EAGAIN when no database is open yet,
         * -ECANCELED when q->cancelled said so, or another negative errno
         * when reading fails. */
        int (*query_range)(void *impl, const struct history_query *q, struct history_result **ret);
        /* Every stored series (metric < 0) or those of one family, filtered
         * by the matchers, ordered by id; *ret is free()d by the caller. */
        int (*list_series)(void *impl, int metric, const struct history_matcher *matchers, size_t n_matchers,
                           struct series_desc **ret, size_t *ret_n);
        /* A consistent copy of the store's health and limits. */
        void (*get_stats)(void *impl, struct history_stats *ret);
        /* Stored health events; *ret is free()d by the caller. Errors as
         * query_range's. NULL: the history keeps no events. */
        int (*query_events)(void *impl, const struct history_events_query *q, struct health_event **ret, size_t *ret_n);
};

struct history {
        const struct history_ops *ops;
        void *impl;
};
