#include "config.h"

#include <stdbool.h>
#include <stdio.h>

#include "storage/sql.h"
#include "storage/store-internal.h"

/* How each table's rows of one series (?1) are found: those starting
 * before ?2, and the oldest one's start. */
struct table_rows {
        const char *table;
        const char *older; /* condition: series ?1, start before ?2 */
        const char *first; /* expression: the series' first start, correlated with series.id */
};

static const struct table_rows raw_rows = { "chunks", "series_id = ?1 AND hour < ?2",
                                            "(SELECT min(hour) FROM chunks WHERE series_id = series.id)" };
static const struct table_rows head_rows = { "head", "series_id = ?1 AND start_ts < ?2",
                                             "(SELECT min(start_ts) FROM head WHERE series_id = series.id)" };
static const struct table_rows minute_rows = {
        "rollup_1m", "key >= ?1 * 16777216 AND key < " STORE_MINUTES_KEY("?1", "(?2 + 3599999)"),
        "(SELECT hour FROM rollup_1m WHERE key >= series.id * 16777216 ORDER BY key LIMIT 1)"
};
static const struct table_rows hour_rows = { "rollup_1h", "series_id = ?1 AND ts < ?2",
                                             "(SELECT min(ts) FROM rollup_1h WHERE series_id = series.id)" };

/* Deletes the rows of a table that start before cutoff, series by series
 * so that every delete is a range of a key. */
static int delete_older(struct store *s, const struct table_rows *t, int64_t cutoff) {
        char sql[256];
        sqlite3_stmt *st = NULL, *ids = NULL;
        int rc, r;

        snprintf(sql, sizeof(sql), "DELETE FROM %s WHERE %s", t->table, t->older);
        r = sql_prepare(s->db, sql, &st);
        if (r == 0)
                r = sql_prepare(s->db, "SELECT id FROM series", &ids);
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

static int oldest(struct store *s, const struct table_rows *t, int64_t *ret) {
        char sql[256];
        snprintf(sql, sizeof(sql), "SELECT min(%s) FROM series", t->first);
        return sql_query_int(s->db, sql, ret);
}

/* Series in no current list (temp.live, store-write.c) with no row left in
 * any tier, every one past its retention: gone with their identity, so
 * that runtimes that come and go under new tags free their place under
 * the series limit. The series with the highest id stays, so that no id
 * is ever given to another series (SQLite gives a new row the highest id
 * plus one): readers that hold an id never see it change meaning. */
static int collect_series(struct store *s) {
        return sql_exec(s->db, "DELETE FROM series WHERE id NOT IN (SELECT id FROM temp.live)"
                               " AND id < (SELECT max(id) FROM series)"
                               " AND NOT EXISTS (SELECT 1 FROM chunks WHERE series_id = series.id)"
                               " AND NOT EXISTS (SELECT 1 FROM head WHERE series_id = series.id)"
                               " AND NOT EXISTS (SELECT 1 FROM rollup_1m WHERE key >= series.id * 16777216"
                               "  AND key < (series.id + 1) * 16777216)"
                               " AND NOT EXISTS (SELECT 1 FROM rollup_1h WHERE series_id = series.id)");
}

/* Age limits per tier, then the size cap: while the pages in use exceed
 * it, a slice of the oldest rows goes from the tier whose oldest row is
 * oldest relative to its retention, so every tier's history shrinks by
 * about the same fraction. Raw data of hours still pending stays (their
 * rollups are made from it). Rows go once all of their span is past the
 * retention. Freed pages are given back to the file system by incremental
 * vacuum. Runs inside the caller's transaction. */
int store_enforce_retention(struct store *s, int64_t now_ms) {
        static const struct {
                const struct table_rows *rows;
                int64_t span, slice_ms;
        } tiers[] = {
                { &raw_rows, STORE_HOUR_MS, STORE_HOUR_MS },
                { &minute_rows, STORE_HOUR_MS, 24LL * STORE_HOUR_MS },
                { &hour_rows, STORE_HOUR_MS, 7LL * 24 * STORE_HOUR_MS },
        };
        const int64_t keep[] = { s->opt.raw_retention_ms, s->opt.minute_retention_ms, s->opt.hour_retention_ms };
        int64_t pending = INT64_MAX;
        int r = sql_query_int(s->db, "SELECT coalesce(min(hour), 9223372036854775807) FROM pending", &pending);

        int64_t cutoff[3] = { now_ms - keep[0] < pending ? now_ms - keep[0] : pending, now_ms - keep[1],
                              now_ms - keep[2] };
        for (size_t t = 0; t < 3 && r == 0; t++)
                r = delete_older(s, tiers[t].rows, cutoff[t] - tiers[t].span + 1);
        if (r == 0)
                r = store_collect_data(s->db, cutoff[0] - STORE_HOUR_MS + 1);
        /* Head chunks outside pending hours (written while the clock was
         * set back into an hour being compacted) age out with the rest. */
        if (r == 0)
                r = delete_older(s, &head_rows, cutoff[0]);
        while (r == 0 && s->opt.size_cap_bytes > 0 && sql_used_bytes(s->db) > (int64_t) s->opt.size_cap_bytes) {
                int pick = -1;
                int64_t from[3];
                double worst = -1;
                for (int t = 0; t < 3 && r == 0; t++) {
                        r = oldest(s, tiers[t].rows, &from[t]);
                        /* An empty tier answers NULL, read as 0. */
                        double age = (double) (now_ms - from[t]) / (double) keep[t];
                        bool pending_raw = t == 0 && from[t] >= pending;
                        if (r == 0 && from[t] != 0 && !pending_raw && age > worst) {
                                worst = age;
                                pick = t;
                        }
                }
                if (r < 0 || pick < 0)
                        break;
                int64_t to = from[pick] + tiers[pick].slice_ms;
                if (pick == 0 && to > pending)
                        to = pending;
                r = delete_older(s, tiers[pick].rows, to);
                if (r == 0 && pick == 0)
                        r = store_collect_data(s->db, to);
        }
        return r == 0 ? collect_series(s) : r;
}
