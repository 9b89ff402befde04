#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/clock.h"
#include "storage/sql.h"
#include "storage/store-internal.h"

#define BACKOFF_MAX_TICKS 64

void store_options_init(struct store_options *o) {
        *o = (struct store_options){
                .raw_retention_ms = STORE_DEFAULT_RAW_RETENTION_MS,
                .minute_retention_ms = STORE_DEFAULT_MINUTE_RETENTION_MS,
                .hour_retention_ms = STORE_DEFAULT_HOUR_RETENTION_MS,
                .size_cap_bytes = STORE_DEFAULT_SIZE_CAP_BYTES,
                .chunk_ms = STORE_MINUTE_MS,
                .check_interval_ms = STORE_DEFAULT_CHECK_INTERVAL_MS,
                .max_series = STORE_DEFAULT_MAX_SERIES,
                .compact_slice = STORE_DEFAULT_COMPACT_SLICE,
        };
}

/* Allocates a store for path with no database open yet. */
static int store_new(const char *path, const struct store_options *o, struct store **ret) {
        if (o->chunk_ms <= 0 || o->chunk_ms % STORE_MINUTE_MS != 0 || STORE_HOUR_MS % o->chunk_ms != 0 ||
            o->compact_slice == 0)
                return -EINVAL;
        struct store *s = calloc(1, sizeof(*s));
        if (!s)
                return -ENOMEM;
        s->path = strdup(path);
        if (!s->path) {
                free(s);
                return -ENOMEM;
        }
        s->opt = *o;
        s->lock_fd = -1;
        s->compact_hour = INT64_MIN;
        s->compact_next_id = INT64_MIN;
        s->backoff = 1;
        atomic_init(&s->series_generation, 0);
        pthread_mutex_init(&s->read_lock, NULL);
        pthread_mutex_init(&s->stats_lock, NULL);
        pthread_mutex_init(&s->positions_lock, NULL);
        int r = store_check_start(s);
        if (r < 0) {
                store_close(s);
                return r;
        }
        *ret = s;
        return 0;
}

int store_open_with(const char *path, const struct store_options *o, struct store **ret) {
        struct store *s = NULL;
        int r = store_new(path, o, &s);
        if (r == 0)
                r = store_db_connect(s);
        if (r < 0) {
                store_close(s);
                return r;
        }
        *ret = s;
        return 0;
}

int store_open(const char *path, struct store **ret) {
        struct store_options o;
        store_options_init(&o);
        return store_open_with(path, &o, ret);
}

int store_open_or_set_aside(const char *path, const struct store_options *o, struct store **ret, char *aside,
                            size_t aside_len) {
        struct store *s = NULL;
        int r = store_new(path, o, &s);
        if (r == 0)
                r = store_db_connect_or_set_aside(s, false);
        if (s && s->aside[0] && aside)
                snprintf(aside, aside_len, "%s", s->aside);
        if (r < 0) {
                store_close(s);
                return r;
        }
        *ret = s;
        return r;
}

int store_open_deferred(const char *path, const struct store_options *o, int error, struct store **ret) {
        struct store *s = NULL;
        int r = store_new(path, o, &s);
        if (r < 0)
                return r;
        /* As after a failed write: the next tick tries again. */
        s->stats.degraded = true;
        s->stats.unopened = true;
        s->stats.last_error = error;
        s->retry_at = 1;
        s->backoff = 2;
        *ret = s;
        return 0;
}

bool store_error_is_transient(int error) {
        return error == -ENOSPC || error == -EDQUOT || error == -EROFS || error == -EIO;
}

/* Lets go of a file found damaged, for store_attach() to set it aside. */
static void drop_if_damaged(struct store *s) {
        pthread_mutex_lock(&s->stats_lock);
        bool damaged = s->damaged;
        pthread_mutex_unlock(&s->stats_lock);
        if (damaged && s->db)
                store_db_disconnect(s);
}

/* Opens the database of a deferred store, or a new one in place of a
 * damaged file, as store_open_or_set_aside() does, and enters the
 * registered series. */
static int store_attach(struct store *s) {
        pthread_mutex_lock(&s->stats_lock);
        bool damaged = s->damaged;
        pthread_mutex_unlock(&s->stats_lock);
        int r = store_db_connect_or_set_aside(s, damaged);
        if (r >= 0 && s->buf.ts)
                r = store_write_series(s, &s->buf);
        if (r < 0) {
                store_db_disconnect(s);
                return r;
        }
        return 0;
}

void store_close(struct store *s) {
        if (!s)
                return;
        store_check_stop(s);
        drop_if_damaged(s);
        /* A deferred store's last chance to keep its ticks, or one whose
         * file was found damaged. */
        if (!s->db && s->buf.n_ticks > 0)
                store_attach(s);
        /* Everything into head chunks, and every hour with new samples
         * compacted and rolled up while time allows: the file is as small
         * as it gets. */
        if (s->db && (s->buf.n_ticks == 0 || store_sync_ticks(s) == 0) && sql_exec(s->db, "BEGIN IMMEDIATE") == 0) {
                int64_t deadline = clock_monotonic_ms() + STORE_CLOSE_COMPACT_MS;
                bool more = true;
                int r = store_close_out_recent(s);
                while (r == 0 && more && clock_monotonic_ms() < deadline)
                        r = store_compact(s, INT64_MAX, s->opt.compact_slice, &more);
                sql_exec(s->db, r == 0 ? "COMMIT" : "ROLLBACK");
                sql_exec(s->db, "PRAGMA incremental_vacuum");
        }
        if (s->db) {
                store_flush_positions(s);
                store_flush_events(s);
        }
        store_db_disconnect(s);
        store_unlock(s);
        free(s->cache.ids);
        free(s->cache.descs);
        pthread_mutex_destroy(&s->read_lock);
        pthread_mutex_destroy(&s->stats_lock);
        pthread_mutex_destroy(&s->positions_lock);
        free(s->positions);
        free(s->events);
        free(s->path);
        tickbuf_free(&s->buf);
        free(s);
}

int store_register_series(struct store *s, const struct series_desc *series, size_t n) {
        struct tickbuf buf;
        /* The buffer holds the open chunk's ticks: a chunk span's worth,
         * CHUNK_TICKS_MAX at most, in steady state (9 bytes per series and
         * tick: 18 MiB for 6,624 series). Touching those rows now makes the
         * daemon resident at its steady size from the start, and a memory
         * limit trip at start-up, instead of growing through the first
         * span; the rest is the reserve for ticks waiting out a database
         * error, touched only then. Rows are written before they are read. */
        int r = tickbuf_init(&buf, series, n, BUFFER_TICKS_MAX, CHUNK_TICKS_MAX);
        if (r < 0)
                return r;
        /* Ticks buffered for the old series go to the database first. */
        if (s->buf.n_ticks > 0 && !s->db)
                r = store_attach(s);
        if (r == 0 && s->buf.n_ticks > 0) {
                r = store_sync_ticks(s);
                if (r == 0)
                        r = sql_exec(s->db, "BEGIN IMMEDIATE");
                if (r == 0) {
                        r = store_close_out_recent(s);
                        /* A commit that fails says why (a full disk is -ENOSPC). */
                        if (r == 0)
                                r = sql_exec(s->db, "COMMIT");
                        if (r < 0)
                                sql_exec(s->db, "ROLLBACK");
                }
                if (r == 0)
                        s->buf.n_ticks = s->buf.n_durable = 0;
        }
        /* Without a database the ids come when it opens (store_attach()). */
        if (r == 0 && s->db)
                r = store_write_series(s, &buf);
        if (r < 0) {
                tickbuf_free(&buf);
                return r;
        }
        tickbuf_free(&s->buf);
        s->buf = buf;
        return 0;
}

bool store_rollup_due(const struct store *s, int64_t timestamp_ms) {
        /* An hour is being compacted, or one ended with this tick. */
        return s->compact_hour != INT64_MIN ||
               (s->buf.n_ticks > 0 && store_hour_of(s->buf.ts[0]) != store_hour_of(timestamp_ms));
}

int store_append(struct store *s, int64_t timestamp_ms, const double *values, const uint8_t *valid, size_t n) {
        int r = 0;

        if (n != s->buf.n_series || !s->buf.ts)
                return -EINVAL;
        if (s->buf.n_ticks > 0 && timestamp_ms <= s->buf.ts[s->buf.n_ticks - 1])
                return -EINVAL;
        if (tickbuf_push(&s->buf, timestamp_ms, values, valid) > 0) {
                pthread_mutex_lock(&s->stats_lock);
                s->stats.ticks_dropped++;
                pthread_mutex_unlock(&s->stats_lock);
        }
        s->ticks_seen++;

        /* While degraded, retry after 1, 2, 4 ... ticks, at most 64. */
        pthread_mutex_lock(&s->stats_lock);
        s->stats.newest_ms = timestamp_ms;
        bool wait = s->stats.degraded && s->ticks_seen < s->retry_at;
        r = s->stats.last_error;
        pthread_mutex_unlock(&s->stats_lock);
        if (wait)
                return r;

        /* A damaged file is set aside now, the ticks going to a new one. */
        drop_if_damaged(s);
        r = s->db ? 0 : store_attach(s);
        if (r == 0)
                r = store_sync_ticks(s);
        /* Forwarders' positions follow the ticks they were read from; one
         * that cannot be written now stays pending for the next tick. */
        if (r == 0) {
                store_flush_positions(s);
                store_flush_events(s);
        }
        if (r == -EUCLEAN && s->db)
                store_note_damage(s, store_generation(s));
        pthread_mutex_lock(&s->stats_lock);
        s->stats.degraded = r < 0;
        s->stats.last_error = r;
        if (r < 0) {
                s->stats.write_errors++;
                s->retry_at = s->ticks_seen + s->backoff;
                s->backoff = s->backoff * 2 > BACKOFF_MAX_TICKS ? BACKOFF_MAX_TICKS : s->backoff * 2;
        } else {
                s->backoff = 1;
        }
        pthread_mutex_unlock(&s->stats_lock);
        return r;
}

const char *store_set_aside_name(const struct store *s) {
        return s->aside;
}

void store_get_stats(struct store *s, struct history_stats *ret) {
        pthread_mutex_lock(&s->stats_lock);
        *ret = s->stats;
        pthread_mutex_unlock(&s->stats_lock);
        /* Samples that are not stored degrade storage as failed writes do. */
        ret->degraded = ret->degraded || ret->series_duplicated > 0 || ret->series_over_limit > 0;
        ret->raw_retention_ms = s->opt.raw_retention_ms;
        ret->minute_retention_ms = s->opt.minute_retention_ms;
        ret->hour_retention_ms = s->opt.hour_retention_ms;
        ret->size_cap_bytes = s->opt.size_cap_bytes;
}

int store_set_page_limit(struct store *s, int64_t max_pages) {
        char sql[64];
        if (!s->db)
                return -EAGAIN;
        snprintf(sql, sizeof(sql), "PRAGMA max_page_count = %lld",
                 (long long) (max_pages > 0 ? max_pages : 4294967294LL));
        return sql_exec(s->db, sql);
}
