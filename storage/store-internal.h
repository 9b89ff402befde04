/* What the store's files share; not part of the store's interface.
 *
 *   store.c            the interface: open, close, register, append, stats
 *   store-open.c       connecting: the lock, file checks, a damaged file set aside
 *   store-check.c      the scheduled integrity check, on a thread of its own
 *   store-schema.c     the tables
 *   store-migrate.c    migration from older schemas
 *   store-write.c      the tick path: recent rows, head chunks, series
 *   store-compact.c    an hour's head chunks merged into one, and its rollups
 *   store-derived.c    hourly chunks coded against other series' (storage/derive.h)
 *   store-data.c       hourly chunks' bytes, packed into rows of a page
 *   store-retention.c  age limits per tier and the size cap
 *   query.c            range queries and the series list
 *   store-cursor.c     stored samples in order for forwarders, their saved positions
 *   store-events.c     health events: queued, written with the ticks, read back
 *
 * Every function here runs on the tick loop's thread and its connection
 * (s->db), except where query.c and store-check.c say otherwise. */
#pragma once

#include <pthread.h>
#include <sqlite3.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "lib/cursor.h"
#include "storage/rollup.h"
#include "storage/store.h"
#include "storage/tickbuf.h"

#define STORE_MINUTE_MS 60000
#define STORE_HOUR_MS 3600000

/* Samples per head chunk at most (a minute at 0.5 s intervals): the open
 * chunk's ticks stay in memory. Ticks kept in memory at most while the
 * database cannot be written. */
#define CHUNK_TICKS_MAX 120
#define BUFFER_TICKS_MAX 640

/* The key of a minute rollup row: series_id * 2^24 + the hour's number
 * since 1970, in SQL (?1 the series id, ?2 a time in the hour). */
#define STORE_MINUTES_KEY(series, ts) "(" series " * 16777216 + " ts " / 3600000)"

static inline int64_t store_hour_of(int64_t ts) {
        return ts - ((ts % STORE_HOUR_MS) + STORE_HOUR_MS) % STORE_HOUR_MS;
}

/* The series rows as queries need them, loaded once per change of the
 * series table (s->series_generation); guarded by read_lock. */
struct series_cache {
        uint64_t generation;
        size_t n;
        int64_t *ids; /* ascending */
        struct series_desc *descs;
};

/* A forwarder's position saved through store_cursor_ops, and whether the
 * database has it yet. */
struct store_position {
        char name[CURSOR_NAME_MAX];
        struct cursor_position pos;
        bool dirty;
};

/* Positions written at most per tick (more wait for the next). */
#define STORE_POSITIONS_FLUSHED 64

struct store {
        struct store_options opt;
        char *path;
        int lock_fd;      /* PATH.lock, flock()ed; -1 until the first connect */
        sqlite3 *db;      /* the tick loop's connection */
        sqlite3 *read_db; /* queries' connection, serialised by read_lock */
        pthread_mutex_t read_lock;
        struct series_cache cache;
        atomic_uint_fast64_t series_generation; /* bumped when series rows change */
        /* The tick loop's statements, prepared once. */
        sqlite3_stmt *st_recent, *st_head, *st_pending;

        /* The registered series and the ticks not yet in head chunks. */
        struct tickbuf buf;
        /* Compaction in progress: the hour, and the next series in it: a
         * rank (store_compact_order_sql()) and an id. */
        int64_t compact_hour, compact_next_rank, compact_next_id;

        uint64_t ticks_seen, retry_at, backoff;
        int64_t last_retention_ms;

        pthread_mutex_t stats_lock; /* guards stats, generation and damaged */
        struct history_stats stats;

        /* Damage found at run time. Each connect and each file set aside
         * starts a generation; a
         * statement or the check that finds the file damaged notes the
         * generation it read (store_note_damage()), and the tick loop
         * sets that file aside at its next write (store_append()). */
        uint64_t generation; /* of the file at the path; 0 before the first connect */
        bool damaged;        /* the current generation's file is damaged */
        char aside[4200];    /* the name of the file set aside last */

        /* Forwarders' positions (store-cursor.c): saved by their threads,
         * written by the tick loop after each tick. */
        pthread_mutex_t positions_lock;
        struct store_position *positions;
        size_t n_positions;

        /* Health events not written yet (store-events.c), the tick loop's. */
        struct health_event *events;
        size_t n_events;

        /* The scheduled check (store-check.c); check_db is the connection
         * it reads with, NULL between checks. */
        pthread_t check_thread;
        bool check_started, check_stop;
        pthread_mutex_t check_lock; /* guards check_stop and check_db */
        pthread_cond_t check_wake;
        sqlite3 *check_db;
};

/* ---- store-open.c ---- */

/* Takes the database's lock first (once: it is kept until store_close()),
 * then opens both connections, checks the file, brings the schema up to
 * date and prepares the tick loop's statements; on failure the store is
 * left without connections, to be tried again. */
int store_db_connect(struct store *s);

/* Lets go of the lock, leaving PATH.lock empty: a pid in it names a holder. */
void store_unlock(struct store *s);

/* store_db_connect(), and when the file is damaged, or damaged is true
 * (found so while connected, and disconnected since), sets it aside (see
 * store_open_or_set_aside(); its new name in s->aside) and connects to a
 * new one, which holds none of the ticks in memory: 1 then. */
int store_db_connect_or_set_aside(struct store *s, bool damaged);

/* Any thread: the file of that generation is damaged (-EUCLEAN from a
 * statement or the check). Sets the degraded state unless the file was
 * set aside since. */
void store_note_damage(struct store *s, uint64_t generation);

/* Any thread: the generation of the database connected now. */
uint64_t store_generation(struct store *s);

/* ---- store-check.c ---- */

/* Starts the thread that checks the file every opt.check_interval_ms, when
 * that is not 0; store_check_stop() ends it (interrupting a check that
 * runs) and is a no-op when none was started. */
int store_check_start(struct store *s);
void store_check_stop(struct store *s);

/* Closes both connections and the prepared statements. */
void store_db_disconnect(struct store *s);

/* ---- store-schema.c ---- */

/* Creates the tables or migrates them to STORE_SCHEMA_VERSION, and moves
 * what a previous run left in recent into head chunks. -EPROTONOSUPPORT
 * for a newer schema. */
int store_schema_setup(struct store *s);

/* Prepares the tick loop's statements: recent rows, head chunks, pending
 * hours. */
int store_prepare_writers(struct store *s);

/* ---- store-migrate.c ---- */

/* Converts schema 1 (a row per sample) or 2 (5-minute chunks, rollup rows)
 * to the current tables, inside the caller's transaction. */
int store_migrate_from_1(struct store *s);
int store_migrate_from_2(struct store *s);
/* Moves schema 3's and 4's hourly chunks (chunks_4) into chunk_data. */
int store_migrate_from_4(struct store *s);

/* ---- store-write.c ---- */

/* Writes samples (ts ascending) of one series as head chunks, split at
 * chunk span boundaries and at CHUNK_TICKS_MAX samples, and marks their
 * hours pending. */
int store_write_head(struct store *s, int64_t series_id, const int64_t *ts, const double *v, size_t n);

/* Moves every sample of the recent table into head chunks, inside the
 * caller's transaction. */
int store_close_out_recent(struct store *s);

/* Enters b's series into the series table (one transaction), writing
 * their ids and their order by id to b. */
int store_write_series(struct store *s, struct tickbuf *b);

/* Writes what the buffer holds and the database lacks, in one transaction. */
int store_sync_ticks(struct store *s);

/* ---- store-compact.c ---- */

/* The statement store_put_chunk() binds: a head chunk row. */
#define STORE_PUT_HEAD                                                                                                 \
        "INSERT OR REPLACE INTO head(series_id, start_ts, data, end_ts, count) VALUES (?1, ?2, ?3, ?5, ?6)"

/* Binds and runs STORE_PUT_HEAD: the series, the first sample's time, the
 * encoded samples, their first and last times and their number. */
int store_put_chunk(sqlite3_stmt *st, int64_t series_id, int64_t key, const uint8_t *data, size_t size, int64_t first,
                    int64_t last, size_t count);

/* Writes one hour's minute rollups (n non-empty cells starting at ts[])
 * as a row of rollup_1m with STORE_PUT_MINUTES. */
#define STORE_PUT_MINUTES                                                                                              \
        "INSERT OR REPLACE INTO rollup_1m(key, series_id, hour, data, minutes, count) "                                \
        "VALUES (" STORE_MINUTES_KEY("?1", "?2") ", ?1, ?2, ?3, ?4, ?5)"
int store_put_minutes(sqlite3_stmt *st, int64_t series_id, int64_t hour, const int64_t *ts,
                      const struct rollup_cell *cells, size_t n);

/* Puts samples in time order, keeping the later one of any timestamp seen
 * twice (the clock was set back); *n shrinks by the duplicates. */
int store_sort_samples(int64_t *ts, double *v, size_t *n);

/* Compacts series of pending hours that ended before before_ms until about
 * budget samples were merged: each series' chunks of the hour become one,
 * its 1-minute and 1-hour rollups are computed from them, and the hour
 * stops being pending once every series is done. Inside the caller's
 * transaction; *ret_more (may be NULL) tells whether work remains. */
int store_compact(struct store *s, int64_t before_ms, size_t budget, bool *ret_more);

/* ---- store-derived.c ---- */

/* Samples of one series, in buffers that grow. */
struct store_samples {
        int64_t *ts;
        double *v;
        size_t n, cap;
};

void store_samples_free(struct store_samples *s);

/* The statement store_read_hour() and store_decode_raw() step: series ?1's
 * chunk of hour ?2. */
#define STORE_HOUR_CHUNK "SELECT chunk_bytes(hour, at, size) FROM chunks WHERE series_id = ?1 AND hour = ?2"

/* Decodes a raw chunk of the hour into out (replacing what it held): an
 * ordinary one, or a derived one, whose sources' chunks of the same hour
 * are read with `hour_chunk` (STORE_HOUR_CHUNK on the caller's connection,
 * not the statement that data comes from). Returns the number of samples;
 * -EBADMSG when the chunk or a source's does not decode or a source has
 * no chunk; an SQLite error; -ENOMEM. */
int store_decode_raw(sqlite3_stmt *hour_chunk, int64_t hour, const uint8_t *data, size_t size,
                     struct store_samples *out);

/* Reads series id's chunk of the hour through hour_chunk into out.
 * -ENOENT when it has none; otherwise as store_decode_raw(). */
int store_read_hour(sqlite3_stmt *hour_chunk, int64_t id, int64_t hour, struct store_samples *out);

/* The series, their metric and their rank in compaction order: sources
 * before the series derived from them (rank: how many derivations lead to
 * the family), then by id; ?1 and ?2 the rank and id to start from. */
int store_compact_order_sql(char *buf, size_t size);

/* Finds each registered series' sources among the registered series (a
 * series of a derived family and its sources are known to each other by
 * their labels), after their ids are known. 0 or -ENOMEM. */
int store_link_sources(struct tickbuf *b);

/* The sources of registered series id (*ret_n of them; none for a series
 * that is not registered or not derived). */
const int64_t *store_sources_of(const struct tickbuf *b, int64_t id, size_t *ret_n);

/* The ids of the series of family `derived` whose source is series id,
 * registered or not (a malloc()ed array in *ret). *st holds the
 * statement between calls (NULL at first; the caller finalizes it). */
int store_find_dependents(sqlite3 *db, sqlite3_stmt **st, int derived, int64_t id, int64_t **ret, size_t *ret_n);

/* ---- store-data.c ---- */

/* The bytes of an hour's chunks, one after another in the order they were
 * written, are one stream, cut into chunk_data rows of this many bytes:
 * a row fills a 4 KiB page (SQLite keeps a record of up to the page size
 * less 35 bytes in the page; the rowid and lengths take the rest), or a
 * quarter of a 16 KiB one. Row ids: the hour's number since 1970 times
 * STORE_DATA_ROWS_PER_HOUR, plus the row's place in the stream. */
#define STORE_DATA_ROW_BYTES 4056
#define STORE_DATA_ROWS_PER_HOUR 1048576
#define STORE_DATA_ROWS_PER_HOUR_SQL "1048576"

/* Writes hourly chunks: appends their bytes to their hour's stream and
 * their rows to chunks. */
struct store_packer {
        sqlite3_stmt *tail, *put_row, *put_chunk;
        int64_t hour; /* whose stream buf continues; INT64_MIN: none */
        int64_t row;  /* buf's place in it */
        size_t fill;
        bool dirty; /* buf holds bytes the database does not */
        uint8_t buf[STORE_DATA_ROW_BYTES];
};

int store_packer_open(struct store_packer *p, sqlite3 *db);
void store_packer_close(struct store_packer *p);

/* Series series_id's chunk of the hour: the encoded samples, their first
 * and last times and their number (replacing its earlier chunk of the
 * hour, whose bytes stay unused in the stream until the hour is deleted).
 * Full rows are written at once; the stream's last row, which every small
 * chunk would rewrite, only by store_packer_flush(): before the commit,
 * and before a chunk whose bytes may be in it is read on the same
 * connection. */
int store_packer_flush(struct store_packer *p);
int store_put_hourly(struct store_packer *p, int64_t series_id, int64_t hour, const uint8_t *data, size_t size,
                     int64_t first, int64_t last, size_t count);

/* Deletes the chunk_data rows of the hours that start before before_ms,
 * once their chunks are deleted. */
int store_collect_data(sqlite3 *db, int64_t before_ms);

/* Defines chunk_bytes(hour, at, size) on a connection: the bytes of a
 * chunk (NULL when its rows are missing or short). store_data_release()
 * undefines it, as it must be before sqlite3_close(); NULL is a no-op. */
int store_data_register(sqlite3 *db);
void store_data_release(sqlite3 *db);

/* ---- store-retention.c ---- */

/* Deletes what is past each tier's retention, then the oldest rows while
 * the file exceeds the size cap; inside the caller's transaction. Raw
 * data of pending hours stays: their rollups are made from it. */
int store_enforce_retention(struct store *s, int64_t now_ms);

/* ---- store-cursor.c ---- */

/* Writes the positions saved since the last call, in a transaction of
 * their own, into the positions table (created then). */
int store_flush_positions(struct store *s);

/* ---- store-events.c ---- */

/* Writes the queued health events in a transaction of their own (the
 * events table is created then) and deletes those past its bounds. */
int store_flush_events(struct store *s);
/* Makes the events table, if missing, inside the open's transaction. */
int store_events_setup(struct store *s);

/* ---- the recent table's rows ---- */

/* One recent-table entry: the series id and the value, little endian. */
#define STORE_RECENT_ENTRY 12

static inline void store_recent_put(uint8_t *p, uint32_t id, double v) {
        uint64_t u;
        memcpy(&u, &v, sizeof(u));
        for (int i = 0; i < 4; i++)
                p[i] = (uint8_t) (id >> (8 * i));
        for (int i = 0; i < 8; i++)
                p[4 + i] = (uint8_t) (u >> (8 * i));
}

static inline uint32_t store_recent_id(const uint8_t *p) {
        return (uint32_t) p[0] | (uint32_t) p[1] << 8 | (uint32_t) p[2] << 16 | (uint32_t) p[3] << 24;
}

static inline double store_recent_value(const uint8_t *p) {
        uint64_t u = 0;
        for (int i = 11; i >= 4; i--)
                u = u << 8 | p[i];
        double v;
        memcpy(&v, &u, sizeof(v));
        return v;
}
