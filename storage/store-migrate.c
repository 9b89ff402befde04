#include "config.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>

#include "storage/chunk-v2.h"
#include "storage/chunk.h"
#include "storage/sql.h"
#include "storage/store-internal.h"

/* The samples of one series, oldest first, as a migration reads them. */
struct series_samples {
        int64_t id;
        size_t n, cap;
        int64_t *ts;
        double *v;
};

static int samples_reserve(struct series_samples *b, size_t n) {
        if (n <= b->cap)
                return 0;
        size_t cap = n > 2 * b->cap ? n : 2 * b->cap;
        int64_t *ts = realloc(b->ts, cap * sizeof(*ts));
        if (ts)
                b->ts = ts;
        double *v = realloc(b->v, cap * sizeof(*v));
        if (v)
                b->v = v;
        if (!ts || !v)
                return -ENOMEM;
        b->cap = cap;
        return 0;
}

/* Writes one series' samples: hours before `pending_from` as one chunk per
 * hour (their rollups exist), the rest as head chunks, whose hours become
 * pending so that compaction computes their rollups. */
static int write_series(struct store *s, struct store_packer *put, struct series_samples *b, int64_t pending_from) {
        size_t at = 0;
        int r = store_sort_samples(b->ts, b->v, &b->n);
        while (at < b->n && r == 0) {
                int64_t hour = store_hour_of(b->ts[at]);
                size_t end = at;
                while (end < b->n && store_hour_of(b->ts[end]) == hour)
                        end++;
                if (hour >= pending_from) {
                        r = store_write_head(s, b->id, b->ts + at, b->v + at, end - at);
                } else {
                        uint8_t *data = NULL;
                        size_t size = 0;
                        r = chunk_encode(b->ts + at, (const double *const[]){ b->v + at }, 1, end - at, &data, &size);
                        if (r == 0)
                                r = store_put_hourly(put, b->id, hour, data, size, b->ts[at], b->ts[end - 1], end - at);
                        free(data);
                }
                at = end;
        }
        return r;
}

/* Schema 1 kept one row per sample in samples(series_id, ts, value); none
 * of it was rolled up. */
int store_migrate_from_1(struct store *s) {
        sqlite3_stmt *sel = NULL;
        struct series_samples b = { .id = -1 };
        int r, rc;

        r = sql_prepare(s->db, "SELECT series_id, ts, value FROM samples ORDER BY series_id, ts", &sel);
        while (r == 0) {
                rc = sqlite3_step(sel);
                int64_t id = rc == SQLITE_ROW ? sqlite3_column_int64(sel, 0) : -1;
                if (b.n > 0 && id != b.id) {
                        r = store_write_head(s, b.id, b.ts, b.v, b.n);
                        b.n = 0;
                }
                if (rc != SQLITE_ROW) {
                        if (r == 0 && rc != SQLITE_DONE)
                                r = sql_errno(rc);
                        break;
                }
                if (r == 0)
                        r = samples_reserve(&b, b.n + 1);
                if (r < 0)
                        break;
                b.id = id;
                b.ts[b.n] = sqlite3_column_int64(sel, 1);
                b.v[b.n++] = sqlite3_column_type(sel, 2) == SQLITE_NULL ? NAN : sqlite3_column_double(sel, 2);
        }
        sqlite3_finalize(sel);
        free(b.ts);
        free(b.v);
        if (r == 0)
                r = sql_exec(s->db, "DROP TABLE samples");
        return r;
}

/* Schema 2's raw tier (chunks_2): 5-minute chunks in its own format,
 * rewritten as one chunk per series and hour. */
static int migrate_raw_2(struct store *s, int64_t pending_from) {
        sqlite3_stmt *sel = NULL;
        struct store_packer put;
        struct series_samples b = { .id = -1 };
        int r, rc;

        r = store_packer_open(&put, s->db);
        if (r == 0)
                r = sql_prepare(s->db, "SELECT series_id, data FROM chunks_2 ORDER BY series_id, start_ts", &sel);
        while (r == 0) {
                rc = sqlite3_step(sel);
                int64_t id = rc == SQLITE_ROW ? sqlite3_column_int64(sel, 0) : -1;
                if (b.n > 0 && id != b.id) {
                        r = write_series(s, &put, &b, pending_from);
                        b.n = 0;
                }
                if (rc != SQLITE_ROW) {
                        if (r == 0 && rc != SQLITE_DONE)
                                r = sql_errno(rc);
                        break;
                }
                const uint8_t *data = sqlite3_column_blob(sel, 1);
                size_t size = (size_t) sqlite3_column_bytes(sel, 1);
                int n = chunk_v2_count(data, size);
                /* A chunk that does not decode was unreadable before too. */
                if (r < 0 || n < 0)
                        continue;
                r = samples_reserve(&b, b.n + (size_t) n);
                if (r == 0 && (n = chunk_v2_decode(data, size, b.ts + b.n, b.v + b.n)) > 0) {
                        b.id = id;
                        b.n += (size_t) n;
                }
        }
        if (r == 0)
                r = store_packer_flush(&put);
        sqlite3_finalize(sel);
        store_packer_close(&put);
        free(b.ts);
        free(b.v);
        return r;
}

/* Schema 2's minute rollups (rollup_1m_2): a row per series and minute,
 * rewritten as one rollup chunk per series and hour. */
static int migrate_minutes_2(struct store *s) {
        sqlite3_stmt *sel = NULL, *put = NULL;
        int64_t ts[60], id = -1, hour = INT64_MIN;
        struct rollup_cell cells[60];
        size_t n = 0;
        int r, rc;

        r = sql_prepare(s->db,
                        "SELECT series_id, ts, min, max, sum, count, last FROM rollup_1m_2 WHERE count > 0 "
                        "ORDER BY series_id, ts",
                        &sel);
        if (r == 0)
                r = sql_prepare(s->db, STORE_PUT_MINUTES, &put);
        while (r == 0) {
                rc = sqlite3_step(sel);
                bool row = rc == SQLITE_ROW;
                int64_t row_id = row ? sqlite3_column_int64(sel, 0) : -1;
                int64_t row_ts = row ? sqlite3_column_int64(sel, 1) : 0;
                if (n > 0 && (!row || row_id != id || store_hour_of(row_ts) != hour)) {
                        r = store_put_minutes(put, id, hour, ts, cells, n);
                        n = 0;
                }
                if (!row) {
                        if (r == 0 && rc != SQLITE_DONE)
                                r = sql_errno(rc);
                        break;
                }
                id = row_id;
                hour = store_hour_of(row_ts);
                ts[n] = row_ts;
                cells[n++] = (struct rollup_cell){
                        .min = sqlite3_column_double(sel, 2),
                        .max = sqlite3_column_double(sel, 3),
                        .sum = sqlite3_column_double(sel, 4),
                        .count = sqlite3_column_int64(sel, 5),
                        .last = sqlite3_column_double(sel, 6),
                };
        }
        sqlite3_finalize(sel);
        sqlite3_finalize(put);
        return r;
}

/* Schema 2 rolled samples up minute by minute as they came: those before
 * meta's rolled_ms were counted (absent after a clean stop: all were). The
 * hours from the watermark's on are rolled up again, from their raw
 * samples, by compaction. The 1-hour rollups keep their table. */
int store_migrate_from_2(struct store *s) {
        int64_t rolled = INT64_MAX;
        int r = sql_query_int(s->db,
                              "SELECT coalesce((SELECT value FROM meta WHERE key = 'rolled_ms'), 9223372036854775807)",
                              &rolled);
        int64_t pending_from = rolled == INT64_MAX ? INT64_MAX : store_hour_of(rolled);
        if (r == 0)
                r = migrate_raw_2(s, pending_from);
        if (r == 0)
                r = migrate_minutes_2(s);
        if (r == 0)
                r = sql_exec(s->db,
                             "DROP TABLE chunks_2; DROP TABLE rollup_1m_2; DELETE FROM meta WHERE key = 'rolled_ms'");
        return r;
}

/* Schemas 3 and 4 kept each hourly chunk's bytes in its row (chunks_4 now):
 * they move into chunk_data, hour by hour. */
int store_migrate_from_4(struct store *s) {
        sqlite3_stmt *sel = NULL;
        struct store_packer put;
        int r = store_packer_open(&put, s->db), rc = SQLITE_DONE;

        if (r == 0)
                r = sql_prepare(
                        s->db,
                        "SELECT series_id, hour, data, start_ts, end_ts, count FROM chunks_4 ORDER BY hour, series_id",
                        &sel);
        while (r == 0 && (rc = sqlite3_step(sel)) == SQLITE_ROW)
                r = store_put_hourly(&put, sqlite3_column_int64(sel, 0), sqlite3_column_int64(sel, 1),
                                     sqlite3_column_blob(sel, 2), (size_t) sqlite3_column_bytes(sel, 2),
                                     sqlite3_column_int64(sel, 3), sqlite3_column_int64(sel, 4),
                                     (size_t) sqlite3_column_int64(sel, 5));
        if (r == 0 && rc != SQLITE_DONE)
                r = sql_errno(rc);
        if (r == 0)
                r = store_packer_flush(&put);
        sqlite3_finalize(sel);
        store_packer_close(&put);
        if (r == 0)
                r = sql_exec(s->db, "DROP TABLE chunks_4");
        return r;
}
