#include "config.h"

#include <errno.h>
#include <signal.h>
#include <time.h>

#include "storage/sql.h"
#include "storage/store-internal.h"

/* The scheduled integrity check: PRAGMA quick_check every
 * check_interval_ms, on a read-only connection and a thread of its own.
 * It reads the whole file (about a second per GiB from the page cache), so
 * neither the tick loop nor the queries may wait for it; in WAL mode it
 * reads one snapshot while they go on. What it finds goes to
 * store_note_damage(), for the tick loop to act on. */

/* Checks the database connected now, unless store_check_stop() came first.
 * Returns the check's result; -EAGAIN when no database is open. */
static int check_once(struct store *s) {
        sqlite3 *db = NULL;
        uint64_t generation = store_generation(s);

        if (generation == 0)
                return -EAGAIN;
        /* A file set aside after this point is checked under its old
         * generation, and the finding is dropped as old news. Opening
         * reads the schema: a damaged file may fail it already. */
        int r = sql_open(s->path, SQLITE_OPEN_READONLY, &db);
        if (r == 0) {
                pthread_mutex_lock(&s->check_lock);
                bool stop = s->check_stop;
                if (!stop)
                        s->check_db = db;
                pthread_mutex_unlock(&s->check_lock);
                if (!stop)
                        r = sql_quick_check(db);
                pthread_mutex_lock(&s->check_lock);
                s->check_db = NULL;
                pthread_mutex_unlock(&s->check_lock);
                sqlite3_close(db);
        }
        if (r == -EUCLEAN)
                store_note_damage(s, generation);
        return r;
}

static void *check_main(void *arg) {
        struct store *s = arg;
        int64_t period_ns = s->opt.check_interval_ms * 1000000;

        pthread_mutex_lock(&s->check_lock);
        while (!s->check_stop) {
                struct timespec until;
                clock_gettime(CLOCK_MONOTONIC, &until);
                int64_t ns = until.tv_nsec + period_ns % 1000000000;
                until.tv_sec += (time_t) (period_ns / 1000000000 + ns / 1000000000);
                until.tv_nsec = (long) (ns % 1000000000);
                while (!s->check_stop && pthread_cond_timedwait(&s->check_wake, &s->check_lock, &until) != ETIMEDOUT)
                        ;
                if (s->check_stop)
                        break;
                pthread_mutex_unlock(&s->check_lock);
                check_once(s);
                pthread_mutex_lock(&s->check_lock);
        }
        pthread_mutex_unlock(&s->check_lock);
        return NULL;
}

int store_check_start(struct store *s) {
        pthread_condattr_t attr;

        pthread_mutex_init(&s->check_lock, NULL);
        pthread_condattr_init(&attr);
        pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
        pthread_cond_init(&s->check_wake, &attr);
        pthread_condattr_destroy(&attr);
        if (s->opt.check_interval_ms <= 0)
                return 0;
        /* The thread takes no signal: they stay with the threads that wait
         * for them (the daemon's signalfd). It inherits the mask. */
        sigset_t all, old;
        sigfillset(&all);
        pthread_sigmask(SIG_SETMASK, &all, &old);
        int r = -pthread_create(&s->check_thread, NULL, check_main, s);
        pthread_sigmask(SIG_SETMASK, &old, NULL);
        if (r == 0)
                s->check_started = true;
        return r;
}

void store_check_stop(struct store *s) {
        pthread_mutex_lock(&s->check_lock);
        s->check_stop = true;
        /* A check that runs ends at its next step. */
        if (s->check_db)
                sqlite3_interrupt(s->check_db);
        pthread_cond_signal(&s->check_wake);
        pthread_mutex_unlock(&s->check_lock);
        if (s->check_started)
                pthread_join(s->check_thread, NULL);
        s->check_started = false;
        pthread_cond_destroy(&s->check_wake);
        pthread_mutex_destroy(&s->check_lock);
}
