#include "config.h"

#include <errno.h>
#include <stdio.h>

#include "storage/sql.h"
#include "storage/store-internal.h"

/* Schema 5 (docs/storage.md): series with JSON labels so that
 * `sqlite3 neurond.db` users can filter with json_extract(); every tier as
 * compressed chunks (storage/chunk.h) except the 1-hour rollups, a row a
 * person can read per series and hour. Raw samples reach the database as
 * one row per tick in recent (durable at once), then as head chunks of a
 * minute, then, once their hour has ended, as one chunk per series and
 * hour, when that hour's rollups are computed from them. Head chunks and
 * hourly chunks live in separate tables so that the churn of the first
 * does not leave holes among the second. A minute rollup row's key
 * (STORE_MINUTES_KEY) puts a series' hours side by side: a week of one
 * series is a few adjacent pages. 4 KiB pages, so that a tick's commit
 * writes little; hourly chunks' bytes fill them in chunk_data
 * (store-data.c). */
static const char schema_sql[] = "CREATE TABLE IF NOT EXISTS series ("
                                 "  id INTEGER PRIMARY KEY,"
                                 "  metric TEXT NOT NULL,"
                                 "  labels TEXT NOT NULL,"
                                 "  UNIQUE (metric, labels));"
                                 "CREATE TABLE IF NOT EXISTS chunks ("
                                 "  series_id INTEGER NOT NULL,"
                                 "  hour INTEGER NOT NULL,"
                                 "  start_ts INTEGER NOT NULL,"
                                 "  end_ts INTEGER NOT NULL,"
                                 "  count INTEGER NOT NULL,"
                                 "  at INTEGER NOT NULL,"
                                 "  size INTEGER NOT NULL,"
                                 "  UNIQUE (series_id, hour));"
                                 "CREATE TABLE IF NOT EXISTS chunk_data ("
                                 "  id INTEGER PRIMARY KEY,"
                                 "  data BLOB NOT NULL);"
                                 "CREATE TABLE IF NOT EXISTS head ("
                                 "  series_id INTEGER NOT NULL,"
                                 "  start_ts INTEGER NOT NULL,"
                                 "  end_ts INTEGER NOT NULL,"
                                 "  count INTEGER NOT NULL,"
                                 "  data BLOB NOT NULL,"
                                 "  UNIQUE (series_id, start_ts));"
                                 "CREATE TABLE IF NOT EXISTS pending ("
                                 "  hour INTEGER PRIMARY KEY);"
                                 "CREATE TABLE IF NOT EXISTS recent ("
                                 "  ts INTEGER PRIMARY KEY,"
                                 "  data BLOB NOT NULL);"
                                 "CREATE TABLE IF NOT EXISTS rollup_1m ("
                                 "  key INTEGER PRIMARY KEY,"
                                 "  series_id INTEGER NOT NULL,"
                                 "  hour INTEGER NOT NULL,"
                                 "  minutes INTEGER NOT NULL,"
                                 "  count INTEGER NOT NULL,"
                                 "  data BLOB NOT NULL);"
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

int store_prepare_writers(struct store *s) {
        int r = sql_prepare(s->db, "INSERT OR REPLACE INTO recent(ts, data) VALUES (?1, ?2)", &s->st_recent);
        if (r == 0)
                r = sql_prepare(s->db, STORE_PUT_HEAD, &s->st_head);
        if (r == 0)
                r = sql_prepare(s->db, "INSERT OR IGNORE INTO pending(hour) VALUES (?1)", &s->st_pending);
        return r;
}

int store_schema_setup(struct store *s) {
        int64_t version = 0, tables = 0;
        char set_version[48];
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
        if (tables == 0)
                r = sql_exec(s->db, "PRAGMA page_size = 4096; PRAGMA auto_vacuum = INCREMENTAL");
        if (r == 0)
                r = sql_exec(s->db, "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;");
        if (r == 0)
                r = sql_exec(s->db, "BEGIN IMMEDIATE");
        /* Schema 2's tables of the same names move aside first. */
        if (r == 0 && version == 2)
                r = sql_exec(s->db,
                             "ALTER TABLE chunks RENAME TO chunks_2; ALTER TABLE rollup_1m RENAME TO rollup_1m_2");
        if (r == 0 && (version == 3 || version == 4))
                r = sql_exec(s->db, "ALTER TABLE chunks RENAME TO chunks_4");
        if (r == 0)
                r = sql_exec(s->db, schema_sql);
        if (r == 0)
                r = store_events_setup(s);
        if (r == 0)
                r = store_prepare_writers(s);
        if (r == 0 && version == 1)
                r = store_migrate_from_1(s);
        if (r == 0 && version == 2)
                r = store_migrate_from_2(s);
        if (r == 0 && (version == 3 || version == 4))
                r = store_migrate_from_4(s);
        if (r == 0)
                r = sql_exec(s->db, rename_labels_sql);
        snprintf(set_version, sizeof(set_version), "PRAGMA user_version = %d", STORE_SCHEMA_VERSION);
        if (r == 0 && version < STORE_SCHEMA_VERSION)
                r = sql_exec(s->db, set_version);
        if (r == 0)
                r = store_close_out_recent(s);
        if (r == 0)
                r = sql_exec(s->db, "COMMIT");
        if (r < 0) {
                sql_exec(s->db, "ROLLBACK");
                return r;
        }
        atomic_fetch_add(&s->series_generation, 1);
        int64_t vacuum_mode = 0;
        r = sql_query_int(s->db, "PRAGMA auto_vacuum", &vacuum_mode);
        /* A migration from 1 or 2 leaves the old tables' pages free: give
         * them back (from 3 or 4 the next retention pass does, by
         * incremental vacuum). */
        if (r == 0 && (vacuum_mode != 2 || (version > 0 && version < 3)))
                r = sql_exec(s->db, "PRAGMA auto_vacuum = INCREMENTAL; VACUUM");
        return r;
}
