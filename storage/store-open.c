#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "storage/sql.h"
#include "storage/store-internal.h"

/* PRAGMA quick_check: -EUCLEAN unless it answers "ok". */
static int check_integrity(sqlite3 *db) {
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

void store_db_disconnect(struct store *s) {
        sqlite3_finalize(s->st_recent);
        sqlite3_finalize(s->st_head);
        sqlite3_finalize(s->st_pending);
        s->st_recent = s->st_head = s->st_pending = NULL;
        pthread_mutex_lock(&s->read_lock);
        sqlite3_close(s->read_db);
        s->read_db = NULL;
        pthread_mutex_unlock(&s->read_lock);
        sqlite3_close(s->db);
        s->db = NULL;
}

/* The database, its -wal and its -shm file are opened (made) with open(2)
 * first, because its errno tells a full or read-only file system (ENOSPC,
 * EROFS) from a missing directory or a permission (ENOENT, EACCES): SQLite
 * reports "cannot open" for all of them, and the errno it keeps is that of
 * its read-only retry, ENOENT. An empty -wal or -shm file is one SQLite
 * would make. */
int store_db_connect(struct store *s) {
        static const char *const suffix[] = { "", "-wal", "-shm" };
        sqlite3 *read_db = NULL;
        int r = 0;

        for (size_t i = 0; i < 3 && r == 0; i++) {
                char name[4200];
                snprintf(name, sizeof(name), "%s%s", s->path, suffix[i]);
                int fd = open(name, O_RDWR | O_CREAT | O_CLOEXEC, 0644);
                if (fd < 0)
                        r = -errno;
                else
                        close(fd);
        }
        if (r == 0)
                r = sql_open(s->path, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, &s->db);
        if (r == 0)
                r = check_integrity(s->db);
        if (r == 0)
                r = store_schema_setup(s);
        if (r == 0)
                r = sql_open(s->path, SQLITE_OPEN_READONLY, &read_db);
        if (r < 0) {
                store_db_disconnect(s);
                return r;
        }
        /* Queries run on other threads; they find read_db under the lock. */
        pthread_mutex_lock(&s->read_lock);
        s->read_db = read_db;
        pthread_mutex_unlock(&s->read_lock);
        int64_t bytes = sql_used_bytes(s->db);
        pthread_mutex_lock(&s->stats_lock);
        s->stats.used_bytes = bytes;
        s->stats.unopened = false;
        pthread_mutex_unlock(&s->stats_lock);
        return 0;
}

int store_db_connect_or_set_aside(struct store *s, char *aside, size_t aside_len) {
        int r = store_db_connect(s);
        if (r != -EUCLEAN)
                return r;
        /* The WAL belongs to the damaged file: it moves with it, or SQLite
         * would replay it into the new one. */
        static const char *const suffix[] = { "", "-wal", "-shm" };
        long long now = (long long) time(NULL);
        for (size_t i = 0; i < 3; i++) {
                char from[4200], to[4200];
                snprintf(from, sizeof(from), "%s%s", s->path, suffix[i]);
                snprintf(to, sizeof(to), "%s.damaged-%lld%s", s->path, now, suffix[i]);
                if (rename(from, to) < 0 && errno != ENOENT)
                        return -errno;
                if (i == 0 && aside)
                        snprintf(aside, aside_len, "%s", to);
        }
        r = store_db_connect(s);
        if (r < 0)
                return r;
        pthread_mutex_lock(&s->stats_lock);
        s->stats.damaged_set_aside = 1;
        pthread_mutex_unlock(&s->stats_lock);
        return 1;
}
