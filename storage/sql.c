#include "config.h"

#include <errno.h>
#include <stddef.h>
#include <string.h>

#include "storage/sql.h"

int sql_errno(int rc) {
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
        case SQLITE_CORRUPT:
        case SQLITE_NOTADB:
                return -EUCLEAN;
        case SQLITE_INTERRUPT:
                return -EINTR;
        case SQLITE_MISUSE:
        case SQLITE_RANGE:
        case SQLITE_ERROR:
                return -EINVAL;
        default:
                return -EIO;
        }
}

int sql_open(const char *path, int flags, sqlite3 **ret) {
        sqlite3 *db = NULL;
        int rc = sqlite3_open_v2(path, &db, flags | SQLITE_OPEN_NOMUTEX, NULL);
        if (rc != SQLITE_OK) {
                sqlite3_close(db);
                return sql_errno(rc);
        }
        sqlite3_busy_timeout(db, 5000);
        /* 1 MiB of page cache per connection instead of 2: the daemon's
         * memory budget is small, and the OS caches the file anyway. It
         * reads the schema, so it is also the connection's first read (of
         * a read-only connection, the only one before its first query):
         * a file that cannot be read fails the open. */
        int r = sql_exec(db, "PRAGMA cache_size = -1024");
        if (r < 0) {
                sqlite3_close(db);
                return r;
        }
        *ret = db;
        return 0;
}

int sql_exec(sqlite3 *db, const char *sql) {
        return sql_errno(sqlite3_exec(db, sql, NULL, NULL, NULL));
}

int sql_prepare(sqlite3 *db, const char *sql, sqlite3_stmt **ret) {
        return sql_errno(sqlite3_prepare_v2(db, sql, -1, ret, NULL));
}

int sql_query_int(sqlite3 *db, const char *sql, int64_t *ret) {
        sqlite3_stmt *st = NULL;
        int r = sql_prepare(db, sql, &st);
        if (r < 0)
                return r;
        int rc = sqlite3_step(st);
        if (rc == SQLITE_ROW || rc == SQLITE_DONE) {
                *ret = rc == SQLITE_ROW ? sqlite3_column_int64(st, 0) : 0;
        } else {
                r = sql_errno(rc);
        }
        sqlite3_finalize(st);
        return r;
}

int sql_step_done(sqlite3_stmt *st) {
        int rc = sqlite3_step(st);
        sqlite3_reset(st);
        return rc == SQLITE_DONE || rc == SQLITE_ROW ? 0 : sql_errno(rc);
}

int64_t sql_used_bytes(sqlite3 *db) {
        int64_t pages = 0, free_pages = 0, page_size = 0;
        if (sql_query_int(db, "PRAGMA page_count", &pages) < 0 ||
            sql_query_int(db, "PRAGMA freelist_count", &free_pages) < 0 ||
            sql_query_int(db, "PRAGMA page_size", &page_size) < 0)
                return 0;
        return (pages - free_pages) * page_size;
}

int sql_quick_check(sqlite3 *db) {
        sqlite3_stmt *st = NULL;
        int r = sql_prepare(db, "PRAGMA quick_check", &st);
        if (r < 0)
                return r;
        int rc = sqlite3_step(st);
        if (rc == SQLITE_ROW) {
                const unsigned char *text = sqlite3_column_text(st, 0);
                r = text && strcmp((const char *) text, "ok") == 0 ? 0 : -EUCLEAN;
        } else {
                r = sql_errno(rc);
                if (r == 0)
                        r = -EUCLEAN;
        }
        sqlite3_finalize(st);
        return r;
}
