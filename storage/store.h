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
 * store_open_deferred()), -EBUSY when another process holds the
 * database's lock (see below). Opening passes open(2)'s errno on: -ENOENT,
 * -EACCES, -EROFS, -ENOSPC ...
 *
 * One process per database: a store holds an exclusive flock() on
 * PATH.lock from before it first writes (at open, or for a deferred store
 * when the database opens) until store_close(). The file holds the
 * holder's pid while it is held and is left in place, empty, after.
 *
 * Threading: store_register_series() and store_append() are called by one
 * thread (the tick loop); store_query_range() may be called from any number
 * of other threads at the same time (it uses its own connection). The
 * store runs its scheduled integrity check on a thread of its own.
 *
 * A file damaged at run time: SQLITE_CORRUPT or SQLITE_NOTADB from any
 * statement (a write, a query) or a failed scheduled PRAGMA quick_check
 * makes the store degraded (last_error -EUCLEAN); at the next write the
 * file is set aside as at open (store_open_or_set_aside()) and a new one
 * started, which gets every tick held in memory. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "lib/cursor.h"
#include "lib/history.h"
#include "lib/inventory.h"

/* 5: hourly chunks' bytes packed into chunk_data rows of a page each
 * (storage/store-internal.h); 4 had derived chunks (storage/derive.h),
 * which a neurond that knows only 3 could not read. */
#define STORE_SCHEMA_VERSION 5

/* The defaults of store_options; the daemon's settings start from them too. */
#define STORE_DEFAULT_RAW_RETENTION_MS (48LL * 3600 * 1000)
#define STORE_DEFAULT_MINUTE_RETENTION_MS (30LL * 24 * 3600 * 1000)
#define STORE_DEFAULT_HOUR_RETENTION_MS (365LL * 24 * 3600 * 1000)
#define STORE_DEFAULT_SIZE_CAP_BYTES (1ULL << 30)
#define STORE_DEFAULT_CHECK_INTERVAL_MS (3600LL * 1000)
/* Seven times the series of the largest catalog entry in one daemon (a
 * whole trn3-gen2 UltraServer, about 6,600), with room for runtimes that
 * come and go. */
#define STORE_DEFAULT_MAX_SERIES 50000
/* Samples one slice of compaction merges at most (a few milliseconds): a
 * tick does one slice, a clean stop as many as STORE_CLOSE_COMPACT_MS of
 * the monotonic clock allows. */
#define STORE_DEFAULT_COMPACT_SLICE 200000

/* Compaction at close stops after this long: a daemon that kept up has an
 * hour or two pending, and stops in under 3 s on the largest host, but a
 * backlog (hours ending faster than a slice a tick compacts them) would
 * hold the stop past systemd's TimeoutStopSec=20s. What is left stays
 * pending for the next start. */
#define STORE_CLOSE_COMPACT_MS 5000

struct store;

struct store_options {
        int64_t raw_retention_ms;    /* default 48 h */
        int64_t minute_retention_ms; /* default 30 d */
        int64_t hour_retention_ms;   /* default 365 d */
        uint64_t size_cap_bytes;     /* default 1 GiB; 0 for no cap */
        int64_t chunk_ms;            /* head chunk span, whole minutes dividing an hour; default 1 min */
        int64_t check_interval_ms;   /* PRAGMA quick_check of the file; default 1 h; 0 for none */
        /* Series the database may hold (0: no limit): a new series beyond it
         * is not stored, and counted; old series free their place once none
         * of their rows is left in any tier. Default STORE_DEFAULT_MAX_SERIES. */
        uint64_t max_series;
        size_t compact_slice; /* a slice of compaction's budget in samples; default above. Tests
                                 make it small to form a backlog of pending hours with few series */
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
 * writes that name to aside (when not NULL; kept when opening the new
 * database then fails), and opens a new database. Returns 1 when a damaged
 * file was set aside, 0 when not, or a negative errno. */
int store_open_or_set_aside(const char *path, const struct store_options *o, struct store **ret, char *aside,
                            size_t aside_len);

/* A store whose database could not be opened (error, a negative errno):
 * it starts degraded and behaves as one that cannot write. Ticks wait in
 * memory with the same bound, and at each retry store_append() opens the
 * database as store_open_or_set_aside() does (setting a damaged file
 * aside), enters the registered series and writes the ticks. Until then
 * queries fail with -EAGAIN. */
int store_open_deferred(const char *path, const struct store_options *o, int error, struct store **ret);

/* Whether an error of the store_open functions comes from the file
 * system's state (full, read-only, failing), which may pass by itself: the
 * daemon then starts without its database (store_open_deferred()).
 * Anything else (no such directory, no permission, a file of a newer
 * neurond) needs the operator. */
bool store_error_is_transient(int error);

/* The pid of the process that holds the lock of the database at path,
 * after an open failed with -EBUSY. Returns 0, -ENODATA when the lock file
 * names none, or the errno of reading it. */
int store_lock_holder(const char *path, long *ret_pid);

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

/* Whether store_append() of a tick at timestamp_ms will compact and roll
 * up part of an hour that has ended (when the write happens): lets the
 * loop say in its debug log when that starts and how long it took. Same
 * thread as store_append(). */
bool store_rollup_due(const struct store *s, int64_t timestamp_ms);

/* The name the damaged file was given when it was last set aside, "" when
 * none was; the tick loop's thread. */
const char *store_set_aside_name(const struct store *s);

/* A consistent copy of the counters; callable from any thread. */
void store_get_stats(struct store *s, struct history_stats *ret);

/* Caps the file at max_pages pages (SQLite's max_page_count; 0 restores
 * the default). Writes beyond fail as on a full disk: for tests. */
int store_set_page_limit(struct store *s, int64_t max_pages);

/* Range queries and the series list, as lib/history.h describes them; the
 * tier: among those whose retention reaches back to start, the coarsest
 * rollup whose resolution divides the step, else raw, else the coarsest
 * rollup no coarser than the step. Hours not yet rolled up are read from
 * their raw samples, so every tier is up to date, and counted as their
 * rollups would be: by the start of each sample's period. */
int store_query_range(struct store *s, const struct history_query *q, struct history_result **ret);

int store_list_series(struct store *s, int metric, const struct history_matcher *matchers, size_t n_matchers,
                      struct series_desc **ret, size_t *ret_n);

/* Health events (lib/health.h), from the tick loop's thread: queued (at
 * most STORE_EVENTS_QUEUED; the oldest go first) and written with the next
 * tick stored, into the events table. The table keeps the raw tier's
 * retention and at most STORE_EVENTS_MAX rows, the newest. */
#define STORE_EVENTS_QUEUED 4096
#define STORE_EVENTS_MAX 100000
void store_add_events(struct store *s, const struct health_event *events, size_t n);

/* The stored events as lib/history.h's query_events reads them. */
int store_query_events(struct store *s, const struct history_events_query *q, struct health_event **ret, size_t *ret_n);

/* The store behind lib/history.h's interface; impl is a struct store. */
extern const struct history_ops store_history_ops;

/* The store behind lib/cursor.h's interface; impl is a struct store.
 * Reads use the queries' connection. Saved positions are kept in memory
 * and written with the next tick stored (or at store_close()) into the
 * positions table, which the first save creates: a file without it has
 * none saved. */
extern const struct cursor_ops store_cursor_ops;
