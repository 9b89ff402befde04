#include "config.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "storage/chunk.h"
#include "storage/derive.h"
#include "storage/precision.h"
#include "storage/sql.h"
#include "storage/store-internal.h"

/* What a series costs of the budget besides its samples. */
#define SERIES_COST 64

enum {
        ST_SERIES,
        ST_HEAD,
        ST_HEAD_DELETE,
        ST_CHUNK,
        ST_MINUTES_PUT,
        ST_HOUR_PUT,
        ST_MINUTES_DELETE,
        ST_HOUR_DELETE,
        ST__COUNT,
};

static const char *const compact_sql[ST__COUNT] = {
        [ST_SERIES] = NULL, /* store_compact_order_sql() */
        [ST_HEAD] = "SELECT rowid, data FROM head WHERE series_id = ?1 AND start_ts >= ?2 AND start_ts < ?2 + 3600000 "
                    "ORDER BY start_ts",
        [ST_HEAD_DELETE] = "DELETE FROM head WHERE rowid = ?1",
        [ST_CHUNK] = STORE_HOUR_CHUNK,
        [ST_MINUTES_PUT] = STORE_PUT_MINUTES,
        [ST_HOUR_PUT] = "INSERT OR REPLACE INTO rollup_1h(series_id, ts, min, max, sum, count, last) "
                        "VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
        [ST_MINUTES_DELETE] = "DELETE FROM rollup_1m WHERE key = " STORE_MINUTES_KEY("?1", "?2"),
        [ST_HOUR_DELETE] = "DELETE FROM rollup_1h WHERE series_id = ?1 AND ts = ?2",
};

/* One compaction pass: statements and buffers for the samples of one
 * series and hour. */
struct compactor {
        sqlite3 *db;
        const struct tickbuf *registered; /* the series and their sources */
        sqlite3_stmt *st[ST__COUNT];
        sqlite3_stmt *st_dependents[METRIC__COUNT]; /* per derived family */
        size_t n, cap_ts, cap_v;
        int64_t *ts;
        double *v;
        int64_t *rowids; /* head rows merged */
        size_t n_rowids, cap_rowids;
        struct store_samples sources[DERIVE_SOURCES_MAX], hourly;
        struct store_packer packer;
};

static void compactor_done(struct compactor *c) {
        for (int i = 0; i < ST__COUNT; i++)
                sqlite3_finalize(c->st[i]);
        for (int m = 0; m < METRIC__COUNT; m++)
                sqlite3_finalize(c->st_dependents[m]);
        store_packer_close(&c->packer);
        free(c->ts);
        free(c->v);
        free(c->rowids);
        for (size_t j = 0; j < DERIVE_SOURCES_MAX; j++)
                store_samples_free(&c->sources[j]);
        store_samples_free(&c->hourly);
}

static int reserve(void **p, size_t *cap, size_t want, size_t size) {
        if (want <= *cap)
                return 0;
        size_t cap2 = want > 2 * *cap ? want : 2 * *cap;
        void *grown = realloc(*p, cap2 * size);
        if (!grown)
                return -ENOMEM;
        *p = grown;
        *cap = cap2;
        return 0;
}

static int add_samples(struct compactor *c, const int64_t *ts, const double *v, size_t n) {
        int r = reserve((void **) &c->ts, &c->cap_ts, c->n + n, sizeof(*c->ts));
        if (r == 0)
                r = reserve((void **) &c->v, &c->cap_v, c->n + n, sizeof(*c->v));
        if (r < 0)
                return r;
        memcpy(c->ts + c->n, ts, n * sizeof(*ts));
        memcpy(c->v + c->n, v, n * sizeof(*v));
        c->n += n;
        return 0;
}

/* Appends the samples of an encoded chunk; *ret_ok false when it does
 * not decode. */
static int add_chunk(struct compactor *c, const uint8_t *data, size_t size, bool *ret_ok) {
        int n = chunk_count(data, size, NULL);
        *ret_ok = false;
        if (n < 0)
                return 0;
        int r = reserve((void **) &c->ts, &c->cap_ts, c->n + (size_t) n, sizeof(*c->ts));
        if (r == 0)
                r = reserve((void **) &c->v, &c->cap_v, c->n + (size_t) n, sizeof(*c->v));
        if (r < 0)
                return r;
        n = chunk_decode(data, size, INT64_MAX, c->ts + c->n, (double *const[]){ c->v + c->n }, 1);
        if (n < 0)
                return 0;
        c->n += (size_t) n;
        *ret_ok = true;
        return 0;
}

/* store_read_hour() of chunks this pass may have written: one whose
 * bytes (or a source's) are still in the packer's last row reads as
 * damaged (the database has a shorter row, or none, there) until that row
 * is written. The bytes the database has are the row's start, never
 * others. */
static int read_hour(struct compactor *c, int64_t id, int64_t hour, struct store_samples *out) {
        int n = store_read_hour(c->st[ST_CHUNK], id, hour, out);
        if (n != -EBADMSG || !c->packer.dirty)
                return n;
        int r = store_packer_flush(&c->packer);
        return r < 0 ? r : store_read_hour(c->st[ST_CHUNK], id, hour, out);
}

/* The series' chunk of the hour from an earlier compaction (a restart or
 * a clock set back brought more samples to the hour), which may be
 * derived. */
static int add_hourly(struct compactor *c, int64_t id, int64_t hour) {
        int n = read_hour(c, id, hour, &c->hourly);
        /* None, or one that does not decode: it is replaced. */
        if (n == -ENOENT || n == -EBADMSG)
                return 0;
        return n < 0 ? n : add_samples(c, c->hourly.ts, c->hourly.v, (size_t) n);
}

/* Before a series' chunk of an hour is rewritten (a restart or a clock
 * set back brought more samples for an hour already compacted): the
 * chunks of that hour derived from it are rewritten as ordinary ones,
 * decoded while it is unchanged. Those that have new samples too come
 * later (a higher rank) and are derived again from what it has become. */
static int underive_dependents(struct compactor *c, int64_t id, int metric, int64_t hour) {
        int r = 0;
        for (int d = 0; d < METRIC__COUNT && r == 0 && metric >= 0; d++) {
                if (metric_table[d].derive == DERIVE_NONE || (int) metric_table[d].derived_from != metric)
                        continue;
                int64_t *ids = NULL;
                size_t n_ids = 0;
                r = store_find_dependents(c->db, &c->st_dependents[d], d, id, &ids, &n_ids);
                for (size_t j = 0; j < n_ids && r == 0; j++) {
                        struct store_samples *dep = &c->sources[0];
                        int n = read_hour(c, ids[j], hour, dep);
                        if (n == -ENOENT || n == -EBADMSG)
                                continue;
                        uint8_t *data = NULL;
                        size_t size = 0;
                        r = n < 0 ? n
                                  : chunk_encode(dep->ts, (const double *const[]){ dep->v }, 1, dep->n, &data, &size);
                        if (r == 0)
                                r = store_put_hourly(&c->packer, ids[j], hour, data, size, dep->ts[0],
                                                     dep->ts[dep->n - 1], dep->n);
                        free(data);
                }
                free(ids);
        }
        return r;
}

/* The hour's chunk of a series: derived from its sources' chunks of the
 * hour (compacted before it: lower rank) when its family has a
 * derivation and that chunk is smaller, else an ordinary one. */
static int encode_hour(struct compactor *c, int64_t id, int metric, int64_t hour, uint8_t **data, size_t *size) {
        int r = chunk_encode(c->ts, (const double *const[]){ c->v }, 1, c->n, data, size);
        if (r < 0 || metric < 0 || metric_table[metric].derive == DERIVE_NONE)
                return r;
        size_t n_ids = 0;
        const int64_t *ids = store_sources_of(c->registered, id, &n_ids);
        struct derive_source views[DERIVE_SOURCES_MAX];
        if (n_ids == 0)
                return 0;
        for (size_t j = 0; j < n_ids; j++) {
                int n = read_hour(c, ids[j], hour, &c->sources[j]);
                if (n < 0)
                        return n == -ENOENT || n == -EBADMSG ? 0 : n;
                views[j] = (struct derive_source){ c->sources[j].ts, c->sources[j].v, c->sources[j].n };
        }
        uint8_t *derived = NULL;
        size_t derived_size = 0;
        r = derive_encode(metric_table[metric].derive, ids, views, n_ids, c->ts, c->v, c->n, &derived, &derived_size);
        if (r == -EDOM)
                return 0;
        if (r == 0 && derived_size < *size) {
                free(*data);
                *data = derived;
                *size = derived_size;
                return 0;
        }
        free(derived);
        return r;
}

int store_put_chunk(sqlite3_stmt *st, int64_t series_id, int64_t key, const uint8_t *data, size_t size, int64_t first,
                    int64_t last, size_t count) {
        sqlite3_bind_int64(st, 1, series_id);
        sqlite3_bind_int64(st, 2, key);
        sqlite3_bind_blob(st, 3, data, (int) size, SQLITE_STATIC);
        sqlite3_bind_int64(st, 4, first);
        sqlite3_bind_int64(st, 5, last);
        sqlite3_bind_int64(st, 6, (int64_t) count);
        int r = sql_step_done(st);
        sqlite3_clear_bindings(st);
        return r;
}

struct stamped {
        int64_t ts;
        size_t at;
};

static int stamped_cmp(const void *a, const void *b) {
        const struct stamped *x = a, *y = b;
        if (x->ts != y->ts)
                return x->ts < y->ts ? -1 : 1;
        return x->at < y->at ? -1 : x->at > y->at;
}

int store_sort_samples(int64_t *ts, double *v, size_t *n) {
        bool sorted = true;
        for (size_t i = 1; i < *n && sorted; i++)
                sorted = ts[i] > ts[i - 1];
        if (sorted)
                return 0;
        struct stamped *order = malloc(*n * sizeof(*order));
        double *kept = malloc(*n * sizeof(*kept));
        if (!order || !kept) {
                free(order);
                free(kept);
                return -ENOMEM;
        }
        for (size_t i = 0; i < *n; i++)
                order[i] = (struct stamped){ .ts = ts[i], .at = i };
        qsort(order, *n, sizeof(*order), stamped_cmp);
        size_t k = 0;
        for (size_t i = 0; i < *n; i++) {
                if (i + 1 < *n && order[i + 1].ts == order[i].ts)
                        continue;
                ts[k] = order[i].ts;
                kept[k++] = v[order[i].at];
        }
        memcpy(v, kept, k * sizeof(*kept));
        *n = k;
        free(order);
        free(kept);
        return 0;
}

static int delete_key(sqlite3_stmt *st, int64_t id, int64_t hour) {
        sqlite3_bind_int64(st, 1, id);
        sqlite3_bind_int64(st, 2, hour);
        return sql_step_done(st);
}

int store_put_minutes(sqlite3_stmt *st, int64_t series_id, int64_t hour, const int64_t *ts,
                      const struct rollup_cell *cells, size_t n) {
        uint8_t *data = NULL;
        size_t size = 0;
        int64_t count = 0;
        for (size_t i = 0; i < n; i++)
                count += cells[i].count;
        int r = rollup_encode(ts, cells, n, &data, &size);
        if (r < 0)
                return r;
        sqlite3_bind_int64(st, 1, series_id);
        sqlite3_bind_int64(st, 2, hour);
        sqlite3_bind_blob(st, 3, data, (int) size, SQLITE_STATIC);
        sqlite3_bind_int64(st, 4, (int64_t) n);
        sqlite3_bind_int64(st, 5, count);
        r = sql_step_done(st);
        sqlite3_clear_bindings(st);
        free(data);
        return r;
}

/* The rollups of the hour from its samples: a cell per minute that has
 * samples, and one for the hour. Sums of gauges are kept as their samples
 * are (storage/precision.h). */
static int write_rollups(struct compactor *c, int64_t id, bool gauge, int64_t hour) {
        int64_t minutes[60];
        struct rollup_cell cells[60], whole = { 0 };
        size_t n = 0;
        int r;

        memset(cells, 0, sizeof(cells));
        for (size_t i = 0; i < c->n; i++) {
                size_t m = (size_t) ((c->ts[i] - hour) / STORE_MINUTE_MS);
                rollup_cell_add(&cells[m], c->v[i]);
                rollup_cell_add(&whole, c->v[i]);
        }
        for (size_t m = 0; m < 60; m++) {
                if (cells[m].count == 0)
                        continue;
                if (gauge)
                        cells[m].sum = precision_round_gauge(cells[m].sum);
                minutes[n] = hour + (int64_t) m * STORE_MINUTE_MS;
                cells[n++] = cells[m];
        }
        if (n == 0) {
                r = delete_key(c->st[ST_MINUTES_DELETE], id, hour);
                return r < 0 ? r : delete_key(c->st[ST_HOUR_DELETE], id, hour);
        }
        r = store_put_minutes(c->st[ST_MINUTES_PUT], id, hour, minutes, cells, n);
        if (r < 0)
                return r;
        if (gauge)
                whole.sum = precision_round_gauge(whole.sum);
        sqlite3_stmt *st = c->st[ST_HOUR_PUT];
        sqlite3_bind_int64(st, 1, id);
        sqlite3_bind_int64(st, 2, hour);
        sqlite3_bind_double(st, 3, whole.min);
        sqlite3_bind_double(st, 4, whole.max);
        sqlite3_bind_double(st, 5, whole.sum);
        sqlite3_bind_int64(st, 6, whole.count);
        sqlite3_bind_double(st, 7, whole.last);
        return sql_step_done(st);
}

/* Merges the head chunks of one series in one hour into its chunk of the
 * hour and computes the hour's rollups. A head chunk that does not decode
 * stays where it is. *ret_samples: the samples merged (0 when the series
 * had no head chunk in the hour). */
static int compact_series(struct compactor *c, int64_t id, int metric, int64_t hour, size_t *ret_samples) {
        bool gauge = metric >= 0 && metric_table[metric].type == METRIC_GAUGE, ok;
        int rc, r;

        c->n = c->n_rowids = 0;
        r = add_hourly(c, id, hour);
        bool compacted_before = c->n > 0;

        sqlite3_stmt *st = c->st[ST_HEAD];
        sqlite3_bind_int64(st, 1, id);
        sqlite3_bind_int64(st, 2, hour);
        while (r == 0 && (rc = sqlite3_step(st)) == SQLITE_ROW) {
                r = add_chunk(c, sqlite3_column_blob(st, 1), (size_t) sqlite3_column_bytes(st, 1), &ok);
                if (r == 0 && ok)
                        r = reserve((void **) &c->rowids, &c->cap_rowids, c->n_rowids + 1, sizeof(*c->rowids));
                if (r == 0 && ok)
                        c->rowids[c->n_rowids++] = sqlite3_column_int64(st, 0);
        }
        if (r == 0 && rc != SQLITE_DONE)
                r = sql_errno(rc);
        sqlite3_reset(st);
        *ret_samples = 0;
        if (r < 0 || c->n_rowids == 0)
                return r;

        r = store_sort_samples(c->ts, c->v, &c->n);
        if (r == 0 && compacted_before)
                r = underive_dependents(c, id, metric, hour);
        uint8_t *data = NULL;
        size_t size = 0;
        if (r == 0 && c->n > 0)
                r = encode_hour(c, id, metric, hour, &data, &size);
        if (r == 0 && c->n > 0)
                r = store_put_hourly(&c->packer, id, hour, data, size, c->ts[0], c->ts[c->n - 1], c->n);
        free(data);
        for (size_t i = 0; i < c->n_rowids && r == 0; i++) {
                sqlite3_bind_int64(c->st[ST_HEAD_DELETE], 1, c->rowids[i]);
                r = sql_step_done(c->st[ST_HEAD_DELETE]);
        }
        if (r == 0)
                r = write_rollups(c, id, gauge, hour);
        if (r == 0)
                *ret_samples = c->n;
        return r;
}

static int oldest_pending(struct store *s, int64_t *ret) {
        sqlite3_stmt *st = NULL;
        int r = sql_prepare(s->db, "SELECT hour FROM pending ORDER BY hour LIMIT 1", &st);
        if (r < 0)
                return r;
        int rc = sqlite3_step(st);
        if (rc == SQLITE_ROW)
                *ret = sqlite3_column_int64(st, 0);
        else if (rc == SQLITE_DONE)
                *ret = INT64_MIN;
        else
                r = sql_errno(rc);
        sqlite3_finalize(st);
        return r;
}

static int finish_hour(struct store *s, int64_t hour) {
        sqlite3_stmt *st = NULL;
        int r = sql_prepare(s->db, "DELETE FROM pending WHERE hour = ?1", &st);
        if (r == 0) {
                sqlite3_bind_int64(st, 1, hour);
                r = sql_step_done(st);
        }
        sqlite3_finalize(st);
        return r;
}

int store_compact(struct store *s, int64_t before_ms, size_t budget, bool *ret_more) {
        struct compactor c = { 0 };
        size_t spent = 0;
        bool more = false, prepared = false;
        int r = 0;

        while (r == 0) {
                if (s->compact_hour == INT64_MIN) {
                        int64_t hour = INT64_MIN;
                        r = oldest_pending(s, &hour);
                        if (r < 0 || hour == INT64_MIN || hour > before_ms - STORE_HOUR_MS)
                                break;
                        s->compact_hour = hour;
                        s->compact_next_rank = 0;
                        s->compact_next_id = INT64_MIN;
                }
                if (spent >= budget) {
                        more = true;
                        break;
                }
                if (!prepared) {
                        char order_sql[1024];
                        c.db = s->db;
                        c.registered = &s->buf;
                        r = store_compact_order_sql(order_sql, sizeof(order_sql));
                        if (r == 0)
                                r = sql_prepare(s->db, order_sql, &c.st[ST_SERIES]);
                        for (int i = 0; i < ST__COUNT && r == 0; i++)
                                if (compact_sql[i])
                                        r = sql_prepare(s->db, compact_sql[i], &c.st[i]);
                        if (r == 0)
                                r = store_packer_open(&c.packer, s->db);
                        prepared = true;
                }
                if (r < 0)
                        break;
                sqlite3_stmt *series = c.st[ST_SERIES];
                size_t visited = 0;
                int rc = SQLITE_DONE;
                sqlite3_bind_int64(series, 1, s->compact_next_rank);
                sqlite3_bind_int64(series, 2, s->compact_next_id);
                while (r == 0 && spent < budget && (rc = sqlite3_step(series)) == SQLITE_ROW) {
                        int64_t id = sqlite3_column_int64(series, 0);
                        int m = metric_lookup((const char *) sqlite3_column_text(series, 1));
                        size_t samples = 0;
                        r = compact_series(&c, id, m, s->compact_hour, &samples);
                        spent += samples + SERIES_COST;
                        s->compact_next_rank = sqlite3_column_int64(series, 2);
                        s->compact_next_id = id + 1;
                        visited++;
                }
                if (r == 0 && rc != SQLITE_DONE && rc != SQLITE_ROW)
                        r = sql_errno(rc);
                sqlite3_reset(series);
                /* Past the last series: the hour is done. */
                if (r == 0 && visited == 0) {
                        r = finish_hour(s, s->compact_hour);
                        s->compact_hour = INT64_MIN;
                }
        }
        if (r == 0)
                r = store_packer_flush(&c.packer);
        compactor_done(&c);
        if (r == 0 && ret_more)
                *ret_more = more;
        return r;
}
