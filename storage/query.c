#include "config.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "storage/chunk.h"
#include "storage/sql.h"
#include "storage/store-internal.h"

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

/* Step-aligned buckets over the window, and the rate state. */
struct agg {
        const struct history_query *q;
        int64_t first; /* start of bucket 0 */
        size_t n_buckets;
        struct rollup_cell *cells;
        bool have_prev;
        int64_t prev_ts;
        double prev_v;
};

static void agg_cell(struct agg *a, int64_t ts, const struct rollup_cell *c) {
        if (ts < a->first || ts > a->q->end_ms)
                return;
        size_t b = (size_t) ((ts - a->first) / a->q->step_ms);
        if (b < a->n_buckets)
                rollup_cell_merge(&a->cells[b], c);
}

/* One sample (ts ascending). With rate, the increase since the previous
 * sample per second, a drop counting as a reset to zero. */
static void agg_sample(struct agg *a, int64_t ts, double v) {
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
        agg_cell(a, ts, &c);
}

/* Prepares a reader's statement on the query connection: ?1 is the
 * series id, ?2 and ?3 the first and last timestamp wanted. */
static int prepare_reader(struct store *s, const char *sql, int64_t id, int64_t from, int64_t to, sqlite3_stmt **ret) {
        sqlite3_stmt *st = NULL;
        int r = sql_prepare(s->read_db, sql, &st);
        if (r < 0)
                return r;
        sqlite3_bind_int64(st, 1, id);
        sqlite3_bind_int64(st, 2, from);
        sqlite3_bind_int64(st, 3, to);
        *ret = st;
        return 0;
}

static int read_chunks(struct store *s, int64_t id, struct agg *a, int64_t from) {
        sqlite3_stmt *st = NULL;
        int64_t *ts = NULL;
        double *v = NULL;
        size_t cap = 0;
        int rc, r = prepare_reader(
                        s,
                        "SELECT data FROM chunks WHERE series_id = ?1 AND start_ts <= ?3 AND start_ts >= "
                        "coalesce((SELECT max(start_ts) FROM chunks WHERE series_id = ?1 AND start_ts <= ?2), 0) "
                        "ORDER BY start_ts",
                        id, from, a->q->end_ms, &st);
        if (r < 0)
                return r;
        while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
                const uint8_t *data = sqlite3_column_blob(st, 0);
                size_t size = (size_t) sqlite3_column_bytes(st, 0);
                int n = chunk_count(data, size);
                if (n < 0) {
                        r = n;
                        break;
                }
                if ((size_t) n > cap) {
                        cap = (size_t) n;
                        free(ts);
                        free(v);
                        ts = malloc(cap * sizeof(*ts));
                        v = malloc(cap * sizeof(*v));
                        if (!ts || !v) {
                                r = -ENOMEM;
                                break;
                        }
                }
                n = chunk_decode(data, size, ts, v);
                if (n < 0) {
                        r = n;
                        break;
                }
                for (int i = 0; i < n; i++)
                        agg_sample(a, ts[i], v[i]);
        }
        if (r == 0 && rc != SQLITE_DONE)
                r = sql_errno(rc);
        sqlite3_finalize(st);
        free(ts);
        free(v);
        return r;
}

/* The open chunk: recent rows hold entries sorted by series id, so the
 * series is found by a binary search over incremental blob reads. */
static int read_recent(struct store *s, int64_t id, struct agg *a, int64_t from) {
        sqlite3_stmt *st = NULL;
        sqlite3_blob *blob = NULL;
        int rc, r = prepare_reader(s, "SELECT ts, length(data) FROM recent WHERE ts >= ?2 AND ts <= ?3 ORDER BY ts", id,
                                   from, a->q->end_ms, &st);
        if (r < 0)
                return r;
        while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
                int64_t ts = sqlite3_column_int64(st, 0);
                int entries = sqlite3_column_int(st, 1) / STORE_RECENT_ENTRY;
                if (entries == 0)
                        continue;
                rc = blob ? sqlite3_blob_reopen(blob, ts)
                          : sqlite3_blob_open(s->read_db, "main", "recent", "data", ts, 0, &blob);
                if (rc != SQLITE_OK) {
                        r = sql_errno(rc);
                        break;
                }
                int lo = 0, hi = entries - 1;
                while (lo <= hi) {
                        int mid = lo + (hi - lo) / 2;
                        uint8_t e[STORE_RECENT_ENTRY];
                        rc = sqlite3_blob_read(blob, e, STORE_RECENT_ENTRY, mid * STORE_RECENT_ENTRY);
                        if (rc != SQLITE_OK) {
                                r = sql_errno(rc);
                                break;
                        }
                        int64_t got = store_recent_id(e);
                        if (got == id) {
                                agg_sample(a, ts, store_recent_value(e));
                                break;
                        }
                        if (got < id)
                                lo = mid + 1;
                        else
                                hi = mid - 1;
                }
                if (r < 0)
                        break;
        }
        if (r == 0 && rc != SQLITE_DONE && rc != SQLITE_OK && rc != SQLITE_ROW)
                r = sql_errno(rc);
        sqlite3_blob_close(blob);
        sqlite3_finalize(st);
        return r;
}

static int read_rollups(struct store *s, enum tier tier, int64_t id, struct agg *a, int64_t from) {
        static const char *const sql[] = {
                [TIER_MINUTE] = "SELECT ts, min, max, sum, count, last FROM rollup_1m "
                                "WHERE series_id = ?1 AND ts >= ?2 AND ts <= ?3 ORDER BY ts",
                [TIER_HOUR] = "SELECT ts, min, max, sum, count, last FROM rollup_1h "
                              "WHERE series_id = ?1 AND ts >= ?2 AND ts <= ?3 ORDER BY ts",
        };
        sqlite3_stmt *st = NULL;
        int rc, r = prepare_reader(s, sql[tier], id, from, a->q->end_ms, &st);
        if (r < 0)
                return r;
        while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
                int64_t ts = sqlite3_column_int64(st, 0);
                struct rollup_cell c = {
                        .min = sqlite3_column_double(st, 1),
                        .max = sqlite3_column_double(st, 2),
                        .sum = sqlite3_column_double(st, 3),
                        .count = sqlite3_column_int64(st, 4),
                        .last = sqlite3_column_double(st, 5),
                };
                if (c.count <= 0)
                        continue;
                if (!a->q->rate) {
                        agg_cell(a, ts, &c);
                        continue;
                }
                /* A rate from rollups: the last value of each period, taken
                 * at its end; a minimum below the previous last shows a
                 * reset inside the period. */
                if (a->have_prev && c.min < a->prev_v && c.last >= a->prev_v)
                        a->prev_v = 0;
                agg_sample(a, ts + tier_res[tier], c.last);
        }
        if (r == 0 && rc != SQLITE_DONE)
                r = sql_errno(rc);
        sqlite3_finalize(st);
        return r;
}

static int read_points(struct store *s, enum tier tier, int64_t id, const struct history_query *q,
                       struct rollup_cell *cells, size_t n_buckets, struct history_series *out) {
        struct agg a = {
                .q = q,
                .first = q->start_ms - q->start_ms % q->step_ms,
                .n_buckets = n_buckets,
                .cells = cells,
        };
        int r;

        memset(cells, 0, n_buckets * sizeof(*cells));
        if (tier == TIER_RAW) {
                r = read_chunks(s, id, &a, a.first);
                if (r == 0)
                        r = read_recent(s, id, &a, a.first);
        } else {
                /* With rate, one period before the window gives the first rate. */
                r = read_rollups(s, tier, id, &a, a.first - (q->rate ? tier_res[tier] : 0));
        }
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

static bool series_matches(const struct series_desc *d, const struct history_matcher *matchers, size_t n) {
        const struct metric_desc *m = &metric_table[d->metric];
        for (size_t i = 0; i < n; i++) {
                int idx = metric_label_index(m, matchers[i].name);
                if (idx < 0 || strcmp(d->label_values[idx], matchers[i].value) != 0)
                        return false;
        }
        return true;
}

/* Series rows of one family (or all), with their label values; the
 * caller holds read_lock. ids may be NULL. */
static int load_series(struct store *s, int metric, const struct history_matcher *matchers, size_t n_matchers,
                       struct series_desc **ret, int64_t **ret_ids, size_t *ret_n) {
        sqlite3_stmt *st = NULL;
        struct series_desc *list = NULL;
        int64_t *ids = NULL;
        size_t n = 0, cap = 0;
        int rc, r = sql_prepare(s->read_db,
                                "SELECT id, metric, labels FROM series WHERE ?1 IS NULL OR metric = ?1 ORDER BY id",
                                &st);
        if (r < 0)
                return r;
        if (metric >= 0)
                sqlite3_bind_text(st, 1, metric_table[metric].name, -1, SQLITE_STATIC);
        sqlite3_stmt *label = NULL;
        r = sql_prepare(s->read_db, "SELECT json_extract(?1, '$.' || ?2)", &label);
        while (r == 0 && (rc = sqlite3_step(st)) == SQLITE_ROW) {
                int m = metric_lookup((const char *) sqlite3_column_text(st, 1));
                if (m < 0)
                        continue;
                struct series_desc d = { .metric = (enum metric_id) m };
                const struct metric_desc *md = &metric_table[m];
                for (size_t i = 0; i < metric_label_count(md) && r == 0; i++) {
                        sqlite3_bind_value(label, 1, sqlite3_column_value(st, 2));
                        sqlite3_bind_text(label, 2, md->labels[i], -1, SQLITE_STATIC);
                        if (sqlite3_step(label) == SQLITE_ROW) {
                                const unsigned char *v = sqlite3_column_text(label, 0);
                                snprintf(d.label_values[i], sizeof(d.label_values[i]), "%s", v ? (const char *) v : "");
                        }
                        sqlite3_reset(label);
                }
                if (!series_matches(&d, matchers, n_matchers))
                        continue;
                if (n == cap) {
                        cap = cap ? 2 * cap : 16;
                        struct series_desc *grown = realloc(list, cap * sizeof(*grown));
                        int64_t *grown_ids = grown ? realloc(ids, cap * sizeof(*grown_ids)) : NULL;
                        if (grown)
                                list = grown;
                        if (grown_ids)
                                ids = grown_ids;
                        if (!grown || !grown_ids) {
                                r = -ENOMEM;
                                break;
                        }
                }
                ids[n] = sqlite3_column_int64(st, 0);
                list[n++] = d;
        }
        if (r == 0 && rc != SQLITE_DONE)
                r = sql_errno(rc);
        sqlite3_finalize(label);
        sqlite3_finalize(st);
        if (r < 0) {
                free(list);
                free(ids);
                return r;
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
        enum tier tier = pick_tier(s, q);

        res = calloc(1, sizeof(*res));
        cells = calloc(n_buckets, sizeof(*cells));
        if (!res || !cells) {
                free(res);
                free(cells);
                return -ENOMEM;
        }
        pthread_mutex_lock(&s->read_lock);
        uint64_t generation = store_generation(s);
        /* One read transaction: chunks and recent rows from one snapshot. */
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
        for (size_t i = 0; i < n && r == 0; i++) {
                if (q->cancelled && q->cancelled(q->cancel_cls)) {
                        r = -ECANCELED;
                        break;
                }
                struct history_series *out = &res->series[res->n_series];
                *out = (struct history_series){ .desc = list[i] };
                r = read_points(s, tier, ids[i], q, cells, n_buckets, out);
                /* Series with no samples in the window are left out, as Prometheus does. */
                if (r == 0 && out->n_points > 0)
                        res->n_series++;
        }
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

const struct history_ops store_history_ops = {
        .query_range = history_query_range,
        .list_series = history_list_series,
        .get_stats = history_get_stats,
};
