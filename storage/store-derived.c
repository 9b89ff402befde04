#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "storage/chunk.h"
#include "storage/derive.h"
#include "storage/sql.h"
#include "storage/store-internal.h"

/* Derivations chain (a counter of a mean): a derived chunk's sources are
 * read at most this many levels down, so that a damaged file cannot
 * recurse without end. */
#define DERIVE_DEPTH_MAX 4

void store_samples_free(struct store_samples *s) {
        free(s->ts);
        free(s->v);
        *s = (struct store_samples){ 0 };
}

static int samples_reserve(struct store_samples *s, size_t n) {
        if (n <= s->cap)
                return 0;
        int64_t *ts = realloc(s->ts, n * sizeof(*ts));
        if (ts)
                s->ts = ts;
        double *v = realloc(s->v, n * sizeof(*v));
        if (v)
                s->v = v;
        if (!ts || !v)
                return -ENOMEM;
        s->cap = n;
        return 0;
}

static int decode_raw(sqlite3_stmt *hour_chunk, int64_t hour, const uint8_t *data, size_t size, unsigned depth,
                      struct store_samples *out);

static int read_hour(sqlite3_stmt *hour_chunk, int64_t id, int64_t hour, unsigned depth, struct store_samples *out) {
        sqlite3_reset(hour_chunk);
        sqlite3_bind_int64(hour_chunk, 1, id);
        sqlite3_bind_int64(hour_chunk, 2, hour);
        int rc = sqlite3_step(hour_chunk);
        if (rc != SQLITE_ROW) {
                sqlite3_reset(hour_chunk);
                return rc == SQLITE_DONE ? -ENOENT : sql_errno(rc);
        }
        /* A copy: reading its own sources steps the same statement. */
        size_t size = (size_t) sqlite3_column_bytes(hour_chunk, 0);
        uint8_t *data = malloc(size ? size : 1);
        if (!data) {
                sqlite3_reset(hour_chunk);
                return -ENOMEM;
        }
        if (size > 0)
                memcpy(data, sqlite3_column_blob(hour_chunk, 0), size);
        sqlite3_reset(hour_chunk);
        int r = decode_raw(hour_chunk, hour, data, size, depth, out);
        free(data);
        return r;
}

static int decode_raw(sqlite3_stmt *hour_chunk, int64_t hour, const uint8_t *data, size_t size, unsigned depth,
                      struct store_samples *out) {
        struct derive_header h;
        out->n = 0;
        if (!derive_is(data, size)) {
                int n = chunk_count(data, size, NULL);
                int r = n < 0 ? n : samples_reserve(out, (size_t) n);
                if (r < 0)
                        return r;
                n = chunk_decode(data, size, INT64_MAX, out->ts, (double *const[]){ out->v }, 1);
                out->n = n < 0 ? 0 : (size_t) n;
                return n;
        }
        int r = derive_header_read(data, size, &h);
        if (r == 0 && depth >= DERIVE_DEPTH_MAX)
                r = -EBADMSG;
        struct store_samples sources[DERIVE_SOURCES_MAX] = { 0 };
        struct derive_source views[DERIVE_SOURCES_MAX];
        for (size_t j = 0; r == 0 && j < h.n_sources; j++) {
                int n = read_hour(hour_chunk, h.sources[j], hour, depth + 1, &sources[j]);
                r = n == -ENOENT ? -EBADMSG : n < 0 ? n : 0;
                views[j] = (struct derive_source){ sources[j].ts, sources[j].v, sources[j].n };
        }
        int n = r < 0 ? r : derive_count(&h, data, size);
        if (n >= 0)
                r = samples_reserve(out, (size_t) n);
        if (n >= 0 && r == 0)
                n = derive_decode(&h, data, size, views, out->ts, out->v);
        if (r == 0 && n >= 0)
                out->n = (size_t) n;
        for (size_t j = 0; j < DERIVE_SOURCES_MAX; j++)
                store_samples_free(&sources[j]);
        return r < 0 ? r : n;
}

int store_decode_raw(sqlite3_stmt *hour_chunk, int64_t hour, const uint8_t *data, size_t size,
                     struct store_samples *out) {
        return decode_raw(hour_chunk, hour, data, size, 0, out);
}

int store_read_hour(sqlite3_stmt *hour_chunk, int64_t id, int64_t hour, struct store_samples *out) {
        return read_hour(hour_chunk, id, hour, 0, out);
}

static int derive_depth(int metric) {
        int depth = 0;
        for (; metric_table[metric].derive != DERIVE_NONE && depth <= METRIC__COUNT; depth++)
                metric = (int) metric_table[metric].derived_from;
        return depth;
}

int store_compact_order_sql(char *buf, size_t size) {
        size_t len = (size_t) snprintf(buf, size, "SELECT id, metric, rank FROM (SELECT id, metric, CASE metric");
        for (int m = 0; m < METRIC__COUNT && len < size; m++)
                if (metric_table[m].derive != DERIVE_NONE)
                        len += (size_t) snprintf(buf + len, size - len, " WHEN '%s' THEN %d", metric_table[m].name,
                                                 derive_depth(m));
        if (len < size)
                len += (size_t) snprintf(buf + len, size - len,
                                         " ELSE 0 END AS rank FROM series) WHERE rank > ?1 OR (rank = ?1 AND id >= ?2) "
                                         "ORDER BY rank, id LIMIT 64");
        return len < size ? 0 : -ENOBUFS;
}

/* Whether series y is a source of x, of family d: each label of d equals
 * the label of y's family that derived_labels names in its place. */
static bool labels_match(const struct metric_desc *d, const struct series_desc *x, const struct series_desc *y) {
        const struct metric_desc *src = &metric_table[d->derived_from];
        for (size_t i = 0; i < metric_label_count(d); i++) {
                int k = metric_label_index(src, d->derived_labels[i] ? d->derived_labels[i] : d->labels[i]);
                if (k >= 0 && strcmp(x->label_values[i], y->label_values[k]) != 0)
                        return false;
        }
        return true;
}

int store_link_sources(struct tickbuf *b) {
        free(b->sources);
        free(b->n_sources);
        b->sources = calloc(b->n_series ? b->n_series : 1, sizeof(*b->sources));
        b->n_sources = calloc(b->n_series ? b->n_series : 1, sizeof(*b->n_sources));
        if (!b->sources || !b->n_sources)
                return -ENOMEM;
        for (size_t i = 0; i < b->n_series; i++) {
                const struct metric_desc *d = &metric_table[b->series[i].metric];
                size_t n = 0;
                for (size_t k = 0; k < b->n_stored && d->derive != DERIVE_NONE; k++) {
                        size_t j = b->by_id[k];
                        if ((int) b->series[j].metric != (int) d->derived_from ||
                            !labels_match(d, &b->series[i], &b->series[j]))
                                continue;
                        /* More than a rule takes: none. */
                        if (n == DERIVE_SOURCES_MAX) {
                                n = 0;
                                break;
                        }
                        b->sources[i][n++] = b->ids[j];
                }
                b->n_sources[i] = (uint8_t) n;
        }
        return 0;
}

const int64_t *store_sources_of(const struct tickbuf *b, int64_t id, size_t *ret_n) {
        size_t lo = 0, hi = b->sources ? b->n_stored : 0;
        while (lo < hi) { /* by_id lists the series by ascending id */
                size_t mid = lo + (hi - lo) / 2;
                if (b->ids[b->by_id[mid]] < id)
                        lo = mid + 1;
                else
                        hi = mid;
        }
        bool found = b->sources && lo < b->n_stored && b->ids[b->by_id[lo]] == id;
        *ret_n = found ? b->n_sources[b->by_id[lo]] : 0;
        return found ? b->sources[b->by_id[lo]] : NULL;
}

/* SELECT id FROM series WHERE metric = <family `derived`> AND, for each
 * label that matches one of its source family's, the label is the same as
 * that label of series ?1 (of the source family). */
static int dependents_sql(int derived, char *buf, size_t size) {
        const struct metric_desc *d = &metric_table[derived], *src = &metric_table[d->derived_from];
        size_t len = (size_t) snprintf(buf, size, "SELECT id FROM series WHERE metric = '%s'", d->name);
        for (size_t i = 0; i < metric_label_count(d) && len < size; i++) {
                const char *theirs = d->derived_labels[i] ? d->derived_labels[i] : d->labels[i];
                if (metric_label_index(src, theirs) >= 0)
                        len += (size_t) snprintf(buf + len, size - len,
                                                 " AND json_extract(labels, '$.%s') IS "
                                                 "(SELECT json_extract(labels, '$.%s') FROM series WHERE id = ?1)",
                                                 d->labels[i], theirs);
        }
        return len < size ? 0 : -ENOBUFS;
}

int store_find_dependents(sqlite3 *db, sqlite3_stmt **st, int derived, int64_t id, int64_t **ret, size_t *ret_n) {
        char sql[1024];
        int64_t *ids = NULL;
        size_t n = 0, cap = 0;
        int rc, r = 0;
        if (!*st) {
                r = dependents_sql(derived, sql, sizeof(sql));
                if (r == 0)
                        r = sql_prepare(db, sql, st);
                if (r < 0)
                        return r;
        }
        sqlite3_bind_int64(*st, 1, id);
        while (r == 0 && (rc = sqlite3_step(*st)) == SQLITE_ROW) {
                if (n == cap) {
                        cap = cap ? 2 * cap : 4;
                        int64_t *grown = realloc(ids, cap * sizeof(*ids));
                        if (!grown) {
                                r = -ENOMEM;
                                break;
                        }
                        ids = grown;
                }
                ids[n++] = sqlite3_column_int64(*st, 0);
        }
        if (r == 0 && rc != SQLITE_DONE)
                r = sql_errno(rc);
        sqlite3_reset(*st);
        if (r < 0) {
                free(ids);
                return r;
        }
        *ret = ids;
        *ret_n = n;
        return 0;
}
