#include "config.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "storage/chunk.h"
#include "storage/derive.h"
#include "storage/sql.h"
#include "storage/store-internal.h"

/* Queries run on the read connection under read_lock, inside one read
 * transaction: every table is seen as of one moment. */

enum tier {
        TIER_RAW,
        TIER_MINUTE,
        TIER_HOUR,
};

static const int64_t tier_res[] = { 1, STORE_MINUTE_MS, STORE_HOUR_MS };

static enum tier pick_tier(const struct store *s, const struct history_query *q) {
        struct history_stats st;
        store_get_stats((struct store *) s, &st);
        int64_t now = st.newest_ms > 0 ? st.newest_ms : q->end_ms;
        const int64_t keep[] = { s->opt.raw_retention_ms, s->opt.minute_retention_ms, s->opt.hour_retention_ms };
        bool covers[3];
        for (int t = 0; t < 3; t++)
                covers[t] = q->start_ms >= now - keep[t];
        for (int t = TIER_HOUR; t > TIER_RAW; t--)
                if (covers[t] && q->step_ms % tier_res[t] == 0)
                        return (enum tier) t;
        if (covers[TIER_RAW])
                return TIER_RAW;
        for (int t = TIER_MINUTE; t <= TIER_HOUR; t++)
                if (covers[t] && tier_res[t] <= q->step_ms)
                        return (enum tier) t;
        for (int t = TIER_HOUR; t > TIER_RAW; t--)
                if (tier_res[t] <= q->step_ms)
                        return (enum tier) t;
        return TIER_RAW;
}

/* Step-aligned buckets over the window, and the rate state. What is fed
 * comes with a key: a raw sample's time, on the rollup tiers the start of
 * its period (a rollup cell's, or a raw sample's of an hour not rolled up
 * yet). It counts when its key is in [start, end], in the bucket holding
 * the key: a period is never split, so the answer is the same before and
 * after its hour is rolled up. */
struct agg {
        const struct history_query *q;
        int64_t first; /* start of bucket 0 */
        struct rollup_cell *cells;
        bool have_prev;
        int64_t prev_ts;
        double prev_v;
        /* The bucket the last cell went to and the keys that go there, its
         * part of [start, end] as [bucket_start, bucket_end): cells come in
         * time order, many to a bucket, so a division is needed only when
         * one leaves it. */
        size_t bucket;
        int64_t bucket_start, bucket_end;
};

static inline void agg_cell(struct agg *a, int64_t key, const struct rollup_cell *c) {
        if (key < a->bucket_start || key >= a->bucket_end) {
                if (key < a->q->start_ms || key > a->q->end_ms)
                        return;
                size_t b = (size_t) ((key - a->first) / a->q->step_ms);
                a->bucket = b;
                a->bucket_start = a->first + (int64_t) b * a->q->step_ms;
                a->bucket_end = a->bucket_start + a->q->step_ms;
                if (a->bucket_start < a->q->start_ms)
                        a->bucket_start = a->q->start_ms;
                if (a->bucket_end > a->q->end_ms)
                        a->bucket_end = a->q->end_ms + 1;
        }
        rollup_cell_merge(&a->cells[a->bucket], c);
}

/* One sample (ts ascending) under key. With rate, the increase since the
 * previous sample per second, a drop counting as a reset to zero: samples
 * before start (whose keys do not count) still give the next one its
 * rate. */
static void agg_sample(struct agg *a, int64_t ts, int64_t key, double v) {
        struct rollup_cell c = { 0 };
        if (a->q->rate) {
                if (isnan(v))
                        return;
                bool have = a->have_prev && ts > a->prev_ts;
                double inc = v >= a->prev_v ? v - a->prev_v : v;
                double seconds = (double) (ts - a->prev_ts) / 1000.0;
                a->have_prev = true;
                a->prev_ts = ts;
                a->prev_v = v;
                if (!have)
                        return;
                v = inc / seconds;
        }
        rollup_cell_add(&c, v);
        agg_cell(a, key, &c);
}

/* The open chunk span's ticks (recent rows), each cut down to the entries
 * of the series ids the query reads: entries sorted by id. */
struct recent_tick {
        int64_t ts;
        size_t at, n; /* entries in reader.recent_entries */
};

/* What a query reads with: statements prepared once, decode buffers, the
 * hours not yet rolled up and the open span. */
struct reader {
        struct store *s;
        const struct history_query *q;
        enum tier tier;
        int64_t from, to; /* what is read: the window's periods, and the step before with rate */
        unsigned columns; /* rollup columns the aggregate needs */
        sqlite3_stmt *chunks, *head, *rollups, *hour_chunk;
        struct store_samples derived; /* a derived chunk's samples */
        size_t cap;
        int64_t *ts;
        double *col[ROLLUP__COLUMNS];
        int64_t *pending;
        size_t n_pending;
        struct recent_tick *recent;
        size_t n_recent;
        uint8_t *recent_entries;
};

static void reader_done(struct reader *rd) {
        sqlite3_finalize(rd->chunks);
        sqlite3_finalize(rd->head);
        sqlite3_finalize(rd->rollups);
        sqlite3_finalize(rd->hour_chunk);
        store_samples_free(&rd->derived);
        free(rd->ts);
        for (int c = 0; c < ROLLUP__COLUMNS; c++)
                free(rd->col[c]);
        free(rd->pending);
        free(rd->recent);
        free(rd->recent_entries);
}

static int reader_reserve(struct reader *rd, size_t n) {
        if (n <= rd->cap)
                return 0;
        free(rd->ts);
        rd->ts = malloc(n * sizeof(*rd->ts));
        bool ok = rd->ts != NULL;
        for (int c = 0; c < ROLLUP__COLUMNS; c++) {
                free(rd->col[c]);
                /* Zeroed: the columns a query does not decode are still merged
                 * (and ignored), and must not be read uninitialized. */
                rd->col[c] = calloc(n, sizeof(*rd->col[c]));
                ok = ok && rd->col[c];
        }
        rd->cap = ok ? n : 0;
        return ok ? 0 : -ENOMEM;
}

static void bind_range(sqlite3_stmt *st, int64_t id, int64_t from, int64_t to) {
        sqlite3_reset(st);
        sqlite3_bind_int64(st, 1, id);
        sqlite3_bind_int64(st, 2, from);
        sqlite3_bind_int64(st, 3, to);
}

/* A raw sample's key: itself on the raw tier, its period's start on the
 * rollup tiers. */
static inline int64_t raw_key(const struct reader *rd, int64_t ts) {
        return rd->tier == TIER_RAW ? ts : ts - ts % tier_res[rd->tier];
}

/* Feeds the samples of one raw chunk of the hour in [from, to]. */
static int feed_chunk(struct reader *rd, struct agg *a, int64_t hour, const uint8_t *data, size_t size, int64_t from,
                      int64_t to) {
        if (derive_is(data, size)) {
                int n = store_decode_raw(rd->hour_chunk, hour, data, size, &rd->derived);
                for (int i = 0; i < n && rd->derived.ts[i] <= to; i++)
                        if (rd->derived.ts[i] >= from)
                                agg_sample(a, rd->derived.ts[i], raw_key(rd, rd->derived.ts[i]), rd->derived.v[i]);
                return n < 0 ? n : 0;
        }
        int n = chunk_count(data, size, NULL);
        int r = n < 0 ? n : reader_reserve(rd, (size_t) n);
        if (r < 0)
                return r;
        n = chunk_decode(data, size, to, rd->ts, rd->col, 1);
        if (n < 0)
                return n;
        for (int i = 0; i < n; i++)
                if (rd->ts[i] >= from)
                        agg_sample(a, rd->ts[i], raw_key(rd, rd->ts[i]), rd->col[0][i]);
        return 0;
}

/* Raw samples of one series in [from, to]: its hourly chunks and head
 * chunks in time order (one indexed range scan of each table; no chunk
 * crosses an hour), then the open span. */
static int read_raw(struct reader *rd, int64_t id, struct agg *a, int64_t from, int64_t to) {
        int64_t lo = store_hour_of(from);
        int rc_chunk, rc_head, r = 0;

        bind_range(rd->chunks, id, lo, to);
        bind_range(rd->head, id, lo, to);
        rc_chunk = sqlite3_step(rd->chunks);
        rc_head = sqlite3_step(rd->head);
        while (r == 0 && (rc_chunk == SQLITE_ROW || rc_head == SQLITE_ROW)) {
                bool chunk_first = rc_chunk == SQLITE_ROW &&
                                   (rc_head != SQLITE_ROW ||
                                    sqlite3_column_int64(rd->chunks, 0) <= sqlite3_column_int64(rd->head, 0));
                sqlite3_stmt *st = chunk_first ? rd->chunks : rd->head;
                r = feed_chunk(rd, a, store_hour_of(sqlite3_column_int64(st, 0)), sqlite3_column_blob(st, 1),
                               (size_t) sqlite3_column_bytes(st, 1), from, to);
                if (chunk_first)
                        rc_chunk = sqlite3_step(rd->chunks);
                else
                        rc_head = sqlite3_step(rd->head);
        }
        if (r == 0 && rc_chunk != SQLITE_DONE && rc_chunk != SQLITE_ROW)
                r = sql_errno(rc_chunk);
        if (r == 0 && rc_head != SQLITE_DONE && rc_head != SQLITE_ROW)
                r = sql_errno(rc_head);
        sqlite3_reset(rd->chunks);
        sqlite3_reset(rd->head);
        for (size_t t = 0; t < rd->n_recent && r == 0; t++) {
                const struct recent_tick *tick = &rd->recent[t];
                if (tick->n == 0 || tick->ts < from || tick->ts > to)
                        continue; /* (a tick with no entries may have no array to point into) */
                const uint8_t *entries = rd->recent_entries + tick->at * STORE_RECENT_ENTRY;
                size_t lo_e = 0, hi_e = tick->n;
                while (lo_e < hi_e) {
                        size_t mid = lo_e + (hi_e - lo_e) / 2;
                        int64_t got = store_recent_id(entries + mid * STORE_RECENT_ENTRY);
                        if (got == id) {
                                agg_sample(a, tick->ts, raw_key(rd, tick->ts),
                                           store_recent_value(entries + mid * STORE_RECENT_ENTRY));
                                break;
                        }
                        if (got < id)
                                lo_e = mid + 1;
                        else
                                hi_e = mid;
                }
        }
        return r;
}

/* One rollup cell (period start ts, res long) into the buckets, keyed by
 * its start. A rate from rollups takes the last value of each period,
 * timed at the period's end (about where its last sample is); a minimum
 * below the previous last shows a reset inside the period. */
static void feed_cell(struct agg *a, int64_t ts, int64_t res, const struct rollup_cell *c) {
        if (c->count <= 0)
                return;
        if (!a->q->rate) {
                agg_cell(a, ts, c);
                return;
        }
        if (a->have_prev && c->min < a->prev_v && c->last >= a->prev_v)
                a->prev_v = 0;
        agg_sample(a, ts + res, ts, c->last);
}

/* Rolled-up cells of one series whose periods start in [from, to]. */
static int read_rollups(struct reader *rd, int64_t id, struct agg *a, int64_t from, int64_t to) {
        int64_t res = tier_res[rd->tier];
        int rc, r = 0;

        bind_range(rd->rollups, id, rd->tier == TIER_MINUTE ? store_hour_of(from) : from, to);
        while (r == 0 && (rc = sqlite3_step(rd->rollups)) == SQLITE_ROW) {
                if (rd->tier == TIER_HOUR) {
                        struct rollup_cell c = {
                                .min = sqlite3_column_double(rd->rollups, 1),
                                .max = sqlite3_column_double(rd->rollups, 2),
                                .sum = sqlite3_column_double(rd->rollups, 3),
                                .count = sqlite3_column_int64(rd->rollups, 4),
                                .last = sqlite3_column_double(rd->rollups, 5),
                        };
                        feed_cell(a, sqlite3_column_int64(rd->rollups, 0), res, &c);
                        continue;
                }
                const uint8_t *data = sqlite3_column_blob(rd->rollups, 1);
                size_t size = (size_t) sqlite3_column_bytes(rd->rollups, 1);
                int n = chunk_count(data, size, NULL);
                r = n < 0 ? n : reader_reserve(rd, (size_t) n);
                if (r == 0)
                        n = chunk_decode(data, size, to, rd->ts, rd->col, rd->columns);
                if (r == 0 && n < 0)
                        r = n;
                const double *min = rd->col[ROLLUP_MIN], *max = rd->col[ROLLUP_MAX], *sum = rd->col[ROLLUP_SUM],
                             *count = rd->col[ROLLUP_COUNT], *last = rd->col[ROLLUP_LAST];
                for (int i = 0; r == 0 && i < n; i++) {
                        if (rd->ts[i] < from)
                                continue;
                        /* Only the columns decoded are read by the aggregate. */
                        struct rollup_cell c = { .min = min[i],
                                                 .max = max[i],
                                                 .sum = sum[i],
                                                 .count = (int64_t) count[i],
                                                 .last = last[i] };
                        if (a->q->rate)
                                feed_cell(a, rd->ts[i], res, &c);
                        else
                                agg_cell(a, rd->ts[i], &c);
                }
        }
        if (r == 0 && rc != SQLITE_DONE && rc != SQLITE_ROW)
                r = sql_errno(rc);
        sqlite3_reset(rd->rollups);
        return r;
}

/* A rollup tier's window in time order: rolled-up hours from the rollups,
 * hours still pending from their raw samples. */
static int read_tier(struct reader *rd, int64_t id, struct agg *a, int64_t from, int64_t to) {
        int64_t cursor = from;
        int r = 0;
        for (size_t p = 0; p < rd->n_pending && r == 0; p++) {
                int64_t hour = rd->pending[p];
                if (hour + STORE_HOUR_MS <= cursor || hour > to)
                        continue;
                if (hour > cursor)
                        r = read_rollups(rd, id, a, cursor, hour - 1);
                if (r == 0)
                        r = read_raw(rd, id, a, hour > cursor ? hour : cursor,
                                     hour + STORE_HOUR_MS - 1 < to ? hour + STORE_HOUR_MS - 1 : to);
                cursor = hour + STORE_HOUR_MS;
        }
        if (r == 0 && cursor <= to)
                r = read_rollups(rd, id, a, cursor, to);
        return r;
}

static int read_points(struct reader *rd, int64_t id, struct rollup_cell *cells, size_t n_buckets,
                       struct history_series *out) {
        const struct history_query *q = rd->q;
        struct agg a = {
                .q = q,
                .first = q->start_ms - q->start_ms % q->step_ms,
                .cells = cells,
        };
        int r;

        memset(cells, 0, n_buckets * sizeof(*cells));
        if (rd->tier == TIER_RAW)
                r = read_raw(rd, id, &a, rd->from, rd->to);
        else
                r = read_tier(rd, id, &a, rd->from, rd->to);
        if (r < 0)
                return r;
        size_t n = 0;
        for (size_t b = 0; b < n_buckets; b++)
                n += cells[b].count > 0;
        if (n == 0)
                return 0;
        out->points = calloc(n, sizeof(*out->points));
        if (!out->points)
                return -ENOMEM;
        for (size_t b = 0; b < n_buckets; b++)
                if (cells[b].count > 0)
                        out->points[out->n_points++] = (struct history_point){
                                .timestamp_ms = a.first + (int64_t) b * q->step_ms,
                                .value = rollup_cell_value(&cells[b], q->agg),
                        };
        return 0;
}

static int add_hour(struct reader *rd, size_t *cap, int64_t hour) {
        for (size_t i = 0; i < rd->n_pending; i++)
                if (rd->pending[i] == hour)
                        return 0;
        if (rd->n_pending == *cap) {
                *cap = *cap ? 2 * *cap : 4;
                int64_t *grown = realloc(rd->pending, *cap * sizeof(*grown));
                if (!grown)
                        return -ENOMEM;
                rd->pending = grown;
        }
        /* Kept in order: insertion into a list of a few hours. */
        size_t at = rd->n_pending++;
        for (; at > 0 && rd->pending[at - 1] > hour; at--)
                rd->pending[at] = rd->pending[at - 1];
        rd->pending[at] = hour;
        return 0;
}

/* The hours in [from, to] not rolled up yet: pending ones, and those of
 * the open span (its hour becomes pending with its first head chunk). */
static int load_pending(struct reader *rd, int64_t from, int64_t to) {
        sqlite3_stmt *st = NULL;
        size_t cap = 0;
        int rc, r = sql_prepare(rd->s->read_db, "SELECT hour FROM pending WHERE hour >= ?1 AND hour <= ?2", &st);
        if (r < 0)
                return r;
        sqlite3_bind_int64(st, 1, store_hour_of(from));
        sqlite3_bind_int64(st, 2, to);
        while (r == 0 && (rc = sqlite3_step(st)) == SQLITE_ROW)
                r = add_hour(rd, &cap, sqlite3_column_int64(st, 0));
        if (r == 0 && rc != SQLITE_DONE)
                r = sql_errno(rc);
        sqlite3_finalize(st);
        for (size_t t = 0; t < rd->n_recent && r == 0; t++)
                r = add_hour(rd, &cap, store_hour_of(rd->recent[t].ts));
        return r;
}

/* The open span's ticks in [from, to], each cut to the entries with ids
 * in [id_lo, id_hi]: one pass over recent for the whole query. */
static int load_recent(struct reader *rd, int64_t from, int64_t to, int64_t id_lo, int64_t id_hi) {
        sqlite3_stmt *st = NULL;
        size_t cap = 0, cap_entries = 0, n_entries = 0;
        int rc, r = sql_prepare(rd->s->read_db, "SELECT ts, data FROM recent WHERE ts >= ?1 AND ts <= ?2 ORDER BY ts",
                                &st);
        if (r < 0)
                return r;
        sqlite3_bind_int64(st, 1, from);
        sqlite3_bind_int64(st, 2, to);
        while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
                const uint8_t *p = sqlite3_column_blob(st, 1);
                size_t entries = (size_t) sqlite3_column_bytes(st, 1) / STORE_RECENT_ENTRY, lo = 0, hi = entries;
                /* The first entry at or past id_lo, and past id_hi. */
                while (lo < hi) {
                        size_t mid = lo + (hi - lo) / 2;
                        if ((int64_t) store_recent_id(p + mid * STORE_RECENT_ENTRY) < id_lo)
                                lo = mid + 1;
                        else
                                hi = mid;
                }
                size_t end = lo;
                hi = entries;
                while (end < hi) {
                        size_t mid = end + (hi - end) / 2;
                        if ((int64_t) store_recent_id(p + mid * STORE_RECENT_ENTRY) <= id_hi)
                                end = mid + 1;
                        else
                                hi = mid;
                }
                if (rd->n_recent == cap) {
                        cap = cap ? 2 * cap : 64;
                        struct recent_tick *grown = realloc(rd->recent, cap * sizeof(*grown));
                        if (!grown) {
                                r = -ENOMEM;
                                break;
                        }
                        rd->recent = grown;
                }
                if (n_entries + (end - lo) > cap_entries) {
                        cap_entries = 2 * (n_entries + (end - lo));
                        uint8_t *grown = realloc(rd->recent_entries, cap_entries * STORE_RECENT_ENTRY);
                        if (!grown) {
                                r = -ENOMEM;
                                break;
                        }
                        rd->recent_entries = grown;
                }
                if (end > lo)
                        memcpy(rd->recent_entries + n_entries * STORE_RECENT_ENTRY, p + lo * STORE_RECENT_ENTRY,
                               (end - lo) * STORE_RECENT_ENTRY);
                rd->recent[rd->n_recent++] =
                        (struct recent_tick){ .ts = sqlite3_column_int64(st, 0), .at = n_entries, .n = end - lo };
                n_entries += end - lo;
        }
        if (r == 0 && rc != SQLITE_DONE)
                r = sql_errno(rc);
        sqlite3_finalize(st);
        return r;
}

static int reader_open(struct reader *rd, int64_t from, int64_t to, int64_t id_lo, int64_t id_hi) {
        static const char *const rollup_sql[] = {
                [TIER_MINUTE] = "SELECT hour, data FROM rollup_1m WHERE key >= " STORE_MINUTES_KEY(
                        "?1", "?2") " AND "
                                    "key <= " STORE_MINUTES_KEY("?1", "?3") " ORDER BY key",
                [TIER_HOUR] = "SELECT ts, min, max, sum, count, last FROM rollup_1h "
                              "WHERE series_id = ?1 AND ts >= ?2 AND ts <= ?3 ORDER BY ts",
        };
        sqlite3 *db = rd->s->read_db;
        int r = sql_prepare(db,
                            "SELECT hour, chunk_bytes(hour, at, size) FROM chunks WHERE series_id = ?1 AND hour >= ?2 "
                            "AND hour <= ?3 "
                            "ORDER BY hour",
                            &rd->chunks);
        if (r == 0)
                r = sql_prepare(db,
                                "SELECT start_ts, data FROM head WHERE series_id = ?1 AND start_ts >= ?2 "
                                "AND start_ts <= ?3 ORDER BY start_ts",
                                &rd->head);
        if (r == 0)
                r = sql_prepare(db, STORE_HOUR_CHUNK, &rd->hour_chunk);
        if (r == 0 && rd->tier != TIER_RAW)
                r = sql_prepare(db, rollup_sql[rd->tier], &rd->rollups);
        if (r == 0)
                r = load_recent(rd, from, to, id_lo, id_hi);
        if (r == 0 && rd->tier != TIER_RAW)
                r = load_pending(rd, from, to);
        return r;
}

static bool series_matches(const struct series_desc *d, const struct history_matcher *matchers, size_t n) {
        const struct metric_desc *m = &metric_table[d->metric];
        for (size_t i = 0; i < n; i++) {
                int idx = metric_label_index(m, matchers[i].name);
                if (idx < 0 || strcmp(d->label_values[idx], matchers[i].value) != 0)
                        return false;
        }
        return true;
}

/* Reads every series row into the cache when the table changed since it
 * was last read; the caller holds read_lock. */
static int cache_refresh(struct store *s) {
        uint64_t generation = atomic_load(&s->series_generation);
        sqlite3_stmt *st = NULL, *label = NULL;
        struct series_cache c = { .generation = generation };
        size_t cap = 0;
        int rc = SQLITE_DONE;

        if (s->cache.ids && s->cache.generation == generation)
                return 0;
        int r = sql_prepare(s->read_db, "SELECT id, metric, labels FROM series ORDER BY id", &st);
        if (r == 0)
                r = sql_prepare(s->read_db, "SELECT json_extract(?1, '$.' || ?2)", &label);
        while (r == 0 && (rc = sqlite3_step(st)) == SQLITE_ROW) {
                int m = metric_lookup((const char *) sqlite3_column_text(st, 1));
                if (m < 0)
                        continue;
                struct series_desc d = { .metric = (enum metric_id) m };
                const struct metric_desc *md = &metric_table[m];
                for (size_t i = 0; i < metric_label_count(md); i++) {
                        sqlite3_bind_value(label, 1, sqlite3_column_value(st, 2));
                        sqlite3_bind_text(label, 2, md->labels[i], -1, SQLITE_STATIC);
                        if (sqlite3_step(label) == SQLITE_ROW) {
                                const unsigned char *v = sqlite3_column_text(label, 0);
                                snprintf(d.label_values[i], sizeof(d.label_values[i]), "%s", v ? (const char *) v : "");
                        }
                        sqlite3_reset(label);
                }
                if (c.n == cap) {
                        cap = cap ? 2 * cap : 64;
                        struct series_desc *descs = realloc(c.descs, cap * sizeof(*descs));
                        if (descs)
                                c.descs = descs;
                        int64_t *ids = realloc(c.ids, cap * sizeof(*ids));
                        if (ids)
                                c.ids = ids;
                        if (!descs || !ids) {
                                r = -ENOMEM;
                                break;
                        }
                }
                c.ids[c.n] = sqlite3_column_int64(st, 0);
                c.descs[c.n++] = d;
        }
        if (r == 0 && rc != SQLITE_DONE)
                r = sql_errno(rc);
        sqlite3_finalize(label);
        sqlite3_finalize(st);
        if (r == 0 && !c.ids)
                c.ids = malloc(sizeof(*c.ids)); /* loaded, with no rows */
        if (r < 0 || !c.ids) {
                free(c.ids);
                free(c.descs);
                return r < 0 ? r : -ENOMEM;
        }
        free(s->cache.ids);
        free(s->cache.descs);
        s->cache = c;
        return 0;
}

/* The cached series of one family (or all), filtered, by ascending id;
 * the caller holds read_lock. ids may be NULL. */
static int load_series(struct store *s, int metric, const struct history_matcher *matchers, size_t n_matchers,
                       struct series_desc **ret, int64_t **ret_ids, size_t *ret_n) {
        int r = cache_refresh(s);
        if (r < 0)
                return r;
        size_t n = 0;
        struct series_desc *list = malloc((s->cache.n ? s->cache.n : 1) * sizeof(*list));
        int64_t *ids = malloc((s->cache.n ? s->cache.n : 1) * sizeof(*ids));
        if (!list || !ids) {
                free(list);
                free(ids);
                return -ENOMEM;
        }
        for (size_t i = 0; i < s->cache.n; i++) {
                const struct series_desc *d = &s->cache.descs[i];
                if ((metric >= 0 && (int) d->metric != metric) || !series_matches(d, matchers, n_matchers))
                        continue;
                ids[n] = s->cache.ids[i];
                list[n++] = *d;
        }
        *ret = list;
        if (ret_ids)
                *ret_ids = ids;
        else
                free(ids);
        *ret_n = n;
        return 0;
}

int store_list_series(struct store *s, int metric, const struct history_matcher *matchers, size_t n_matchers,
                      struct series_desc **ret, size_t *ret_n) {
        pthread_mutex_lock(&s->read_lock);
        uint64_t generation = store_generation(s);
        int r = s->read_db ? load_series(s, metric, matchers, n_matchers, ret, NULL, ret_n) : -EAGAIN;
        pthread_mutex_unlock(&s->read_lock);
        if (r == -EUCLEAN)
                store_note_damage(s, generation);
        return r;
}

int store_query_range(struct store *s, const struct history_query *q, struct history_result **ret) {
        struct history_result *res = NULL;
        struct series_desc *list = NULL;
        struct rollup_cell *cells = NULL;
        struct reader rd = { .s = s, .q = q };
        int64_t *ids = NULL;
        size_t n = 0;
        int r;

        if (q->step_ms <= 0 || q->start_ms > q->end_ms || q->start_ms < 0 || q->metric >= METRIC__COUNT)
                return -EINVAL;
        if (q->rate && metric_table[q->metric].type != METRIC_COUNTER)
                return -EINVAL;
        int64_t first = q->start_ms - q->start_ms % q->step_ms;
        size_t n_buckets = (size_t) ((q->end_ms - first) / q->step_ms) + 1;
        if (n_buckets > 1000000)
                return -E2BIG;
        rd.tier = pick_tier(s, q);
        rd.columns = rollup_columns(q->agg, q->rate);
        /* The periods of the tier that start in [start, end], whole; with
         * rate, those of the step before too, for the first one's rate. */
        int64_t period = tier_res[rd.tier];
        rd.from = q->start_ms + (period - q->start_ms % period) % period - (q->rate ? q->step_ms : 0);
        rd.from = rd.from < 0 ? 0 : rd.from;
        rd.to = q->end_ms - q->end_ms % period + period - 1;

        res = calloc(1, sizeof(*res));
        cells = calloc(n_buckets, sizeof(*cells));
        if (!res || !cells) {
                free(res);
                free(cells);
                return -ENOMEM;
        }
        pthread_mutex_lock(&s->read_lock);
        uint64_t generation = store_generation(s);
        /* One read transaction: every table from one snapshot. */
        r = s->read_db ? sql_exec(s->read_db, "BEGIN") : -EAGAIN;
        if (r == 0)
                r = load_series(s, (int) q->metric, q->matchers, q->n_matchers, &list, &ids, &n);
        if (r == 0 && n > HISTORY_POINTS_MAX / n_buckets)
                r = -E2BIG;
        if (r == 0 && n > 0) {
                res->series = calloc(n, sizeof(*res->series));
                if (!res->series)
                        r = -ENOMEM;
        }
        if (r == 0 && n > 0)
                r = reader_open(&rd, rd.from, rd.to, ids[0], ids[n - 1]);
        for (size_t i = 0; i < n && r == 0; i++) {
                if (q->cancelled && q->cancelled(q->cancel_cls)) {
                        r = -ECANCELED;
                        break;
                }
                struct history_series *out = &res->series[res->n_series];
                *out = (struct history_series){ .desc = list[i] };
                r = read_points(&rd, ids[i], cells, n_buckets, out);
                /* Series with no samples in the window are left out, as Prometheus does. */
                if (r == 0 && out->n_points > 0)
                        res->n_series++;
        }
        reader_done(&rd);
        /* Ends the read transaction so the WAL can be checkpointed. */
        if (s->read_db)
                sql_exec(s->read_db, "COMMIT");
        pthread_mutex_unlock(&s->read_lock);
        free(list);
        free(ids);
        free(cells);
        /* A damaged file found by a query: the tick loop sets it aside. */
        if (r == -EUCLEAN)
                store_note_damage(s, generation);
        if (r < 0) {
                history_result_free(res);
                return r;
        }
        *ret = res;
        return 0;
}

static int history_query_range(void *impl, const struct history_query *q, struct history_result **ret) {
        return store_query_range(impl, q, ret);
}

static int history_list_series(void *impl, int metric, const struct history_matcher *matchers, size_t n_matchers,
                               struct series_desc **ret, size_t *ret_n) {
        return store_list_series(impl, metric, matchers, n_matchers, ret, ret_n);
}

static void history_get_stats(void *impl, struct history_stats *ret) {
        store_get_stats(impl, ret);
}

static int history_query_events(void *impl, const struct history_events_query *q, struct health_event **ret,
                                size_t *ret_n) {
        return store_query_events(impl, q, ret, ret_n);
}

const struct history_ops store_history_ops = {
        .query_range = history_query_range,
        .list_series = history_list_series,
        .get_stats = history_get_stats,
        .query_events = history_query_events,
};
