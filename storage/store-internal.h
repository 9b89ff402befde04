/* What store.c and query.c share; not part of the store's interface. */
#pragma once

#include <pthread.h>
#include <sqlite3.h>

#include "storage/rollup.h"
#include "storage/store.h"
#include "storage/tickbuf.h"

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

        /* The registered series and the ticks not yet in chunks. */
        struct tickbuf buf;
        int64_t rolled_ms; /* samples older than this are in the rollups */

        uint64_t ticks_seen, retry_at, backoff;
        int64_t last_retention_ms;

        pthread_mutex_t stats_lock; /* guards stats */
        struct history_stats stats;
};

/* One recent-table entry: the series id and the value, little endian. */
#define STORE_RECENT_ENTRY 12
