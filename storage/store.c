#include "config.h"

#include <errno.h>
#include <pthread.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "storage/store.h"

/* Schema 1: one row per sample. Labels are a JSON object so that
 * `sqlite3 neurond.db` users can filter with json_extract(). */
#define STORE_SCHEMA_VERSION 1

static const char schema_sql[] =
        "CREATE TABLE IF NOT EXISTS series ("
        "  id INTEGER PRIMARY KEY,"
        "  metric TEXT NOT NULL,"
        "  labels TEXT NOT NULL,"
        "  UNIQUE (metric, labels));"
        "CREATE TABLE IF NOT EXISTS samples ("
        "  series_id INTEGER NOT NULL REFERENCES series(id),"
        "  ts INTEGER NOT NULL,"
        "  value REAL NOT NULL,"
        "  PRIMARY KEY (series_id, ts)) WITHOUT ROWID;";

struct store {
        sqlite3 *db;        /* the tick loop's connection */
        sqlite3 *read_db;   /* queries' connection, serialised by read_lock */
        pthread_mutex_t read_lock;
        sqlite3_stmt *insert;
        int64_t *series_ids; /* registered series index -> series.id */
        size_t n_series;
};

static int errno_from_sqlite(int rc) {
        switch (rc & 0xff) {
        case SQLITE_OK:
        case SQLITE_DONE:
        case SQLITE_ROW:
                return 0;
        case SQLITE_NOMEM:
                return -ENOMEM;
        case SQLITE_FULL:
                return -ENOSPC;
        case SQLITE_READONLY:
                return -EROFS;
        case SQLITE_BUSY:
        case SQLITE_LOCKED:
                return -EBUSY;
        case SQLITE_CANTOPEN:
        case SQLITE_PERM:
        case SQLITE_AUTH:
                return -EACCES;
        case SQLITE_MISUSE:
        case SQLITE_RANGE:
        case SQLITE_ERROR:
                return -EINVAL;
        default:
                return -EIO;
        }
}

static int exec(sqlite3 *db, const char *sql) {
        return errno_from_sqlite(sqlite3_exec(db, sql, NULL, NULL, NULL));
}

static int open_connection(const char *path, int flags, sqlite3 **ret) {
        sqlite3 *db = NULL;
        int rc = sqlite3_open_v2(path, &db, flags | SQLITE_OPEN_NOMUTEX, NULL);
        if (rc != SQLITE_OK) {
                sqlite3_close(db);
                return errno_from_sqlite(rc);
        }
        sqlite3_busy_timeout(db, 5000);
        *ret = db;
        return 0;
}

int store_open(const char *path, struct store **ret) {
        struct store *s = calloc(1, sizeof(*s));
        int r;

        if (!s)
                return -ENOMEM;
        pthread_mutex_init(&s->read_lock, NULL);
        r = open_connection(path, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, &s->db);
        if (r < 0)
                goto fail;
        r = exec(s->db, "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;");
        if (r < 0)
                goto fail;

        sqlite3_stmt *st = NULL;
        r = errno_from_sqlite(sqlite3_prepare_v2(s->db, "PRAGMA user_version", -1, &st, NULL));
        if (r < 0)
                goto fail;
        int version = sqlite3_step(st) == SQLITE_ROW ? sqlite3_column_int(st, 0) : 0;
        sqlite3_finalize(st);
        if (version > STORE_SCHEMA_VERSION) {
                r = -EPROTONOSUPPORT;
                goto fail;
        }
        r = exec(s->db, "BEGIN");
        if (r == 0)
                r = exec(s->db, schema_sql);
        if (r == 0)
                r = exec(s->db, "PRAGMA user_version = 1");
        if (r == 0)
                r = exec(s->db, "COMMIT");
        if (r < 0)
                goto fail;

        r = errno_from_sqlite(sqlite3_prepare_v3(s->db, "INSERT OR REPLACE INTO samples(series_id, ts, value) VALUES (?, ?, ?)",
                                                 -1, SQLITE_PREPARE_PERSISTENT, &s->insert, NULL));
        if (r < 0)
                goto fail;
        r = open_connection(path, SQLITE_OPEN_READONLY, &s->read_db);
        if (r < 0)
                goto fail;
        *ret = s;
        return 0;
fail:
        store_close(s);
        return r;
}

void store_close(struct store *s) {
        if (!s)
                return;
        sqlite3_finalize(s->insert);
        sqlite3_close(s->read_db);
        sqlite3_close(s->db);
        pthread_mutex_destroy(&s->read_lock);
        free(s->series_ids);
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
        int r = errno_from_sqlite(sqlite3_prepare_v2(s->db, sql[n_labels], -1, &st, NULL));
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
                r = errno_from_sqlite(rc == SQLITE_DONE ? SQLITE_ERROR : rc);
        sqlite3_finalize(st);
        return r;
}

int store_register_series(struct store *s, const struct series_desc *series, size_t n) {
        int64_t *ids = calloc(n ? n : 1, sizeof(*ids));
        int r;

        if (!ids)
                return -ENOMEM;
        r = exec(s->db, "BEGIN");
        for (size_t i = 0; i < n && r == 0; i++)
                r = series_upsert(s, &series[i], &ids[i]);
        if (r == 0)
                r = exec(s->db, "COMMIT");
        if (r < 0) {
                exec(s->db, "ROLLBACK");
                free(ids);
                return r;
        }
        free(s->series_ids);
        s->series_ids = ids;
        s->n_series = n;
        return 0;
}

int store_append(struct store *s, int64_t timestamp_ms, const double *values, const uint8_t *valid, size_t n) {
        int r;

        if (n != s->n_series)
                return -EINVAL;
        r = exec(s->db, "BEGIN");
        for (size_t i = 0; i < n && r == 0; i++) {
                if (!valid[i])
                        continue;
                sqlite3_bind_int64(s->insert, 1, s->series_ids[i]);
                sqlite3_bind_int64(s->insert, 2, timestamp_ms);
                sqlite3_bind_double(s->insert, 3, values[i]);
                r = errno_from_sqlite(sqlite3_step(s->insert));
                sqlite3_reset(s->insert);
        }
        if (r == 0)
                r = exec(s->db, "COMMIT");
        if (r < 0)
                exec(s->db, "ROLLBACK");
        return r;
}

void store_result_free(struct store_result *r) {
        if (!r)
                return;
        for (size_t i = 0; i < r->n_series; i++)
                free(r->series[i].points);
        free(r->series);
        free(r);
}

static bool series_matches(const struct series_desc *d, const struct store_query *q) {
        const struct metric_desc *m = &metric_table[d->metric];
        for (size_t i = 0; i < q->n_matchers; i++) {
                int idx = metric_label_index(m, q->matchers[i].name);
                if (idx < 0 || strcmp(d->label_values[idx], q->matchers[i].value) != 0)
                        return false;
        }
        return true;
}

static int read_points(struct store *s, int64_t series_id, const struct store_query *q, struct store_series_result *out) {
        static const char *const sql[] = {
                [STORE_AGG_AVG] = "SELECT (ts / ?2) * ?2 AS b, avg(value) FROM samples "
                                  "WHERE series_id = ?1 AND ts >= ?3 AND ts <= ?4 GROUP BY b ORDER BY b",
                [STORE_AGG_MIN] = "SELECT (ts / ?2) * ?2 AS b, min(value) FROM samples "
                                  "WHERE series_id = ?1 AND ts >= ?3 AND ts <= ?4 GROUP BY b ORDER BY b",
                [STORE_AGG_MAX] = "SELECT (ts / ?2) * ?2 AS b, max(value) FROM samples "
                                  "WHERE series_id = ?1 AND ts >= ?3 AND ts <= ?4 GROUP BY b ORDER BY b",
                [STORE_AGG_SUM] = "SELECT (ts / ?2) * ?2 AS b, sum(value) FROM samples "
                                  "WHERE series_id = ?1 AND ts >= ?3 AND ts <= ?4 GROUP BY b ORDER BY b",
                /* SQLite takes a bare column from the row that max() picked. */
                [STORE_AGG_LAST] = "SELECT (ts / ?2) * ?2 AS b, value, max(ts) FROM samples "
                                   "WHERE series_id = ?1 AND ts >= ?3 AND ts <= ?4 GROUP BY b ORDER BY b",
        };
        sqlite3_stmt *st = NULL;
        size_t cap = 0;
        int r = errno_from_sqlite(sqlite3_prepare_v2(s->read_db, sql[q->agg], -1, &st, NULL));
        if (r < 0)
                return r;
        sqlite3_bind_int64(st, 1, series_id);
        sqlite3_bind_int64(st, 2, q->step_ms);
        /* Start from the edge of the first bucket so that buckets stay aligned. */
        sqlite3_bind_int64(st, 3, q->start_ms - q->start_ms % q->step_ms);
        sqlite3_bind_int64(st, 4, q->end_ms);
        int rc;
        while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
                if (out->n_points == cap) {
                        cap = cap ? 2 * cap : 64;
                        struct store_point *grown = realloc(out->points, cap * sizeof(*grown));
                        if (!grown) {
                                r = -ENOMEM;
                                break;
                        }
                        out->points = grown;
                }
                out->points[out->n_points++] = (struct store_point){
                        .timestamp_ms = sqlite3_column_int64(st, 0),
                        .value = sqlite3_column_double(st, 1),
                };
        }
        if (r == 0 && rc != SQLITE_DONE)
                r = errno_from_sqlite(rc);
        sqlite3_finalize(st);
        return r;
}

int store_query_range(struct store *s, const struct store_query *q, struct store_result **ret) {
        const struct metric_desc *m = &metric_table[q->metric];
        size_t n_labels = metric_label_count(m);
        struct store_result *res = calloc(1, sizeof(*res));
        sqlite3_stmt *st = NULL;
        size_t cap = 0;
        int r, rc;

        if (!res)
                return -ENOMEM;
        if (q->step_ms <= 0 || q->start_ms > q->end_ms) {
                free(res);
                return -EINVAL;
        }
        pthread_mutex_lock(&s->read_lock);
        r = errno_from_sqlite(sqlite3_prepare_v2(s->read_db,
                                                 "SELECT id, json_extract(labels, '$.' || ?2), json_extract(labels, '$.' || ?3),"
                                                 " json_extract(labels, '$.' || ?4) FROM series WHERE metric = ?1 ORDER BY id",
                                                 -1, &st, NULL));
        if (r < 0)
                goto out;
        sqlite3_bind_text(st, 1, m->name, -1, SQLITE_STATIC);
        for (size_t i = 0; i < n_labels; i++)
                sqlite3_bind_text(st, 2 + (int) i, m->labels[i], -1, SQLITE_STATIC);
        while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
                struct series_desc d = { .metric = q->metric };
                for (size_t i = 0; i < n_labels; i++) {
                        const unsigned char *v = sqlite3_column_text(st, 1 + (int) i);
                        snprintf(d.label_values[i], sizeof(d.label_values[i]), "%s", v ? (const char *) v : "");
                }
                if (!series_matches(&d, q))
                        continue;
                if (res->n_series == cap) {
                        cap = cap ? 2 * cap : 16;
                        struct store_series_result *grown = realloc(res->series, cap * sizeof(*grown));
                        if (!grown) {
                                r = -ENOMEM;
                                goto out;
                        }
                        res->series = grown;
                }
                struct store_series_result *out = &res->series[res->n_series++];
                *out = (struct store_series_result){ .desc = d };
                r = read_points(s, sqlite3_column_int64(st, 0), q, out);
                if (r < 0)
                        goto out;
                /* Series with no samples in the window are left out, as Prometheus does. */
                if (out->n_points == 0)
                        res->n_series--;
        }
        if (rc != SQLITE_DONE)
                r = errno_from_sqlite(rc);
out:
        sqlite3_finalize(st);
        /* End the read transaction so the WAL can be checkpointed. */
        pthread_mutex_unlock(&s->read_lock);
        if (r < 0) {
                store_result_free(res);
                return r;
        }
        *ret = res;
        return 0;
}
