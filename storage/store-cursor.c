#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "storage/sql.h"
#include "storage/store-internal.h"

_Static_assert(STORE_RECENT_ENTRY == 12, "count_after's SQL divides by the recent entry's size");

/* The samples of a page before the cut, in any order until sorted. */
struct pool {
        struct cursor_sample *samples;
        size_t n, cap;
        int64_t cut; /* every stored sample up to this timestamp, after the position, is in the pool */
};

static int pool_add(struct pool *p, int64_t ts, int64_t id, double v) {
        if (p->n == p->cap) {
                size_t cap = p->cap ? 2 * p->cap : 1024;
                struct cursor_sample *grown = realloc(p->samples, cap * sizeof(*grown));
                if (!grown)
                        return -ENOMEM;
                p->samples = grown;
                p->cap = cap;
        }
        p->samples[p->n++] = (struct cursor_sample){ ts, id, v };
        return 0;
}

static bool is_after(int64_t ts, int64_t id, const struct cursor_position *after) {
        return ts > after->timestamp_ms || (ts == after->timestamp_ms && id > after->series);
}

static int sample_compare(const void *a, const void *b) {
        const struct cursor_sample *x = a, *y = b;
        struct cursor_position p = { x->timestamp_ms, x->series }, q = { y->timestamp_ms, y->series };
        return cursor_position_compare(&p, &q);
}

/* From the chunks of each series (its hourly chunks, then its head
 * chunks of the hour not yet merged): its first `want` samples after the
 * position. A series that has more lowers the cut to its last one taken,
 * so that the pool holds every sample up to the cut. Chunks that end
 * before the position are not decoded. */
static int read_chunks(struct store *s, const struct cursor_position *after, size_t want, struct pool *p) {
        sqlite3_stmt *ids = NULL, *chunks = NULL, *hour_chunk = NULL;
        struct store_samples samples = { 0 };
        int rc, r = sql_prepare(s->read_db, "SELECT id FROM series ORDER BY id", &ids);

        if (r == 0)
                r = sql_prepare(
                        s->read_db,
                        "SELECT end_ts, data FROM (SELECT start_ts, end_ts, chunk_bytes(hour, at, size) AS data FROM chunks "
                        "WHERE series_id = ?1 AND end_ts >= ?2 UNION ALL SELECT start_ts, end_ts, data "
                        "FROM head WHERE series_id = ?1 AND end_ts >= ?2) ORDER BY start_ts",
                        &chunks);
        if (r == 0)
                r = sql_prepare(s->read_db, STORE_HOUR_CHUNK, &hour_chunk);
        while (r == 0 && (rc = sqlite3_step(ids)) == SQLITE_ROW) {
                int64_t id = sqlite3_column_int64(ids, 0);
                size_t got = 0;
                sqlite3_bind_int64(chunks, 1, id);
                sqlite3_bind_int64(chunks, 2, after->timestamp_ms);
                while (r == 0 && got < want && (rc = sqlite3_step(chunks)) == SQLITE_ROW) {
                        int64_t hour = store_hour_of(sqlite3_column_int64(chunks, 0));
                        int n = store_decode_raw(hour_chunk, hour, sqlite3_column_blob(chunks, 1),
                                                 (size_t) sqlite3_column_bytes(chunks, 1), &samples);
                        if (n < 0) {
                                r = n == -EBADMSG ? -EUCLEAN : n;
                                break;
                        }
                        for (int i = 0; i < n && got < want && r == 0; i++)
                                if (is_after(samples.ts[i], id, after)) {
                                        r = pool_add(p, samples.ts[i], id, samples.v[i]);
                                        if (++got == want && samples.ts[i] < p->cut)
                                                p->cut = samples.ts[i];
                                }
                }
                if (r == 0 && got < want && rc != SQLITE_DONE)
                        r = sql_errno(rc);
                sqlite3_reset(chunks);
        }
        if (r == 0 && rc != SQLITE_DONE)
                r = sql_errno(rc);
        sqlite3_finalize(chunks);
        sqlite3_finalize(hour_chunk);
        sqlite3_finalize(ids);
        store_samples_free(&samples);
        return r;
}

/* From the open span's rows, one per tick: up to `want` ticks from the
 * position's on, whole. Reading `want` of them lowers the cut to the last. */
static int read_recent(struct store *s, const struct cursor_position *after, size_t want, struct pool *p) {
        sqlite3_stmt *st = NULL;
        size_t rows = 0;
        int64_t last = 0;
        int rc, r = sql_prepare(s->read_db, "SELECT ts, data FROM recent WHERE ts >= ?1 ORDER BY ts LIMIT ?2", &st);

        if (r < 0)
                return r;
        sqlite3_bind_int64(st, 1, after->timestamp_ms);
        sqlite3_bind_int64(st, 2, (int64_t) want);
        while (r == 0 && (rc = sqlite3_step(st)) == SQLITE_ROW) {
                int64_t ts = sqlite3_column_int64(st, 0);
                const uint8_t *data = sqlite3_column_blob(st, 1);
                size_t entries = (size_t) sqlite3_column_bytes(st, 1) / STORE_RECENT_ENTRY;
                for (size_t e = 0; e < entries && r == 0; e++) {
                        const uint8_t *entry = data + e * STORE_RECENT_ENTRY;
                        int64_t id = store_recent_id(entry);
                        if (is_after(ts, id, after))
                                r = pool_add(p, ts, id, store_recent_value(entry));
                }
                rows++;
                last = ts;
        }
        if (r == 0 && rc != SQLITE_DONE)
                r = sql_errno(rc);
        sqlite3_finalize(st);
        if (r == 0 && rows == want && last < p->cut)
                p->cut = last;
        return r;
}

/* The oldest tick of the open span (every tick before it is in chunks or
 * head chunks),
 * INT64_MAX when there is none. */
static int recent_start(struct store *s, int64_t *ret) {
        int64_t ts = 0, n = 0;
        int r = sql_query_int(s->read_db, "SELECT count(*) FROM (SELECT 1 FROM recent LIMIT 1)", &n);
        if (r == 0 && n > 0)
                r = sql_query_int(s->read_db, "SELECT min(ts) FROM recent", &ts);
        if (r == 0)
                *ret = n > 0 ? ts : INT64_MAX;
        return r;
}

static int cursor_read(void *impl, const struct cursor_position *after, size_t max, struct cursor_page *ret) {
        struct store *s = impl;
        struct pool p = { .cut = INT64_MAX };
        int64_t n_series = 0, recent_from = INT64_MAX;

        if (max == 0)
                return -EINVAL;
        pthread_mutex_lock(&s->read_lock);
        uint64_t generation = store_generation(s);
        /* One read transaction: chunks and recent rows from one snapshot. */
        int r = s->read_db ? sql_exec(s->read_db, "BEGIN") : -EAGAIN;
        if (r == 0)
                r = sql_query_int(s->read_db, "SELECT count(*) FROM series", &n_series);
        /* Ticks enough for a full page if every series is in each, and one
         * more, so that the page can end where the cut is. */
        size_t want = max / (size_t) (n_series > 0 ? n_series : 1) + 2;
        if (r == 0)
                r = recent_start(s, &recent_from);
        /* Chunks hold the ticks before the open span: read them only when
         * the position is before it. */
        if (r == 0 && after->timestamp_ms < recent_from)
                r = read_chunks(s, after, want, &p);
        if (r == 0 && p.cut >= recent_from)
                r = read_recent(s, after, want, &p);
        if (s->read_db)
                sql_exec(s->read_db, "COMMIT");
        pthread_mutex_unlock(&s->read_lock);
        if (r == -EUCLEAN)
                store_note_damage(s, generation);
        if (r < 0) {
                free(p.samples);
                return r;
        }

        if (p.n) /* an empty page may have no array, which qsort must not be given */
                qsort(p.samples, p.n, sizeof(*p.samples), sample_compare);
        size_t n = 0;
        while (n < p.n && p.samples[n].timestamp_ms <= p.cut)
                n++;
        *ret = (struct cursor_page){
                .samples = p.samples,
                .n = n < max ? n : max,
                .more = n > max || p.cut != INT64_MAX,
        };
        return 0;
}

/* Labels are stored as a JSON object: one row per label. */
static int cursor_list_series(void *impl, int64_t min_id, struct cursor_series **ret, size_t *ret_n) {
        struct store *s = impl;
        struct cursor_series *list = NULL;
        size_t n = 0, cap = 0;
        sqlite3_stmt *st = NULL;
        int rc = SQLITE_DONE;

        pthread_mutex_lock(&s->read_lock);
        uint64_t generation = store_generation(s);
        int r = s->read_db ? sql_prepare(s->read_db,
                                         "SELECT s.id, s.metric, j.key, j.value FROM series s "
                                         "LEFT JOIN json_each(s.labels) j WHERE s.id >= ?1 ORDER BY s.id",
                                         &st)
                           : -EAGAIN;
        if (r == 0)
                sqlite3_bind_int64(st, 1, min_id);
        while (r == 0 && (rc = sqlite3_step(st)) == SQLITE_ROW) {
                int64_t id = sqlite3_column_int64(st, 0);
                if (n == 0 || list[n - 1].id != id) {
                        if (n == cap) {
                                cap = cap ? 2 * cap : 64;
                                struct cursor_series *grown = realloc(list, cap * sizeof(*grown));
                                if (!grown) {
                                        r = -ENOMEM;
                                        break;
                                }
                                list = grown;
                        }
                        list[n] = (struct cursor_series){ .id = id };
                        const unsigned char *name = sqlite3_column_text(st, 1);
                        snprintf(list[n].name, sizeof(list[n].name), "%s", name ? (const char *) name : "");
                        n++;
                }
                struct cursor_series *c = &list[n - 1];
                const unsigned char *key = sqlite3_column_text(st, 2), *value = sqlite3_column_text(st, 3);
                if (key && value && value[0] && c->n_labels < CURSOR_LABELS_MAX) {
                        snprintf(c->labels[c->n_labels].name, sizeof(c->labels[0].name), "%s", key);
                        snprintf(c->labels[c->n_labels].value, sizeof(c->labels[0].value), "%s", value);
                        c->n_labels++;
                }
        }
        if (r == 0 && rc != SQLITE_DONE)
                r = sql_errno(rc);
        sqlite3_finalize(st);
        pthread_mutex_unlock(&s->read_lock);
        if (r == -EUCLEAN)
                store_note_damage(s, generation);
        if (r < 0) {
                free(list);
                return r;
        }
        *ret = list;
        *ret_n = n;
        return 0;
}

/* Exact for the open span (a tick's row holds its samples); for chunks,
 * those that start after the position count whole and the one a series
 * has across the position counts in proportion to its time after it. */
static int cursor_count_after(void *impl, const struct cursor_position *after, uint64_t *ret) {
        struct store *s = impl;
        sqlite3_stmt *st = NULL;
        int64_t recent_from = INT64_MAX;
        double total = 0;

        pthread_mutex_lock(&s->read_lock);
        int r = s->read_db ? sql_exec(s->read_db, "BEGIN") : -EAGAIN;
        if (r == 0)
                r = recent_start(s, &recent_from);
        if (r == 0)
                r = sql_prepare(s->read_db, "SELECT coalesce(sum(length(data)), 0) / 12 FROM recent WHERE ts > ?1",
                                &st);
        if (r == 0) {
                sqlite3_bind_int64(st, 1, after->timestamp_ms);
                if (sqlite3_step(st) == SQLITE_ROW)
                        total += (double) sqlite3_column_int64(st, 0);
                sqlite3_finalize(st);
                st = NULL;
        }
        if (r == 0 && after->timestamp_ms < recent_from)
                r = sql_prepare(s->read_db,
                                "SELECT coalesce(sum(CASE WHEN start_ts > ?1 THEN count "
                                "ELSE count * (end_ts - ?1) / (end_ts - start_ts) END), 0) FROM "
                                "(SELECT start_ts, end_ts, count FROM chunks WHERE end_ts > ?1 UNION ALL "
                                "SELECT start_ts, end_ts, count FROM head WHERE end_ts > ?1)",
                                &st);
        if (r == 0 && st) {
                sqlite3_bind_int64(st, 1, after->timestamp_ms);
                if (sqlite3_step(st) == SQLITE_ROW)
                        total += sqlite3_column_double(st, 0);
                sqlite3_finalize(st);
        }
        if (s->read_db)
                sql_exec(s->read_db, "COMMIT");
        pthread_mutex_unlock(&s->read_lock);
        if (r < 0)
                return r;
        *ret = (uint64_t) total;
        return 0;
}

static int64_t cursor_newest(void *impl) {
        struct store *s = impl;
        pthread_mutex_lock(&s->stats_lock);
        int64_t newest = s->stats.newest_ms;
        pthread_mutex_unlock(&s->stats_lock);
        return newest;
}

static uint64_t cursor_generation(void *impl) {
        return store_generation(impl);
}

static int cursor_load(void *impl, const char *name, struct cursor_position *ret) {
        struct store *s = impl;
        struct cursor_position pos;
        bool found = false;

        /* A position saved since the last flush is the newest. */
        pthread_mutex_lock(&s->positions_lock);
        for (size_t i = 0; i < s->n_positions && !found; i++)
                if (strcmp(s->positions[i].name, name) == 0) {
                        pos = s->positions[i].pos;
                        found = true;
                }
        pthread_mutex_unlock(&s->positions_lock);
        if (found) {
                *ret = pos;
                return 0;
        }

        sqlite3_stmt *st = NULL;
        pthread_mutex_lock(&s->read_lock);
        int r = s->read_db ? 0 : -EAGAIN;
        /* No table yet: nothing was ever saved in this file. */
        if (r == 0 && sqlite3_prepare_v2(s->read_db, "SELECT ts, series FROM positions WHERE name = ?1", -1, &st,
                                         NULL) != SQLITE_OK)
                r = -ENOENT;
        if (r == 0) {
                sqlite3_bind_text(st, 1, name, -1, SQLITE_STATIC);
                int rc = sqlite3_step(st);
                if (rc == SQLITE_ROW)
                        pos = (struct cursor_position){ sqlite3_column_int64(st, 0), sqlite3_column_int64(st, 1) };
                else
                        r = rc == SQLITE_DONE ? -ENOENT : sql_errno(rc);
        }
        sqlite3_finalize(st);
        pthread_mutex_unlock(&s->read_lock);
        if (r < 0)
                return r;
        *ret = pos;
        return 0;
}

static int cursor_save(void *impl, const char *name, const struct cursor_position *pos) {
        struct store *s = impl;
        int r = 0;

        if (strlen(name) >= CURSOR_NAME_MAX)
                return -EINVAL;
        pthread_mutex_lock(&s->positions_lock);
        size_t i = 0;
        while (i < s->n_positions && strcmp(s->positions[i].name, name) != 0)
                i++;
        if (i == s->n_positions) {
                struct store_position *grown = realloc(s->positions, (i + 1) * sizeof(*grown));
                if (grown) {
                        s->positions = grown;
                        s->positions[i] = (struct store_position){ 0 };
                        snprintf(s->positions[i].name, sizeof(s->positions[i].name), "%s", name);
                        s->n_positions++;
                } else {
                        r = -ENOMEM;
                }
        }
        if (r == 0) {
                s->positions[i].pos = *pos;
                s->positions[i].dirty = true;
        }
        pthread_mutex_unlock(&s->positions_lock);
        return r;
}

int store_flush_positions(struct store *s) {
        struct store_position dirty[STORE_POSITIONS_FLUSHED];
        size_t n = 0;
        sqlite3_stmt *st = NULL;

        pthread_mutex_lock(&s->positions_lock);
        for (size_t i = 0; i < s->n_positions && n < STORE_POSITIONS_FLUSHED; i++)
                if (s->positions[i].dirty)
                        dirty[n++] = s->positions[i];
        pthread_mutex_unlock(&s->positions_lock);
        if (n == 0 || !s->db)
                return 0;

        int r = sql_exec(s->db, "BEGIN IMMEDIATE");
        if (r < 0)
                return r;
        r = sql_exec(s->db, "CREATE TABLE IF NOT EXISTS positions (name TEXT PRIMARY KEY, ts INTEGER NOT NULL, "
                            "series INTEGER NOT NULL)");
        if (r == 0)
                r = sql_prepare(s->db, "INSERT OR REPLACE INTO positions (name, ts, series) VALUES (?1, ?2, ?3)", &st);
        for (size_t i = 0; i < n && r == 0; i++) {
                sqlite3_bind_text(st, 1, dirty[i].name, -1, SQLITE_STATIC);
                sqlite3_bind_int64(st, 2, dirty[i].pos.timestamp_ms);
                sqlite3_bind_int64(st, 3, dirty[i].pos.series);
                r = sql_step_done(st);
        }
        sqlite3_finalize(st);
        r = sql_exec(s->db, r == 0 ? "COMMIT" : "ROLLBACK") < 0 && r == 0 ? -EIO : r;
        if (r < 0)
                return r;
        /* Clean unless saved again meanwhile. */
        pthread_mutex_lock(&s->positions_lock);
        for (size_t k = 0; k < n; k++)
                for (size_t i = 0; i < s->n_positions; i++)
                        if (strcmp(s->positions[i].name, dirty[k].name) == 0 &&
                            cursor_position_compare(&s->positions[i].pos, &dirty[k].pos) == 0)
                                s->positions[i].dirty = false;
        pthread_mutex_unlock(&s->positions_lock);
        return 0;
}

const struct cursor_ops store_cursor_ops = {
        .read = cursor_read,
        .list_series = cursor_list_series,
        .count_after = cursor_count_after,
        .newest = cursor_newest,
        .generation = cursor_generation,
        .load = cursor_load,
        .save = cursor_save,
};
