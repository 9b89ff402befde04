#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "storage/chunk.h"
#include "storage/sql.h"
#include "storage/store-internal.h"

/* Schema 2 (docs/storage.md): series with JSON labels so that
 * `sqlite3 neurond.db` users can filter with json_extract(); raw samples as
 * one compressed chunk per series and span; the open chunk's ticks in
 * recent, one row per tick, so that every tick is durable at once; rollup
 * rows a person can read; meta for the rollup watermark. */
static const char schema_sql[] = "CREATE TABLE IF NOT EXISTS series ("
                                 "  id INTEGER PRIMARY KEY,"
                                 "  metric TEXT NOT NULL,"
                                 "  labels TEXT NOT NULL,"
                                 "  UNIQUE (metric, labels));"
                                 "CREATE TABLE IF NOT EXISTS chunks ("
                                 "  series_id INTEGER NOT NULL,"
                                 "  start_ts INTEGER NOT NULL,"
                                 "  end_ts INTEGER NOT NULL,"
                                 "  count INTEGER NOT NULL,"
                                 "  data BLOB NOT NULL,"
                                 "  UNIQUE (series_id, start_ts));"
                                 "CREATE TABLE IF NOT EXISTS recent ("
                                 "  ts INTEGER PRIMARY KEY,"
                                 "  data BLOB NOT NULL);"
                                 "CREATE TABLE IF NOT EXISTS rollup_1m ("
                                 "  series_id INTEGER NOT NULL,"
                                 "  ts INTEGER NOT NULL,"
                                 "  min REAL, max REAL, sum REAL, count INTEGER NOT NULL, last REAL,"
                                 "  PRIMARY KEY (series_id, ts)) WITHOUT ROWID;"
                                 "CREATE TABLE IF NOT EXISTS rollup_1h ("
                                 "  series_id INTEGER NOT NULL,"
                                 "  ts INTEGER NOT NULL,"
                                 "  min REAL, max REAL, sum REAL, count INTEGER NOT NULL, last REAL,"
                                 "  PRIMARY KEY (series_id, ts)) WITHOUT ROWID;"
                                 "CREATE TABLE IF NOT EXISTS meta ("
                                 "  key TEXT PRIMARY KEY,"
                                 "  value INTEGER NOT NULL);";

/* Samples per chunk at most, and ticks kept in memory at most while the
 * database cannot be written. */
#define CHUNK_TICKS_MAX 320
#define BUFFER_TICKS_MAX (2 * CHUNK_TICKS_MAX)
#define BACKOFF_MAX_TICKS 64

static const char *const rollup_merge_sql[2] = {
        "INSERT INTO rollup_1m(series_id, ts, min, max, sum, count, last) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7) "
        "ON CONFLICT (series_id, ts) DO UPDATE SET min = min(min, excluded.min), max = max(max, excluded.max), "
        "sum = sum + excluded.sum, count = count + excluded.count, last = excluded.last",
        "INSERT INTO rollup_1h(series_id, ts, min, max, sum, count, last) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7) "
        "ON CONFLICT (series_id, ts) DO UPDATE SET min = min(min, excluded.min), max = max(max, excluded.max), "
        "sum = sum + excluded.sum, count = count + excluded.count, last = excluded.last",
};

void store_options_init(struct store_options *o) {
        *o = (struct store_options){
                .raw_retention_ms = STORE_DEFAULT_RAW_RETENTION_MS,
                .minute_retention_ms = STORE_DEFAULT_MINUTE_RETENTION_MS,
                .hour_retention_ms = STORE_DEFAULT_HOUR_RETENTION_MS,
                .size_cap_bytes = STORE_DEFAULT_SIZE_CAP_BYTES,
                .chunk_ms = 5 * STORE_MINUTE_MS,
        };
}

static int set_meta(struct store *s, const char *key, int64_t value) {
        sqlite3_stmt *st = NULL;
        int r = sql_prepare(s->db, "INSERT OR REPLACE INTO meta(key, value) VALUES (?1, ?2)", &st);
        if (r < 0)
                return r;
        sqlite3_bind_text(st, 1, key, -1, SQLITE_STATIC);
        sqlite3_bind_int64(st, 2, value);
        r = sql_step_done(st);
        sqlite3_finalize(st);
        return r;
}

/* Writes one cell into a rollup tier, merging with what is there: cells
 * only ever carry samples not yet counted (see rolled_ms), so a minute
 * that a restart split in two adds up right. */
static int rollup_write(sqlite3_stmt *st, int64_t series_id, int64_t ts, const struct rollup_cell *c) {
        sqlite3_bind_int64(st, 1, series_id);
        sqlite3_bind_int64(st, 2, ts);
        sqlite3_bind_double(st, 3, c->min);
        sqlite3_bind_double(st, 4, c->max);
        sqlite3_bind_double(st, 5, c->sum);
        sqlite3_bind_int64(st, 6, c->count);
        sqlite3_bind_double(st, 7, c->last);
        return sql_step_done(st);
}

/* Adds samples (ts ascending) of one series to the 1 min and 1 h rollups. */
static int rollup_samples(sqlite3_stmt *const *merge, int64_t series_id, const int64_t *ts, const double *v, size_t n) {
        static const int64_t res[2] = { STORE_MINUTE_MS, STORE_HOUR_MS };
        for (int tier = 0; tier < 2; tier++) {
                struct rollup_cell cell = { 0 };
                int64_t bucket = 0;
                for (size_t i = 0; i < n; i++) {
                        int64_t b = ts[i] - ts[i] % res[tier];
                        if (cell.count > 0 && b != bucket) {
                                int r = rollup_write(merge[tier], series_id, bucket, &cell);
                                if (r < 0)
                                        return r;
                                cell = (struct rollup_cell){ 0 };
                        }
                        bucket = b;
                        rollup_cell_add(&cell, v[i]);
                }
                if (cell.count > 0) {
                        int r = rollup_write(merge[tier], series_id, bucket, &cell);
                        if (r < 0)
                                return r;
                }
        }
        return 0;
}

/* Writes samples (ts ascending) of one series as chunks, split at chunk
 * span boundaries and at CHUNK_TICKS_MAX samples. */
static int chunk_samples(struct store *s, sqlite3_stmt *insert, int64_t series_id, const int64_t *ts, const double *v,
                         size_t n) {
        size_t at = 0;
        while (at < n) {
                size_t end = at + 1;
                int64_t span = ts[at] - ts[at] % s->opt.chunk_ms;
                while (end < n && end - at < CHUNK_TICKS_MAX && ts[end] - ts[end] % s->opt.chunk_ms == span)
                        end++;
                uint8_t *data = NULL;
                size_t size = 0;
                int r = chunk_encode(ts + at, v + at, end - at, &data, &size);
                if (r < 0)
                        return r;
                sqlite3_bind_int64(insert, 1, series_id);
                sqlite3_bind_int64(insert, 2, ts[at]);
                sqlite3_bind_int64(insert, 3, ts[end - 1]);
                sqlite3_bind_int64(insert, 4, (int64_t) (end - at));
                sqlite3_bind_blob(insert, 5, data, (int) size, SQLITE_STATIC);
                r = sql_step_done(insert);
                sqlite3_clear_bindings(insert);
                free(data);
                if (r < 0)
                        return r;
                at = end;
        }
        return 0;
}

struct triple {
        int64_t id, ts;
        double v;
};

static int triple_cmp(const void *a, const void *b) {
        const struct triple *x = a, *y = b;
        if (x->id != y->id)
                return x->id < y->id ? -1 : 1;
        return x->ts < y->ts ? -1 : x->ts > y->ts;
}

static uint32_t get_le32(const uint8_t *p) {
        return (uint32_t) p[0] | (uint32_t) p[1] << 8 | (uint32_t) p[2] << 16 | (uint32_t) p[3] << 24;
}

static double get_double(const uint8_t *p) {
        uint64_t u = 0;
        for (int i = 7; i >= 0; i--)
                u = u << 8 | p[i];
        double v;
        memcpy(&v, &u, sizeof(v));
        return v;
}

static int prepare_writers(struct store *s, sqlite3_stmt **insert, sqlite3_stmt *merge[2]) {
        int r = sql_prepare(
                s->db,
                "INSERT OR REPLACE INTO chunks(series_id, start_ts, end_ts, count, data) VALUES (?1, ?2, ?3, ?4, ?5)",
                insert);
        if (r == 0)
                r = sql_prepare(s->db, rollup_merge_sql[0], &merge[0]);
        if (r == 0)
                r = sql_prepare(s->db, rollup_merge_sql[1], &merge[1]);
        return r;
}

/* Moves every sample of the recent table into chunks and rollups, inside
 * the caller's transaction: on open (after a crash or a clean stop) and
 * on close, so that an open chunk never outlives the process that wrote it
 * and the series set may change between runs. */
static int close_out_recent(struct store *s) {
        sqlite3_stmt *sel = NULL, *insert = NULL, *merge[2] = { NULL, NULL };
        struct triple *all = NULL;
        size_t n = 0, cap = 0;
        int64_t rolled = INT64_MIN;
        int r, rc;

        /* Samples older than the watermark are in the rollups already. */
        r = sql_query_int(s->db,
                          "SELECT coalesce((SELECT value FROM meta WHERE key = 'rolled_ms'), -9223372036854775807 - 1)",
                          &rolled);
        if (r < 0)
                return r;
        r = sql_prepare(s->db, "SELECT ts, data FROM recent ORDER BY ts", &sel);
        while (r == 0 && (rc = sqlite3_step(sel)) == SQLITE_ROW) {
                int64_t ts = sqlite3_column_int64(sel, 0);
                const uint8_t *p = sqlite3_column_blob(sel, 1);
                size_t entries = (size_t) sqlite3_column_bytes(sel, 1) / STORE_RECENT_ENTRY;
                if (n + entries > cap) {
                        cap = (n + entries) * 2;
                        struct triple *grown = realloc(all, cap * sizeof(*grown));
                        if (!grown) {
                                r = -ENOMEM;
                                break;
                        }
                        all = grown;
                }
                for (size_t e = 0; e < entries; e++, p += STORE_RECENT_ENTRY)
                        all[n++] = (struct triple){ .id = get_le32(p), .ts = ts, .v = get_double(p + 4) };
        }
        if (r == 0 && rc != SQLITE_DONE)
                r = sql_errno(rc);
        sqlite3_finalize(sel);
        if (r < 0 || n == 0)
                goto out;
        qsort(all, n, sizeof(*all), triple_cmp);

        int64_t *ts = malloc(n * sizeof(*ts));
        double *v = malloc(n * sizeof(*v));
        if (!ts || !v)
                r = -ENOMEM;
        if (r == 0)
                r = prepare_writers(s, &insert, merge);
        for (size_t at = 0; at < n && r == 0;) {
                size_t k = 0, from = 0;
                int64_t id = all[at].id;
                for (; at < n && all[at].id == id; at++, k++) {
                        ts[k] = all[at].ts;
                        v[k] = all[at].v;
                        if (ts[k] < rolled)
                                from = k + 1;
                }
                r = chunk_samples(s, insert, id, ts, v, k);
                if (r == 0)
                        r = rollup_samples(merge, id, ts + from, v + from, k - from);
        }
        free(ts);
        free(v);
        if (r == 0)
                r = sql_exec(s->db, "DELETE FROM recent");
out:
        /* Everything stored is counted now; the next ticks may even be
         * older (a clock set back, a sped-up model restarted). */
        if (r == 0)
                r = sql_exec(s->db, "DELETE FROM meta WHERE key = 'rolled_ms'");
        if (r == 0)
                s->rolled_ms = INT64_MIN;
        sqlite3_finalize(insert);
        sqlite3_finalize(merge[0]);
        sqlite3_finalize(merge[1]);
        free(all);
        return r;
}

/* Schema 1 kept one row per sample in samples(series_id, ts, value). */
static int migrate_from_1(struct store *s) {
        sqlite3_stmt *sel = NULL, *insert = NULL, *merge[2] = { NULL, NULL };
        int64_t *ts = NULL, cur = -1;
        double *v = NULL;
        size_t n = 0, cap = 0;
        int r, rc;

        r = prepare_writers(s, &insert, merge);
        if (r == 0)
                r = sql_prepare(s->db, "SELECT series_id, ts, value FROM samples ORDER BY series_id, ts", &sel);
        while (r == 0) {
                rc = sqlite3_step(sel);
                int64_t id = rc == SQLITE_ROW ? sqlite3_column_int64(sel, 0) : -1;
                if (n > 0 && id != cur) {
                        r = chunk_samples(s, insert, cur, ts, v, n);
                        if (r == 0)
                                r = rollup_samples(merge, cur, ts, v, n);
                        n = 0;
                }
                if (rc != SQLITE_ROW) {
                        if (r == 0 && rc != SQLITE_DONE)
                                r = sql_errno(rc);
                        break;
                }
                if (n == cap) {
                        cap = cap ? 2 * cap : 4096;
                        int64_t *t2 = realloc(ts, cap * sizeof(*t2));
                        if (t2)
                                ts = t2;
                        double *v2 = realloc(v, cap * sizeof(*v2));
                        if (v2)
                                v = v2;
                        if (!t2 || !v2) {
                                r = -ENOMEM;
                                break;
                        }
                }
                cur = id;
                ts[n] = sqlite3_column_int64(sel, 1);
                v[n++] = sqlite3_column_type(sel, 2) == SQLITE_NULL ? NAN : sqlite3_column_double(sel, 2);
        }
        sqlite3_finalize(sel);
        sqlite3_finalize(insert);
        sqlite3_finalize(merge[0]);
        sqlite3_finalize(merge[1]);
        free(ts);
        free(v);
        if (r == 0)
                r = sql_exec(s->db, "DROP TABLE samples");
        return r;
}

static int check_integrity(sqlite3 *db) {
        sqlite3_stmt *st = NULL;
        int r = sql_prepare(db, "PRAGMA quick_check", &st);
        if (r < 0)
                return r;
        int rc = sqlite3_step(st);
        if (rc == SQLITE_ROW) {
                const unsigned char *text = sqlite3_column_text(st, 0);
                r = text && strcmp((const char *) text, "ok") == 0 ? 0 : -EUCLEAN;
        } else {
                r = sql_errno(rc);
                if (r == 0)
                        r = -EUCLEAN;
        }
        sqlite3_finalize(st);
        return r;
}

static int setup_schema(struct store *s) {
        int64_t version = 0, tables = 0;
        int r = sql_query_int(s->db, "PRAGMA user_version", &version);
        if (r < 0)
                return r;
        if (version > STORE_SCHEMA_VERSION)
                return -EPROTONOSUPPORT;
        r = sql_query_int(s->db, "SELECT count(*) FROM sqlite_master", &tables);
        if (r < 0)
                return r;
        /* auto_vacuum can be chosen only before the first table exists,
         * or by a VACUUM after a migration. */
        /* 16 KiB pages hold several chunks each, with less left over at
         * the end of a page than 4 KiB ones. */
        if (tables == 0)
                r = sql_exec(s->db, "PRAGMA page_size = 16384; PRAGMA auto_vacuum = INCREMENTAL");
        if (r == 0)
                r = sql_exec(s->db, "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;");
        if (r == 0)
                r = sql_exec(s->db, "BEGIN IMMEDIATE");
        if (r == 0)
                r = sql_exec(s->db, schema_sql);
        if (r == 0 && version == 1)
                r = migrate_from_1(s);
        if (r == 0 && version < STORE_SCHEMA_VERSION)
                r = sql_exec(s->db, "PRAGMA user_version = 2");
        if (r == 0)
                r = close_out_recent(s);
        if (r == 0)
                r = sql_exec(s->db, "COMMIT");
        if (r < 0) {
                sql_exec(s->db, "ROLLBACK");
                return r;
        }
        int64_t vacuum_mode = 0;
        r = sql_query_int(s->db, "PRAGMA auto_vacuum", &vacuum_mode);
        if (r == 0 && vacuum_mode != 2)
                r = sql_exec(s->db, "PRAGMA auto_vacuum = INCREMENTAL; VACUUM");
        return r;
}

static int sync_ticks(struct store *s);

/* Allocates a store for path with no database open yet. */
static int store_new(const char *path, const struct store_options *o, struct store **ret) {
        if (o->chunk_ms <= 0 || o->chunk_ms % STORE_MINUTE_MS != 0)
                return -EINVAL;
        struct store *s = calloc(1, sizeof(*s));
        if (!s)
                return -ENOMEM;
        s->path = strdup(path);
        if (!s->path) {
                free(s);
                return -ENOMEM;
        }
        s->opt = *o;
        s->rolled_ms = INT64_MIN;
        s->backoff = 1;
        pthread_mutex_init(&s->read_lock, NULL);
        pthread_mutex_init(&s->stats_lock, NULL);
        *ret = s;
        return 0;
}

static void db_disconnect(struct store *s) {
        sqlite3_finalize(s->st_recent);
        sqlite3_finalize(s->st_chunk);
        sqlite3_finalize(s->st_merge[0]);
        sqlite3_finalize(s->st_merge[1]);
        s->st_recent = s->st_chunk = s->st_merge[0] = s->st_merge[1] = NULL;
        pthread_mutex_lock(&s->read_lock);
        sqlite3_close(s->read_db);
        s->read_db = NULL;
        pthread_mutex_unlock(&s->read_lock);
        sqlite3_close(s->db);
        s->db = NULL;
}

/* Opens both connections, checks the file, brings the schema up to date
 * and prepares the tick loop's statements; on failure the store is left
 * without connections, to be tried again. The database, its -wal and its
 * -shm file are opened (made) with open(2) first, because its errno tells a
 * full or read-only file system (ENOSPC, EROFS) from a missing directory or
 * a permission (ENOENT, EACCES): SQLite reports "cannot open" for all of
 * them, and the errno it keeps is that of its read-only retry, ENOENT. An
 * empty -wal or -shm file is one SQLite would make. */
static int db_connect(struct store *s) {
        static const char *const suffix[] = { "", "-wal", "-shm" };
        sqlite3 *read_db = NULL;
        int r = 0;

        for (size_t i = 0; i < 3 && r == 0; i++) {
                char name[4200];
                snprintf(name, sizeof(name), "%s%s", s->path, suffix[i]);
                int fd = open(name, O_RDWR | O_CREAT | O_CLOEXEC, 0644);
                if (fd < 0)
                        r = -errno;
                else
                        close(fd);
        }
        if (r == 0)
                r = sql_open(s->path, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, &s->db);
        if (r == 0)
                r = check_integrity(s->db);
        if (r == 0)
                r = setup_schema(s);
        if (r == 0)
                r = prepare_writers(s, &s->st_chunk, s->st_merge);
        if (r == 0)
                r = sql_prepare(s->db, "INSERT OR REPLACE INTO recent(ts, data) VALUES (?1, ?2)", &s->st_recent);
        if (r == 0)
                r = sql_open(s->path, SQLITE_OPEN_READONLY, &read_db);
        if (r < 0) {
                db_disconnect(s);
                return r;
        }
        /* Queries run on other threads; they find read_db under the lock. */
        pthread_mutex_lock(&s->read_lock);
        s->read_db = read_db;
        pthread_mutex_unlock(&s->read_lock);
        int64_t bytes = sql_used_bytes(s->db);
        pthread_mutex_lock(&s->stats_lock);
        s->stats.used_bytes = bytes;
        s->stats.unopened = false;
        pthread_mutex_unlock(&s->stats_lock);
        return 0;
}

/* db_connect(), and when the file is damaged, sets it aside (see
 * store_open_or_set_aside()) and connects to a new one: 1 then. */
static int db_connect_or_set_aside(struct store *s, char *aside, size_t aside_len) {
        int r = db_connect(s);
        if (r != -EUCLEAN)
                return r;
        /* The WAL belongs to the damaged file: it moves with it, or SQLite
         * would replay it into the new one. */
        static const char *const suffix[] = { "", "-wal", "-shm" };
        long long now = (long long) time(NULL);
        for (size_t i = 0; i < 3; i++) {
                char from[4200], to[4200];
                snprintf(from, sizeof(from), "%s%s", s->path, suffix[i]);
                snprintf(to, sizeof(to), "%s.damaged-%lld%s", s->path, now, suffix[i]);
                if (rename(from, to) < 0 && errno != ENOENT)
                        return -errno;
                if (i == 0 && aside)
                        snprintf(aside, aside_len, "%s", to);
        }
        r = db_connect(s);
        if (r < 0)
                return r;
        pthread_mutex_lock(&s->stats_lock);
        s->stats.damaged_set_aside = 1;
        pthread_mutex_unlock(&s->stats_lock);
        return 1;
}

int store_open_with(const char *path, const struct store_options *o, struct store **ret) {
        struct store *s = NULL;
        int r = store_new(path, o, &s);
        if (r == 0)
                r = db_connect(s);
        if (r < 0) {
                store_close(s);
                return r;
        }
        *ret = s;
        return 0;
}

int store_open(const char *path, struct store **ret) {
        struct store_options o;
        store_options_init(&o);
        return store_open_with(path, &o, ret);
}

int store_open_or_set_aside(const char *path, const struct store_options *o, struct store **ret, char *aside,
                            size_t aside_len) {
        struct store *s = NULL;
        int r = store_new(path, o, &s);
        if (r == 0)
                r = db_connect_or_set_aside(s, aside, aside_len);
        if (r < 0) {
                store_close(s);
                return r;
        }
        *ret = s;
        return r;
}

int store_open_deferred(const char *path, const struct store_options *o, int error, struct store **ret) {
        struct store *s = NULL;
        int r = store_new(path, o, &s);
        if (r < 0)
                return r;
        /* As after a failed write: the next tick tries again. */
        s->stats.degraded = true;
        s->stats.unopened = true;
        s->stats.last_error = error;
        s->retry_at = 1;
        s->backoff = 2;
        *ret = s;
        return 0;
}

static int series_write(struct store *s, struct tickbuf *b);

/* Opens the database of a deferred store, as store_open_or_set_aside()
 * does, and enters the registered series. */
static int attach(struct store *s) {
        int r = db_connect_or_set_aside(s, NULL, 0);
        if (r >= 0 && s->buf.ts)
                r = series_write(s, &s->buf);
        if (r < 0) {
                db_disconnect(s);
                return r;
        }
        return 0;
}

void store_close(struct store *s) {
        if (!s)
                return;
        /* A deferred store's last chance to keep its ticks. */
        if (!s->db && s->buf.n_ticks > 0)
                attach(s);
        if (s->db && s->buf.n_ticks > 0 && sync_ticks(s) == 0 && sql_exec(s->db, "BEGIN IMMEDIATE") == 0) {
                if (close_out_recent(s) == 0)
                        sql_exec(s->db, "COMMIT");
                else
                        sql_exec(s->db, "ROLLBACK");
        }
        db_disconnect(s);
        pthread_mutex_destroy(&s->read_lock);
        pthread_mutex_destroy(&s->stats_lock);
        free(s->path);
        tickbuf_free(&s->buf);
        free(s);
}

/* json_object() with as many name/value pairs as the family has labels. */
static int series_upsert(struct store *s, const struct series_desc *d, int64_t *ret_id) {
        static const char *const sql[METRIC_LABELS_MAX + 1] = {
                "INSERT INTO series(metric, labels) VALUES (?1, json_object()) "
                "ON CONFLICT DO UPDATE SET metric = metric RETURNING id",
                "INSERT INTO series(metric, labels) VALUES (?1, json_object(?2, ?3)) "
                "ON CONFLICT DO UPDATE SET metric = metric RETURNING id",
                "INSERT INTO series(metric, labels) VALUES (?1, json_object(?2, ?3, ?4, ?5)) "
                "ON CONFLICT DO UPDATE SET metric = metric RETURNING id",
                "INSERT INTO series(metric, labels) VALUES (?1, json_object(?2, ?3, ?4, ?5, ?6, ?7)) "
                "ON CONFLICT DO UPDATE SET metric = metric RETURNING id",
        };
        const struct metric_desc *m = &metric_table[d->metric];
        size_t n_labels = metric_label_count(m);
        sqlite3_stmt *st = NULL;
        int r = sql_prepare(s->db, sql[n_labels], &st);
        if (r < 0)
                return r;
        sqlite3_bind_text(st, 1, m->name, -1, SQLITE_STATIC);
        for (size_t i = 0; i < n_labels; i++) {
                sqlite3_bind_text(st, 2 + 2 * (int) i, m->labels[i], -1, SQLITE_STATIC);
                sqlite3_bind_text(st, 3 + 2 * (int) i, d->label_values[i], -1, SQLITE_STATIC);
        }
        int rc = sqlite3_step(st);
        if (rc == SQLITE_ROW)
                *ret_id = sqlite3_column_int64(st, 0);
        else
                r = sql_errno(rc == SQLITE_DONE ? SQLITE_ERROR : rc);
        sqlite3_finalize(st);
        return r;
}

static const int64_t *sort_ids;

static int by_id_cmp(const void *a, const void *b) {
        int64_t x = sort_ids[*(const uint32_t *) a], y = sort_ids[*(const uint32_t *) b];
        return x < y ? -1 : x > y;
}

/* Enters b's series into the series table (one transaction), writing
 * their ids and their order by id to b. */
static int series_write(struct store *s, struct tickbuf *b) {
        int64_t *ids = b->ids;
        uint32_t *by_id = b->by_id;
        size_t n = b->n_series;
        int r = sql_exec(s->db, "BEGIN");
        for (size_t i = 0; i < n && r == 0; i++) {
                r = series_upsert(s, &b->series[i], &ids[i]);
                by_id[i] = (uint32_t) i;
                if (r == 0 && ids[i] > UINT32_MAX)
                        r = -ERANGE;
        }
        if (r == 0)
                r = sql_exec(s->db, "COMMIT");
        if (r < 0) {
                sql_exec(s->db, "ROLLBACK");
                return r;
        }
        sort_ids = ids;
        qsort(by_id, n, sizeof(*by_id), by_id_cmp);
        return 0;
}

int store_register_series(struct store *s, const struct series_desc *series, size_t n) {
        struct tickbuf buf;
        /* The buffer holds the open chunk's ticks: a chunk span's worth,
         * CHUNK_TICKS_MAX at most, in steady state (9 bytes per series and
         * tick: 18 MiB for 6,624 series). Touching those rows now makes the
         * daemon resident at its steady size from the start, and a memory
         * limit trip at start-up, instead of growing through the first
         * span; the rest is the reserve for ticks waiting out a database
         * error, touched only then. Rows are written before they are read. */
        int r = tickbuf_init(&buf, series, n, BUFFER_TICKS_MAX, CHUNK_TICKS_MAX);
        if (r < 0)
                return r;
        /* Ticks buffered for the old series go to the database first. */
        if (s->buf.n_ticks > 0 && !s->db)
                r = attach(s);
        if (r == 0 && s->buf.n_ticks > 0) {
                r = sync_ticks(s);
                if (r == 0)
                        r = sql_exec(s->db, "BEGIN IMMEDIATE");
                if (r == 0) {
                        r = close_out_recent(s);
                        r = sql_exec(s->db, r == 0 ? "COMMIT" : "ROLLBACK") < 0 && r == 0 ? -EIO : r;
                }
                if (r == 0)
                        s->buf.n_ticks = s->buf.n_durable = 0;
        }
        /* Without a database the ids come when it opens (attach()). */
        if (r == 0 && s->db)
                r = series_write(s, &buf);
        if (r < 0) {
                tickbuf_free(&buf);
                return r;
        }
        tickbuf_free(&s->buf);
        s->buf = buf;
        return 0;
}

static void put_le32(uint8_t *p, uint32_t v) {
        for (int i = 0; i < 4; i++)
                p[i] = (uint8_t) (v >> (8 * i));
}

static void put_double(uint8_t *p, double v) {
        uint64_t u;
        memcpy(&u, &v, sizeof(u));
        for (int i = 0; i < 8; i++)
                p[i] = (uint8_t) (u >> (8 * i));
}

/* Deletes rows of one tier older than cutoff, series by series so that
 * every delete is a range of the primary key. */
static int delete_older(struct store *s, const char *table, const char *column, int64_t cutoff) {
        char sql[160];
        sqlite3_stmt *st = NULL;

        snprintf(sql, sizeof(sql), "DELETE FROM %s WHERE series_id = ?1 AND %s < ?2", table, column);
        int r = sql_prepare(s->db, sql, &st);
        sqlite3_stmt *ids = NULL;
        if (r == 0)
                r = sql_prepare(s->db, "SELECT id FROM series", &ids);
        int rc;
        while (r == 0 && (rc = sqlite3_step(ids)) == SQLITE_ROW) {
                sqlite3_bind_int64(st, 1, sqlite3_column_int64(ids, 0));
                sqlite3_bind_int64(st, 2, cutoff);
                r = sql_step_done(st);
        }
        if (r == 0 && rc != SQLITE_DONE)
                r = sql_errno(rc);
        sqlite3_finalize(ids);
        sqlite3_finalize(st);
        return r;
}

static int oldest(struct store *s, const char *table, const char *column, int64_t *ret) {
        char sql[200];
        snprintf(sql, sizeof(sql), "SELECT min((SELECT min(%s) FROM %s WHERE series_id = series.id)) FROM series",
                 column, table);
        return sql_query_int(s->db, sql, ret);
}

/* Age limits per tier, then the size cap: while the pages in use exceed
 * it, a slice of the oldest rows goes from the tier whose oldest row is
 * oldest relative to its retention, so every tier's history shrinks by
 * about the same fraction. Freed pages are given back to the file system
 * by incremental vacuum. Runs inside the caller's transaction. */
static int enforce_retention(struct store *s, int64_t now_ms) {
        static const struct {
                const char *table, *column;
                int64_t slice_ms;
        } tiers[] = {
                { "chunks", "start_ts", STORE_HOUR_MS },
                { "rollup_1m", "ts", 24LL * STORE_HOUR_MS },
                { "rollup_1h", "ts", 7LL * 24 * STORE_HOUR_MS },
        };
        const int64_t keep[] = { s->opt.raw_retention_ms, s->opt.minute_retention_ms, s->opt.hour_retention_ms };
        int r = 0;

        for (size_t t = 0; t < 3 && r == 0; t++)
                r = delete_older(s, tiers[t].table, tiers[t].column, now_ms - keep[t]);
        while (r == 0 && s->opt.size_cap_bytes > 0 && sql_used_bytes(s->db) > (int64_t) s->opt.size_cap_bytes) {
                int pick = -1;
                int64_t from[3];
                double worst = -1;
                for (int t = 0; t < 3 && r == 0; t++) {
                        r = oldest(s, tiers[t].table, tiers[t].column, &from[t]);
                        /* An empty tier answers NULL, read as 0. */
                        double age = (double) (now_ms - from[t]) / (double) keep[t];
                        if (r == 0 && from[t] != 0 && age > worst) {
                                worst = age;
                                pick = t;
                        }
                }
                if (r < 0 || pick < 0)
                        break;
                r = delete_older(s, tiers[pick].table, tiers[pick].column, from[pick] + tiers[pick].slice_ms);
        }
        return r;
}

/* Writes what the buffer holds and the database lacks, in one
 * transaction: the ticks not yet in recent, the rollup cells of minutes
 * that ended, and the chunks of a span that ended. The in-memory state
 * changes only after the commit, so a failed attempt is simply retried. */
static int sync_ticks(struct store *s) {
        sqlite3_stmt *recent = s->st_recent, *insert = s->st_chunk, *const *merge = s->st_merge;
        int64_t *ts = NULL;
        double *v = NULL;
        uint8_t *blob = NULL;
        int64_t newest = s->buf.ts[s->buf.n_ticks - 1];
        int64_t roll_to = newest - newest % STORE_MINUTE_MS;
        size_t n_chunk = 0;
        bool retention = false;
        int r;

        ts = malloc(s->buf.n_ticks * sizeof(*ts));
        v = malloc(s->buf.n_ticks * sizeof(*v));
        blob = malloc(s->buf.n_series * STORE_RECENT_ENTRY + 1);
        if (!ts || !v || !blob) {
                r = -ENOMEM;
                goto out;
        }
        r = sql_exec(s->db, "BEGIN IMMEDIATE");
        if (r < 0)
                goto out;
        for (size_t t = s->buf.n_durable; t < s->buf.n_ticks && r == 0; t++) {
                size_t len = 0;
                for (size_t k = 0; k < s->buf.n_series; k++) {
                        size_t i = s->buf.by_id[k], at = t * s->buf.n_series + i;
                        if (!s->buf.valid[at])
                                continue;
                        put_le32(blob + len, (uint32_t) s->buf.ids[i]);
                        put_double(blob + len + 4, s->buf.values[at]);
                        len += STORE_RECENT_ENTRY;
                }
                sqlite3_bind_int64(recent, 1, s->buf.ts[t]);
                sqlite3_bind_blob(recent, 2, blob, (int) len, SQLITE_STATIC);
                r = sql_step_done(recent);
                sqlite3_clear_bindings(recent);
        }
        /* Minutes that ended: their samples not yet rolled up. */
        if (r == 0 && roll_to > s->rolled_ms) {
                for (size_t i = 0; i < s->buf.n_series && r == 0; i++) {
                        size_t k = tickbuf_gather(&s->buf, i, 0, s->buf.n_ticks, s->rolled_ms, roll_to, ts, v);
                        r = rollup_samples(merge, s->buf.ids[i], ts, v, k);
                }
                if (r == 0)
                        r = set_meta(s, "rolled_ms", roll_to);
        }
        int64_t rolled = roll_to > s->rolled_ms ? roll_to : s->rolled_ms;
        /* A chunk: leading ticks of one span, all rolled up, once the span
         * ended or the chunk is full. */
        int64_t span = s->buf.ts[0] - s->buf.ts[0] % s->opt.chunk_ms;
        while (n_chunk < s->buf.n_ticks && n_chunk < CHUNK_TICKS_MAX && s->buf.ts[n_chunk] < rolled &&
               s->buf.ts[n_chunk] - s->buf.ts[n_chunk] % s->opt.chunk_ms == span)
                n_chunk++;
        bool span_ended = n_chunk < s->buf.n_ticks && s->buf.ts[n_chunk] - s->buf.ts[n_chunk] % s->opt.chunk_ms != span;
        if (!(span_ended || n_chunk == CHUNK_TICKS_MAX))
                n_chunk = 0;
        if (r == 0 && n_chunk > 0) {
                /* In id order: neighbours in the series index. */
                for (size_t j = 0; j < s->buf.n_series && r == 0; j++) {
                        size_t i = s->buf.by_id[j];
                        size_t k = tickbuf_gather(&s->buf, i, 0, n_chunk, INT64_MIN, INT64_MAX, ts, v);
                        if (k > 0)
                                r = chunk_samples(s, insert, s->buf.ids[i], ts, v, k);
                }
                sqlite3_stmt *del = NULL;
                if (r == 0)
                        r = sql_prepare(s->db, "DELETE FROM recent WHERE ts <= ?1", &del);
                if (r == 0) {
                        sqlite3_bind_int64(del, 1, s->buf.ts[n_chunk - 1]);
                        r = sql_step_done(del);
                }
                sqlite3_finalize(del);
                /* Retention runs once per chunk span of data at most. */
                if (r == 0 && newest - s->last_retention_ms >= s->opt.chunk_ms) {
                        r = enforce_retention(s, newest);
                        retention = true;
                }
        }
        if (r == 0)
                r = sql_exec(s->db, "COMMIT");
        if (r < 0) {
                sql_exec(s->db, "ROLLBACK");
                goto out;
        }
        s->rolled_ms = rolled;
        if (retention) {
                s->last_retention_ms = newest;
                /* Gives freed pages back; harmless when it fails. */
                sql_exec(s->db, "PRAGMA incremental_vacuum");
        }
        if (retention || n_chunk > 0) {
                int64_t bytes = sql_used_bytes(s->db);
                pthread_mutex_lock(&s->stats_lock);
                s->stats.used_bytes = bytes;
                pthread_mutex_unlock(&s->stats_lock);
        }
        if (n_chunk > 0)
                tickbuf_drop_front(&s->buf, n_chunk);
        s->buf.n_durable = s->buf.n_ticks;
out:
        free(ts);
        free(v);
        free(blob);
        return r;
}

bool store_rollup_due(const struct store *s, int64_t timestamp_ms) {
        int64_t roll_to = timestamp_ms - timestamp_ms % STORE_MINUTE_MS;
        /* The newest buffered tick is not rolled up yet and its minute ended. */
        return s->buf.n_ticks > 0 && s->buf.ts[s->buf.n_ticks - 1] >= s->rolled_ms &&
               s->buf.ts[s->buf.n_ticks - 1] < roll_to;
}

int store_append(struct store *s, int64_t timestamp_ms, const double *values, const uint8_t *valid, size_t n) {
        int r = 0;

        if (n != s->buf.n_series || !s->buf.ts)
                return -EINVAL;
        if (s->buf.n_ticks > 0 && timestamp_ms <= s->buf.ts[s->buf.n_ticks - 1])
                return -EINVAL;
        if (tickbuf_push(&s->buf, timestamp_ms, values, valid) > 0) {
                pthread_mutex_lock(&s->stats_lock);
                s->stats.ticks_dropped++;
                pthread_mutex_unlock(&s->stats_lock);
        }
        s->ticks_seen++;

        /* While degraded, retry after 1, 2, 4 ... ticks, at most 64. */
        pthread_mutex_lock(&s->stats_lock);
        s->stats.newest_ms = timestamp_ms;
        bool wait = s->stats.degraded && s->ticks_seen < s->retry_at;
        r = s->stats.last_error;
        pthread_mutex_unlock(&s->stats_lock);
        if (wait)
                return r;

        r = s->db ? 0 : attach(s);
        if (r == 0)
                r = sync_ticks(s);
        pthread_mutex_lock(&s->stats_lock);
        s->stats.degraded = r < 0;
        s->stats.last_error = r;
        if (r < 0) {
                s->stats.write_errors++;
                s->retry_at = s->ticks_seen + s->backoff;
                s->backoff = s->backoff * 2 > BACKOFF_MAX_TICKS ? BACKOFF_MAX_TICKS : s->backoff * 2;
        } else {
                s->backoff = 1;
        }
        pthread_mutex_unlock(&s->stats_lock);
        return r;
}

void store_get_stats(struct store *s, struct history_stats *ret) {
        pthread_mutex_lock(&s->stats_lock);
        *ret = s->stats;
        pthread_mutex_unlock(&s->stats_lock);
        ret->raw_retention_ms = s->opt.raw_retention_ms;
        ret->minute_retention_ms = s->opt.minute_retention_ms;
        ret->hour_retention_ms = s->opt.hour_retention_ms;
        ret->size_cap_bytes = s->opt.size_cap_bytes;
}

int store_set_page_limit(struct store *s, int64_t max_pages) {
        char sql[64];
        if (!s->db)
                return -EAGAIN;
        snprintf(sql, sizeof(sql), "PRAGMA max_page_count = %lld",
                 (long long) (max_pages > 0 ? max_pages : 4294967294LL));
        return sql_exec(s->db, sql);
}
