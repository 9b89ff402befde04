/* What store.c and query.c share; not part of the store's interface. */
#pragma once

#include <pthread.h>
#include <sqlite3.h>

#include "storage/rollup.h"
#include "storage/store.h"

#define STORE_MINUTE_MS 60000
#define STORE_HOUR_MS 3600000

struct store {
        struct store_options opt;
        char *path;
        sqlite3 *db;      /* the tick loop's connection */
        sqlite3 *read_db; /* queries' connection, serialised by read_lock */
        pthread_mutex_t read_lock;
        /* The tick loop's statements, prepared once. */
        sqlite3_stmt *st_recent, *st_chunk, *st_merge[2];

        /* Registered series, and their order sorted by series id (the order
         * of entries in a recent row). The descriptions are kept for a
         * database opened late (store_open_deferred()). */
        size_t n_series;
        struct series_desc *series;
        int64_t *series_ids;
        uint32_t *by_id;
        uint8_t *is_gauge; /* [i]: kept to 24 significant bits */

        /* Ticks not yet in chunks, oldest first: tick_ts[t], and
         * values/valid[t * n_series + i]. The first n_durable are in the
         * recent table. */
        size_t n_ticks, cap_ticks, n_durable;
        int64_t *tick_ts;
        double *values;
        uint8_t *valid;
        int64_t rolled_ms; /* samples older than this are in the rollups */

        uint64_t ticks_seen, retry_at, backoff;
        int64_t last_retention_ms;

        pthread_mutex_t stats_lock; /* guards stats */
        struct history_stats stats;
};

/* One recent-table entry: the series id and the value, little endian. */
#define STORE_RECENT_ENTRY 12
