#include "config.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "storage/sql.h"
#include "storage/store-internal.h"

/* Health events: one row each, names as the API spells them so that
 * `sqlite3 neurond.db` users can read them. The table is made at open
 * (store_events_setup()), so a file of an earlier neurond gains it without
 * a migration, and an earlier neurond opening this file leaves it alone. */
static const char events_sql[] = "CREATE TABLE IF NOT EXISTS events ("
                                 "  id INTEGER PRIMARY KEY,"
                                 "  ts INTEGER NOT NULL,"
                                 "  device INTEGER,"
                                 "  core INTEGER,"
                                 "  kind TEXT NOT NULL,"
                                 "  phase TEXT NOT NULL,"
                                 "  severity TEXT NOT NULL,"
                                 "  state TEXT NOT NULL,"
                                 "  reason TEXT NOT NULL,"
                                 "  value REAL);"
                                 "CREATE INDEX IF NOT EXISTS events_ts ON events (ts);";

int store_events_setup(struct store *s) {
        return sql_exec(s->db, events_sql);
}

void store_add_events(struct store *s, const struct health_event *events, size_t n) {
        if (n > STORE_EVENTS_QUEUED) {
                events += n - STORE_EVENTS_QUEUED;
                n = STORE_EVENTS_QUEUED;
        }
        /* While the database cannot be written the queue keeps the newest. */
        if (s->n_events + n > STORE_EVENTS_QUEUED) {
                size_t drop = s->n_events + n - STORE_EVENTS_QUEUED;
                memmove(s->events, s->events + drop, (s->n_events - drop) * sizeof(*s->events));
                s->n_events -= drop;
        }
        if (!s->events) {
                s->events = malloc(STORE_EVENTS_QUEUED * sizeof(*s->events));
                if (!s->events)
                        return;
        }
        memcpy(s->events + s->n_events, events, n * sizeof(*events));
        s->n_events += n;
}

static void bind_int_or_null(sqlite3_stmt *st, int col, int v) {
        if (v < 0)
                sqlite3_bind_null(st, col);
        else
                sqlite3_bind_int(st, col, v);
}

int store_flush_events(struct store *s) {
        sqlite3_stmt *st = NULL;

        if (s->n_events == 0 || !s->db)
                return 0;
        int r = sql_exec(s->db, "BEGIN IMMEDIATE");
        if (r < 0)
                return r;
        if (r == 0)
                r = sql_prepare(s->db,
                                "INSERT INTO events (ts, device, core, kind, phase, severity, state, reason, value) "
                                "VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)",
                                &st);
        for (size_t i = 0; i < s->n_events && r == 0; i++) {
                const struct health_event *ev = &s->events[i];
                sqlite3_bind_int64(st, 1, ev->timestamp_ms);
                bind_int_or_null(st, 2, ev->device);
                bind_int_or_null(st, 3, ev->core);
                sqlite3_bind_text(st, 4, health_kind_name(ev->kind), -1, SQLITE_STATIC);
                sqlite3_bind_text(st, 5, health_phase_names[ev->phase], -1, SQLITE_STATIC);
                sqlite3_bind_text(st, 6, health_severity_names[ev->severity], -1, SQLITE_STATIC);
                sqlite3_bind_text(st, 7, health_state_names[ev->state], -1, SQLITE_STATIC);
                sqlite3_bind_text(st, 8, ev->reason, -1, SQLITE_STATIC);
                if (isfinite(ev->value))
                        sqlite3_bind_double(st, 9, ev->value);
                else
                        sqlite3_bind_null(st, 9);
                r = sql_step_done(st);
        }
        sqlite3_finalize(st);
        /* Bounded: the raw tier's retention, and a count. */
        if (r == 0) {
                char sql[160];
                snprintf(sql, sizeof(sql),
                         "DELETE FROM events WHERE ts < %lld OR id <= (SELECT max(id) FROM events) - %d",
                         (long long) (s->events[s->n_events - 1].timestamp_ms - s->opt.raw_retention_ms),
                         STORE_EVENTS_MAX);
                r = sql_exec(s->db, sql);
        }
        r = sql_exec(s->db, r == 0 ? "COMMIT" : "ROLLBACK") < 0 && r == 0 ? -EIO : r;
        if (r == 0)
                s->n_events = 0;
        return r;
}

static int lookup(const char *text, const char *const *names, size_t n) {
        for (size_t i = 0; text && i < n; i++)
                if (strcmp(text, names[i]) == 0)
                        return (int) i;
        return -1;
}

int store_query_events(struct store *s, const struct history_events_query *q, struct health_event **ret,
                       size_t *ret_n) {
        sqlite3_stmt *st = NULL;
        struct health_event *out = NULL;
        size_t n = 0;

        pthread_mutex_lock(&s->read_lock);
        int r = s->read_db ? 0 : -EAGAIN;
        /* The newest `limit` of those asked for, returned oldest first. */
        if (r == 0 && sqlite3_prepare_v2(s->read_db,
                                         "SELECT ts, device, core, kind, phase, severity, state, reason, value FROM ("
                                         "SELECT * FROM events WHERE ts >= ?1 AND ts <= ?2 AND (?3 < 0 OR device = ?3) "
                                         "AND (?4 IS NULL OR kind = ?4) AND (?5 IS NULL OR severity = ?5) "
                                         "ORDER BY ts DESC, id DESC LIMIT ?6) ORDER BY ts, id",
                                         -1, &st, NULL) != SQLITE_OK)
                /* No table yet: no event was ever written to this file. */
                r = sqlite3_errcode(s->read_db) == SQLITE_ERROR ? 1 : sql_errno(sqlite3_errcode(s->read_db));
        if (r == 0) {
                sqlite3_bind_int64(st, 1, q->start_ms);
                sqlite3_bind_int64(st, 2, q->end_ms);
                sqlite3_bind_int(st, 3, q->device);
                if (q->kind >= 0)
                        sqlite3_bind_text(st, 4, health_kind_name((unsigned) q->kind), -1, SQLITE_STATIC);
                if (q->severity >= 0)
                        sqlite3_bind_text(st, 5, health_severity_names[q->severity], -1, SQLITE_STATIC);
                sqlite3_bind_int64(st, 6, (sqlite3_int64) (q->limit ? q->limit : 1));
                out = malloc((q->limit ? q->limit : 1) * sizeof(*out));
                if (!out)
                        r = -ENOMEM;
        }
        int rc = SQLITE_DONE;
        while (r == 0 && (rc = sqlite3_step(st)) == SQLITE_ROW) {
                struct health_event ev = {
                        .timestamp_ms = sqlite3_column_int64(st, 0),
                        .device = sqlite3_column_type(st, 1) == SQLITE_NULL ? -1 : sqlite3_column_int(st, 1),
                        .core = sqlite3_column_type(st, 2) == SQLITE_NULL ? -1 : sqlite3_column_int(st, 2),
                        .value = sqlite3_column_type(st, 8) == SQLITE_NULL ? NAN : sqlite3_column_double(st, 8),
                };
                int kind = health_kind_lookup((const char *) sqlite3_column_text(st, 3));
                int phase = lookup((const char *) sqlite3_column_text(st, 4), health_phase_names, 3);
                int severity = lookup((const char *) sqlite3_column_text(st, 5), health_severity_names,
                                      HEALTH_SEVERITY__COUNT);
                int state = lookup((const char *) sqlite3_column_text(st, 6), health_state_names, HEALTH__COUNT);
                /* A row of a kind this neurond does not know (a newer one wrote it) is left out. */
                if (kind < 0 || phase < 0 || severity < 0 || state < 0)
                        continue;
                ev.kind = (unsigned) kind;
                ev.phase = (enum health_event_phase) phase;
                ev.severity = (enum health_severity) severity;
                ev.state = (enum health_state) state;
                snprintf(ev.reason, sizeof(ev.reason), "%s", (const char *) sqlite3_column_text(st, 7));
                out[n++] = ev;
        }
        if (r == 0 && rc != SQLITE_DONE)
                r = sql_errno(rc);
        sqlite3_finalize(st);
        if (s->read_db)
                sql_exec(s->read_db, "COMMIT");
        pthread_mutex_unlock(&s->read_lock);
        if (r == 1)
                r = 0;
        if (r < 0) {
                free(out);
                return r;
        }
        *ret = out;
        *ret_n = n;
        return 0;
}
