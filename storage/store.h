/* The time-series store: every tick's samples in one SQLite file, in three
 * tiers: raw samples as compressed chunks (storage/chunk.h), and 1-minute
 * and 1-hour rollup rows. docs/storage.md describes the schema.
 *
 * Durability: every stored tick is committed to the WAL before
 * store_append() returns, so a crash loses at most the tick in flight.
 *
 * Errors are negative errnos; SQLite codes are translated here:
 * -EIO for I/O and corruption, -ENOSPC for a full disk, -EROFS for a
 * read-only database, -ENOMEM, -EINVAL for bad arguments, -EUCLEAN for a
 * damaged database file, -EAGAIN when no database is open yet (see
 * store_open_deferred()). Opening passes open(2)'s errno on: -ENOENT,
 * -EACCES, -EROFS, -ENOSPC ...
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
/* Points one range query may return over all its series (about 50 MB of
 * JSON): bounds the memory a single request can take. */
#define STORE_QUERY_POINTS_MAX 1000000

#define STORE_SCHEMA_VERSION 2

struct store;

struct store_options {
        int64_t raw_retention_ms;    /* default 48 h */
        int64_t minute_retention_ms; /* default 30 d */
        int64_t hour_retention_ms;   /* default 365 d */
        uint64_t size_cap_bytes;     /* default 1 GiB; 0 for no cap */
        int64_t chunk_ms;            /* raw chunk span, a multiple of 1 min; default 5 min */
};

/* Fills o with the defaults above. */
void store_options_init(struct store_options *o);

/* Opens or creates the database at path (WAL mode) with default options,
 * migrating a schema 1 database. -EPROTONOSUPPORT when a newer neurond wrote
 * it, -EUCLEAN when PRAGMA quick_check fails or the file is not a database. */
int store_open(const char *path, struct store **ret);
int store_open_with(const char *path, const struct store_options *o, struct store **ret);

/* store_open_with(), and when the file is damaged (-EUCLEAN): renames it
 * and its -wal and -shm files to PATH.damaged-<unix time>[-wal|-shm],
 * writes that name to aside (kept when opening the new database then
 * fails), and opens a new database. Returns 1 when a damaged file was set
 * aside, 0 when not, or a negative errno. */
int store_open_or_set_aside(const char *path, const struct store_options *o, struct store **ret, char *aside,
                            size_t aside_len);

/* A store whose database could not be opened (error, a negative errno):
 * it starts degraded and behaves as one that cannot write. Ticks wait in
 * memory with the same bound, and at each retry store_append() opens the
 * database as store_open_or_set_aside() does (setting a damaged file
 * aside), enters the registered series and writes the ticks. Until then
 * queries fail with -EAGAIN. */
int store_open_deferred(const char *path, const struct store_options *o, int error, struct store **ret);

/* Writes what is buffered (for a deferred store: after one more attempt to
 * open the database), then closes. */
void store_close(struct store *s); /* NULL-safe */

/* Tells the store the series that store_append()'s arrays describe, in
 * order. Series seen in earlier runs keep their identity. */
int store_register_series(struct store *s, const struct series_desc *series, size_t n);

/* Stores one tick: values[i] for every registered series i with valid[i];
 * timestamps must increase. One transaction: the tick is stored whole or not
 * at all. When the database cannot be written (full disk, read-only file)
 * the tick is kept in memory (a bounded number of ticks, oldest dropped
 * first), the error is returned and writes are retried with back-off on
 * later calls; the store is "degraded" until a write succeeds. */
int store_append(struct store *s, int64_t timestamp_ms, const double *values, const uint8_t *valid, size_t n);

/* Whether store_append() of a tick at timestamp_ms will roll up samples of
 * minutes that have ended (when the write happens): lets the loop say in
 * its debug log when a rollup starts and how long it took. Same thread as
 * store_append(). */
bool store_rollup_due(const struct store *s, int64_t timestamp_ms);

struct store_stats {
        bool degraded;                /* the latest write attempt failed */
        bool unopened;                /* no database open yet (store_open_deferred()) */
        int last_error;               /* its negative errno, or 0 */
        uint64_t write_errors;        /* failed write attempts since open */
        uint64_t ticks_dropped;       /* ticks lost because memory filled while degraded */
        int64_t newest_ms;            /* newest tick stored or buffered, 0 when none */
        unsigned damaged_set_aside;   /* 1 when open found the file damaged */
        int64_t used_bytes;           /* pages in use, as of the latest chunk flush; 0 before it */
        struct store_options options; /* retention and size cap in force */
};

/* A consistent copy of the counters; callable from any thread. */
void store_get_stats(struct store *s, struct store_stats *ret);

/* Caps the file at max_pages pages (SQLite's max_page_count; 0 restores
 * the default). Writes beyond fail as on a full disk: for tests. */
int store_set_page_limit(struct store *s, int64_t max_pages);

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
        bool rate; /* per-second rate of a counter, resets handled, before agg */
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
 * step-aligned bucket in [start, end] that holds samples. The tier: among
 * those whose retention reaches back to start, the coarsest rollup whose
 * resolution divides the step, else raw, else the coarsest rollup no
 * coarser than the step. Rollup tiers hold complete minutes only, so they
 * lag by up to a minute. -EINVAL when rate is asked of a gauge or for a
 * bad window; -E2BIG when the matching series times the buckets exceed
 * STORE_QUERY_POINTS_MAX. */
int store_query_range(struct store *s, const struct store_query *q, struct store_result **ret);
void store_result_free(struct store_result *r); /* NULL-safe */

/* Every stored series (metric < 0) or those of one family, filtered by the
 * matchers, ordered by id. Series of families this build does not know are
 * left out. */
int store_list_series(struct store *s, int metric, const struct store_matcher *matchers, size_t n_matchers,
                      struct series_desc **ret, size_t *ret_n);
