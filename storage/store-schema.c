#include "config.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>

#include "storage/sql.h"
#include "storage/store-internal.h"

/* Schema 2 (docs/storage.md): series with JSON labels so that
 * `sqlite3 neurond.db` users can filter with json_extract(); raw samples as
 * one compressed chunk per series and span; the open chunk's ticks in
 * recent, one row per tick, so that every tick is durable at once; rollup
 * rows a person can read; meta for the rollup watermark. */
static const char schema_sql[] = "CREATE TABLE IF NOT EXISTS series ("
                                 "  id INTEGER PRIMARY KEY,"
                                 "  metric TEXT NOT NULL,"
                                 "  labels TEXT NOT NULL,"
                                 "  UNIQUE (metric, labels));"
                                 "CREATE TABLE IF NOT EXISTS chunks ("
                                 "  series_id INTEGER NOT NULL,"
                                 "  start_ts INTEGER NOT NULL,"
                                 "  end_ts INTEGER NOT NULL,"
                                 "  count INTEGER NOT NULL,"
                                 "  data BLOB NOT NULL,"
                                 "  UNIQUE (series_id, start_ts));"
                                 "CREATE TABLE IF NOT EXISTS recent ("
                                 "  ts INTEGER PRIMARY KEY,"
                                 "  data BLOB NOT NULL);"
                                 "CREATE TABLE IF NOT EXISTS rollup_1m ("
                                 "  series_id INTEGER NOT NULL,"
                                 "  ts INTEGER NOT NULL,"
                                 "  min REAL, max REAL, sum REAL, count INTEGER NOT NULL, last REAL,"
                                 "  PRIMARY KEY (series_id, ts)) WITHOUT ROWID;"
                                 "CREATE TABLE IF NOT EXISTS rollup_1h ("
                                 "  series_id INTEGER NOT NULL,"
                                 "  ts INTEGER NOT NULL,"
                                 "  min REAL, max REAL, sum REAL, count INTEGER NOT NULL, last REAL,"
                                 "  PRIMARY KEY (series_id, ts)) WITHOUT ROWID;"
                                 "CREATE TABLE IF NOT EXISTS meta ("
                                 "  key TEXT PRIMARY KEY,"
                                 "  value INTEGER NOT NULL);";

/* Series that earlier neurond versions wrote under a label the ecosystem
 * spells otherwise: hardware_ecc_events_total named its device label
 * neuron_device, AWS's exporter says neuron_device_index. The rows are
 * renamed in place, as the upsert of store-write.c writes them now, so the
 * history continues in one series. A row whose new spelling exists already
 * (a newer neurond ran, then an older one) is left as it is. Runs at every
 * open; it finds nothing to do after the first. */
static const char rename_labels_sql[] =
        "UPDATE OR IGNORE series SET labels = json_object('neuron_device_index', "
        "json_extract(labels, '$.neuron_device'), 'event_type', json_extract(labels, '$.event_type')) "
        "WHERE metric = 'hardware_ecc_events_total' AND json_type(labels, '$.neuron_device') IS NOT NULL "
        "AND json_type(labels, '$.event_type') IS NOT NULL";

/* Schema 1 kept one row per sample in samples(series_id, ts, value). */
static int migrate_from_1(struct store *s) {
        sqlite3_stmt *sel = NULL, *insert = NULL, *merge[2] = { NULL, NULL };
        int64_t *ts = NULL, cur = -1;
        double *v = NULL;
        size_t n = 0, cap = 0;
        int r, rc;

        r = store_prepare_writers(s, &insert, merge);
        if (r == 0)
                r = sql_prepare(s->db, "SELECT series_id, ts, value FROM samples ORDER BY series_id, ts", &sel);
        while (r == 0) {
                rc = sqlite3_step(sel);
                int64_t id = rc == SQLITE_ROW ? sqlite3_column_int64(sel, 0) : -1;
                if (n > 0 && id != cur) {
                        r = store_write_chunks(s, insert, cur, ts, v, n);
                        if (r == 0)
                                r = store_write_rollups(merge, cur, ts, v, n);
                        n = 0;
                }
                if (rc != SQLITE_ROW) {
                        if (r == 0 && rc != SQLITE_DONE)
                                r = sql_errno(rc);
                        break;
                }
                if (n == cap) {
                        cap = cap ? 2 * cap : 4096;
                        int64_t *t2 = realloc(ts, cap * sizeof(*t2));
                        if (t2)
                                ts = t2;
                        double *v2 = realloc(v, cap * sizeof(*v2));
                        if (v2)
                                v = v2;
                        if (!t2 || !v2) {
                                r = -ENOMEM;
                                break;
                        }
                }
                cur = id;
                ts[n] = sqlite3_column_int64(sel, 1);
                v[n++] = sqlite3_column_type(sel, 2) == SQLITE_NULL ? NAN : sqlite3_column_double(sel, 2);
        }
        sqlite3_finalize(sel);
        sqlite3_finalize(insert);
        sqlite3_finalize(merge[0]);
        sqlite3_finalize(merge[1]);
        free(ts);
        free(v);
        if (r == 0)
                r = sql_exec(s->db, "DROP TABLE samples");
        return r;
}

int store_schema_setup(struct store *s) {
        int64_t version = 0, tables = 0;
        int r = sql_query_int(s->db, "PRAGMA user_version", &version);
        if (r < 0)
                return r;
        if (version > STORE_SCHEMA_VERSION)
                return -EPROTONOSUPPORT;
        r = sql_query_int(s->db, "SELECT count(*) FROM sqlite_master", &tables);
        if (r < 0)
                return r;
        /* auto_vacuum can be chosen only before the first table exists,
         * or by a VACUUM after a migration. */
        /* 16 KiB pages hold several chunks each, with less left over at
         * the end of a page than 4 KiB ones. */
        if (tables == 0)
                r = sql_exec(s->db, "PRAGMA page_size = 16384; PRAGMA auto_vacuum = INCREMENTAL");
        if (r == 0)
                r = sql_exec(s->db, "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;");
        if (r == 0)
                r = sql_exec(s->db, "BEGIN IMMEDIATE");
        if (r == 0)
                r = sql_exec(s->db, schema_sql);
        if (r == 0 && version == 1)
                r = migrate_from_1(s);
        if (r == 0)
                r = sql_exec(s->db, rename_labels_sql);
        if (r == 0 && version < STORE_SCHEMA_VERSION)
                r = sql_exec(s->db, "PRAGMA user_version = 2");
        if (r == 0)
                r = store_close_out_recent(s);
        if (r == 0)
                r = sql_exec(s->db, "COMMIT");
        if (r < 0) {
                sql_exec(s->db, "ROLLBACK");
                return r;
        }
        int64_t vacuum_mode = 0;
        r = sql_query_int(s->db, "PRAGMA auto_vacuum", &vacuum_mode);
        if (r == 0 && vacuum_mode != 2)
                r = sql_exec(s->db, "PRAGMA auto_vacuum = INCREMENTAL; VACUUM");
        return r;
}
