#include "config.h"

#include <stdio.h>

#include "storage/sql.h"
#include "storage/store-internal.h"

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
int store_enforce_retention(struct store *s, int64_t now_ms) {
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
