#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/file.h>
#include <time.h>
#include <unistd.h>

#include "lib/file.h"
#include "lib/parse.h"
#include "storage/sql.h"
#include "storage/store-internal.h"

void store_db_disconnect(struct store *s) {
        sqlite3_finalize(s->st_recent);
        sqlite3_finalize(s->st_head);
        sqlite3_finalize(s->st_pending);
        s->st_recent = s->st_head = s->st_pending = NULL;
        pthread_mutex_lock(&s->read_lock);
        store_data_release(s->read_db);
        sqlite3_close(s->read_db);
        s->read_db = NULL;
        pthread_mutex_unlock(&s->read_lock);
        store_data_release(s->db);
        sqlite3_close(s->db);
        s->db = NULL;
}

/* One daemon per database: two writing one file would both run, each
 * with its own idea of what is stored, and lose ticks. The lock is an
 * exclusive flock() on PATH.lock, a file that stays (removing it would let
 * a third process lock a new file while the second holds the old one),
 * taken before anything is written and with the holder's pid in it. SQLite
 * uses POSIX locks, which flock() does not touch. */
static int store_lock(struct store *s) {
        char name[4200], pid[32];

        if (s->lock_fd >= 0)
                return 0;
        snprintf(name, sizeof(name), "%s.lock", s->path);
        int fd = open(name, O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0644);
        if (fd < 0)
                return -errno;
        if (flock(fd, LOCK_EX | LOCK_NB) < 0) {
                int r = errno == EWOULDBLOCK ? -EBUSY : -errno;
                close(fd);
                return r;
        }
        /* The pid only helps the one refused: a full disk that keeps it
         * out costs nothing more. */
        int n = snprintf(pid, sizeof(pid), "%ld\n", (long) getpid());
        if (ftruncate(fd, 0) == 0 && pwrite(fd, pid, (size_t) n, 0) != n)
                (void) ftruncate(fd, 0);
        s->lock_fd = fd;
        return 0;
}

void store_unlock(struct store *s) {
        if (s->lock_fd < 0)
                return;
        (void) ftruncate(s->lock_fd, 0);
        close(s->lock_fd);
        s->lock_fd = -1;
}

int store_lock_holder(const char *path, long *ret_pid) {
        char name[4200], text[32];
        size_t len;
        uint64_t pid;

        snprintf(name, sizeof(name), "%s.lock", path);
        int r = file_read_at(AT_FDCWD, name, text, sizeof(text) - 1, 0, &len);
        if (r < 0)
                return r;
        text[len] = '\0';
        text[strcspn(text, "\n")] = '\0';
        if (parse_uint_range(text, 1, INT32_MAX, &pid) < 0)
                return -ENODATA;
        *ret_pid = (long) pid;
        return 0;
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
        int r = store_lock(s);

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
                r = store_data_register(s->db);
        if (r == 0)
                r = sql_quick_check(s->db);
        if (r == 0)
                r = store_schema_setup(s);
        if (r == 0)
                r = sql_open(s->path, SQLITE_OPEN_READONLY, &read_db);
        if (r == 0)
                r = store_data_register(read_db);
        if (r < 0) {
                store_data_release(read_db);
                sqlite3_close(read_db);
                store_db_disconnect(s);
                return r;
        }
        int64_t bytes = sql_used_bytes(s->db);
        /* Queries run on other threads; they find read_db under the lock,
         * and the generation it belongs to with it. */
        pthread_mutex_lock(&s->read_lock);
        s->read_db = read_db;
        pthread_mutex_lock(&s->stats_lock);
        s->generation++;
        s->damaged = false;
        s->stats.used_bytes = bytes;
        s->stats.unopened = false;
        pthread_mutex_unlock(&s->stats_lock);
        pthread_mutex_unlock(&s->read_lock);
        return 0;
}

int store_db_connect_or_set_aside(struct store *s, bool damaged) {
        /* Either way the lock is held here: taken by the connect that
         * found the damage, or before the connection that found it. */
        int r = damaged ? -EUCLEAN : store_db_connect(s);
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
                if (i == 0)
                        snprintf(s->aside, sizeof(s->aside), "%s", to);
        }
        /* Set aside; if the new file cannot be made now, a retry makes it.
         * It will hold none of the ticks in memory. */
        s->buf.n_durable = 0;
        pthread_mutex_lock(&s->stats_lock);
        s->generation++; /* findings about the old file are old news */
        s->damaged = false;
        s->stats.damaged_set_aside++;
        pthread_mutex_unlock(&s->stats_lock);
        r = store_db_connect(s);
        return r < 0 ? r : 1;
}

void store_note_damage(struct store *s, uint64_t generation) {
        pthread_mutex_lock(&s->stats_lock);
        /* A finding about a file set aside since is old news. */
        if (generation != 0 && generation == s->generation) {
                s->damaged = true;
                s->stats.degraded = true;
                s->stats.last_error = -EUCLEAN;
        }
        pthread_mutex_unlock(&s->stats_lock);
}

uint64_t store_generation(struct store *s) {
        pthread_mutex_lock(&s->stats_lock);
        uint64_t generation = s->generation;
        pthread_mutex_unlock(&s->stats_lock);
        return generation;
}
