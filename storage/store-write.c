#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "storage/chunk.h"
#include "storage/sql.h"
#include "storage/store-internal.h"

/* Writes samples of one series as head chunks: split at chunk span
 * boundaries (so that no chunk crosses an hour) and at CHUNK_TICKS_MAX
 * samples. Each chunk's hour becomes pending: its rollups are due. */
int store_write_head(struct store *s, int64_t series_id, const int64_t *ts, const double *v, size_t n) {
        size_t at = 0;
        while (at < n) {
                size_t end = at + 1;
                int64_t span = ts[at] - ts[at] % s->opt.chunk_ms;
                while (end < n && end - at < CHUNK_TICKS_MAX && ts[end] - ts[end] % s->opt.chunk_ms == span)
                        end++;
                uint8_t *data = NULL;
                size_t size = 0;
                int r = chunk_encode(ts + at, (const double *const[]){ v + at }, 1, end - at, &data, &size);
                if (r < 0)
                        return r;
                r = store_put_chunk(s->st_head, series_id, ts[at], data, size, ts[at], ts[end - 1], end - at);
                free(data);
                if (r == 0) {
                        sqlite3_bind_int64(s->st_pending, 1, store_hour_of(ts[at]));
                        r = sql_step_done(s->st_pending);
                }
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

/* Keeps samples that cannot go into a head chunk, several of one series
 * at one time (a tick that listed a series twice, written by an older
 * neurond), in a table of their own: they are not lost, and they stop no
 * start-up. Returns how many were kept, or a negative errno. */
static int set_aside(struct store *s, const struct triple *t, size_t n) {
        sqlite3_stmt *ins = NULL;
        int r = sql_exec(s->db, "CREATE TABLE IF NOT EXISTS recent_set_aside(ts INTEGER NOT NULL, "
                                "series_id INTEGER NOT NULL, value REAL)");
        if (r == 0)
                r = sql_prepare(s->db, "INSERT INTO recent_set_aside(ts, series_id, value) VALUES (?1, ?2, ?3)", &ins);
        for (size_t i = 0; i < n && r == 0; i++) {
                sqlite3_bind_int64(ins, 1, t[i].ts);
                sqlite3_bind_int64(ins, 2, t[i].id);
                sqlite3_bind_double(ins, 3, t[i].v);
                r = sql_step_done(ins);
        }
        sqlite3_finalize(ins);
        return r < 0 ? r : (int) n;
}

/* Moves every sample of the recent table into head chunks, inside the
 * caller's transaction: on open (after a crash or a clean stop) and on
 * close, so that an open chunk never outlives the process that wrote it
 * and the series set may change between runs. What cannot be closed out
 * is set aside and counted (samples_set_aside), never a reason to fail. */
int store_close_out_recent(struct store *s) {
        sqlite3_stmt *sel = NULL;
        struct triple *all = NULL;
        int64_t *ts = NULL;
        double *v = NULL;
        size_t n = 0, cap = 0;
        int r, rc;

        r = sql_prepare(s->db, "SELECT ts, data FROM recent ORDER BY ts", &sel);
        while (r == 0 && (rc = sqlite3_step(sel)) == SQLITE_ROW) {
                int64_t t = sqlite3_column_int64(sel, 0);
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
                        all[n++] = (struct triple){ .id = store_recent_id(p), .ts = t, .v = store_recent_value(p) };
        }
        if (r == 0 && rc != SQLITE_DONE)
                r = sql_errno(rc);
        sqlite3_finalize(sel);
        if (r < 0 || n == 0)
                goto out;
        qsort(all, n, sizeof(*all), triple_cmp);

        ts = malloc(n * sizeof(*ts));
        v = malloc(n * sizeof(*v));
        if (!ts || !v)
                r = -ENOMEM;
        uint64_t aside = 0;
        for (size_t at = 0; at < n && r == 0;) {
                size_t k = 0;
                int64_t id = all[at].id;
                while (at < n && all[at].id == id && r == 0) {
                        size_t same = 1;
                        while (at + same < n && all[at + same].id == id && all[at + same].ts == all[at].ts)
                                same++;
                        if (same == 1) {
                                ts[k] = all[at].ts;
                                v[k++] = all[at].v;
                        } else {
                                r = set_aside(s, all + at, same);
                                aside += same;
                        }
                        at += same;
                }
                if (r >= 0 && k > 0)
                        r = store_write_head(s, id, ts, v, k);
                r = r < 0 ? r : 0;
        }
        if (aside > 0) {
                pthread_mutex_lock(&s->stats_lock);
                s->stats.samples_set_aside += aside;
                pthread_mutex_unlock(&s->stats_lock);
        }
        if (r == 0)
                r = sql_exec(s->db, "DELETE FROM recent");
out:
        free(ts);
        free(v);
        free(all);
        return r;
}

/* A series' row, found or made: its labels as json_object() with a
 * name/value pair per label that has a value (an empty value is no label,
 * lib/metric.h, so a family that gained a label keeps the identity of its
 * series without it). With make, a missing series is inserted; without,
 * *ret_id is 0 when there is none. */
static int series_row(struct store *s, const struct series_desc *d, bool make, int64_t *ret_id) {
        const struct metric_desc *m = &metric_table[d->metric];
        size_t n_labels = metric_label_count(m);
        char labels[128] = "json_object(";
        size_t len = strlen(labels);
        for (size_t i = 0, k = 0; i < n_labels; i++)
                if (d->label_values[i][0]) {
                        len += (size_t) snprintf(labels + len, sizeof(labels) - len, "%s?%zu, ?%zu", k ? ", " : "",
                                                 2 + 2 * k, 3 + 2 * k);
                        k++;
                }
        snprintf(labels + len, sizeof(labels) - len, ")");
        char sql[256];
        if (make)
                snprintf(sql, sizeof(sql), "INSERT INTO series(metric, labels) VALUES (?1, %s) RETURNING id", labels);
        else
                snprintf(sql, sizeof(sql), "SELECT id FROM series WHERE metric = ?1 AND labels = %s", labels);
        sqlite3_stmt *st = NULL;
        int r = sql_prepare(s->db, sql, &st);
        if (r < 0)
                return r;
        sqlite3_bind_text(st, 1, m->name, -1, SQLITE_STATIC);
        for (size_t i = 0, k = 0; i < n_labels; i++) {
                if (!d->label_values[i][0])
                        continue;
                sqlite3_bind_text(st, 2 + 2 * (int) k, m->labels[i], -1, SQLITE_STATIC);
                sqlite3_bind_text(st, 3 + 2 * (int) k, d->label_values[i], -1, SQLITE_STATIC);
                k++;
        }
        int rc = sqlite3_step(st);
        *ret_id = 0;
        if (rc == SQLITE_ROW)
                *ret_id = sqlite3_column_int64(st, 0);
        else if (make || rc != SQLITE_DONE)
                r = sql_errno(rc == SQLITE_DONE ? SQLITE_ERROR : rc);
        sqlite3_finalize(st);
        return r;
}

static const int64_t *sort_ids;

static int by_id_cmp(const void *a, const void *b) {
        int64_t x = sort_ids[*(const uint32_t *) a], y = sort_ids[*(const uint32_t *) b];
        return x < y ? -1 : x > y;
}

/* The registered series that are stored, for store_collect_series():
 * a table of the writer's connection, made anew with each list. */
static int note_live(struct store *s, const struct tickbuf *b) {
        sqlite3_stmt *ins = NULL;
        int r = sql_exec(s->db, "CREATE TEMP TABLE IF NOT EXISTS live(id INTEGER PRIMARY KEY); DELETE FROM temp.live");
        if (r == 0)
                r = sql_prepare(s->db, "INSERT OR IGNORE INTO temp.live(id) VALUES (?1)", &ins);
        for (size_t k = 0; k < b->n_stored && r == 0; k++) {
                sqlite3_bind_int64(ins, 1, b->ids[b->by_id[k]]);
                r = sql_step_done(ins);
        }
        sqlite3_finalize(ins);
        return r;
}

int store_write_series(struct store *s, struct tickbuf *b) {
        int64_t *ids = b->ids;
        uint32_t *by_id = b->by_id;
        size_t n = b->n_series, over_limit = 0;
        int64_t count = 0;
        int r = sql_exec(s->db, "BEGIN");
        if (r == 0)
                r = sql_query_int(s->db, "SELECT count(*) FROM series", &count);
        for (size_t i = 0; i < n && r == 0; i++) {
                by_id[i] = (uint32_t) i;
                r = series_row(s, &b->series[i], false, &ids[i]);
                if (r < 0 || ids[i] != 0)
                        continue;
                /* A new series: made while there is room, else left out. */
                if (s->opt.max_series == 0 || (uint64_t) count < s->opt.max_series) {
                        r = series_row(s, &b->series[i], true, &ids[i]);
                        count++;
                } else {
                        over_limit++;
                }
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
        /* A series listed more than once has one id for several values in a
         * tick: no copy is stored, as either value would be a guess, and the
         * tick's other series are. Id 0: left out at the limit. */
        size_t kept = 0, duplicated = 0;
        for (size_t k = 0; k < n;) {
                size_t same = 1;
                while (k + same < n && ids[by_id[k + same]] == ids[by_id[k]])
                        same++;
                if (ids[by_id[k]] != 0 && same == 1)
                        by_id[kept++] = by_id[k];
                else if (ids[by_id[k]] != 0)
                        duplicated += same;
                k += same;
        }
        b->n_stored = kept;
        pthread_mutex_lock(&s->stats_lock);
        s->stats.series_duplicated = duplicated;
        s->stats.series_over_limit = over_limit;
        s->stats.series_refused += over_limit;
        pthread_mutex_unlock(&s->stats_lock);
        atomic_fetch_add(&s->series_generation, 1);
        r = note_live(s, b);
        return r < 0 ? r : store_link_sources(b);
}

/* Writes what the buffer holds and the database lacks, in one
 * transaction: the ticks not yet in recent, the head chunks of a span that
 * ended, and a slice of compaction. The in-memory state changes only after
 * the commit, so a failed attempt is simply retried. */
int store_sync_ticks(struct store *s) {
        int64_t *ts = NULL;
        double *v = NULL;
        uint8_t *blob = NULL;
        int64_t newest = s->buf.ts[s->buf.n_ticks - 1];
        int64_t compact_hour = s->compact_hour, compact_next_rank = s->compact_next_rank,
                compact_next_id = s->compact_next_id;
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
                for (size_t k = 0; k < s->buf.n_stored; k++) {
                        size_t i = s->buf.by_id[k], at = t * s->buf.n_series + i;
                        if (!s->buf.valid[at])
                                continue;
                        store_recent_put(blob + len, (uint32_t) s->buf.ids[i], s->buf.values[at]);
                        len += STORE_RECENT_ENTRY;
                }
                sqlite3_bind_int64(s->st_recent, 1, s->buf.ts[t]);
                sqlite3_bind_blob(s->st_recent, 2, blob, (int) len, SQLITE_STATIC);
                r = sql_step_done(s->st_recent);
                sqlite3_clear_bindings(s->st_recent);
        }
        /* Head chunks: the leading ticks of one span, once the span ended
         * or the chunk is full. */
        int64_t span = s->buf.ts[0] - s->buf.ts[0] % s->opt.chunk_ms;
        while (n_chunk < s->buf.n_ticks && n_chunk < CHUNK_TICKS_MAX &&
               s->buf.ts[n_chunk] - s->buf.ts[n_chunk] % s->opt.chunk_ms == span)
                n_chunk++;
        bool span_ended = n_chunk < s->buf.n_ticks;
        if (!(span_ended || n_chunk == CHUNK_TICKS_MAX))
                n_chunk = 0;
        if (r == 0 && n_chunk > 0) {
                /* In id order: neighbours in the head table's index. */
                for (size_t j = 0; j < s->buf.n_stored && r == 0; j++) {
                        size_t i = s->buf.by_id[j];
                        size_t k = tickbuf_gather(&s->buf, i, 0, n_chunk, INT64_MIN, INT64_MAX, ts, v);
                        if (k > 0)
                                r = store_write_head(s, s->buf.ids[i], ts, v, k);
                }
                sqlite3_stmt *del = NULL;
                if (r == 0)
                        r = sql_prepare(s->db, "DELETE FROM recent WHERE ts <= ?1", &del);
                if (r == 0) {
                        sqlite3_bind_int64(del, 1, s->buf.ts[n_chunk - 1]);
                        r = sql_step_done(del);
                }
                sqlite3_finalize(del);
        }
        /* Hours whose every tick is in head chunks now can be compacted. */
        int64_t written_before = n_chunk < s->buf.n_ticks ? s->buf.ts[n_chunk] : newest + 1;
        if (r == 0)
                r = store_compact(s, written_before, s->opt.compact_slice, NULL);
        /* Retention runs once per chunk span of data at most. */
        if (r == 0 && n_chunk > 0 && newest - s->last_retention_ms >= s->opt.chunk_ms) {
                r = store_enforce_retention(s, newest);
                retention = true;
        }
        if (r == 0)
                r = sql_exec(s->db, "COMMIT");
        if (r < 0) {
                sql_exec(s->db, "ROLLBACK");
                s->compact_hour = compact_hour;
                s->compact_next_rank = compact_next_rank;
                s->compact_next_id = compact_next_id;
                goto out;
        }
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
