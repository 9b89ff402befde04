/* I/O faults injected under the store, where it meets the disk, instead of
 * provoked with a small file system in a mount namespace.
 *
 * The sweeps: a workload as the daemon drives the store (a new database,
 * series registered, ticks across a chunk boundary and an hour, so that
 * head chunks, compaction and rollups are written, a change of the series
 * list, a stop, a start, more ticks, a stop) runs once per N with the Nth
 * SQLite call of one kind failing (tests/fakes/fault-vfs.h), and every
 * later one until the test lets the faults stop, three ticks later. For
 * each N: every failure met outside store_close() is reported (an error
 * returned, or the stats degraded) as the errno the kind stands for;
 * writing resumes once the faults stop; after a clean stop the file is
 * sound, holds no open chunk, and each hour's rollups count its samples
 * once; and every tick the store said it stored is there once, with its
 * values, beside nothing that was not appended. The sweep ends at the
 * first N the workload does not reach, as test-alloc.c's does.
 *
 * The start-up cases: a database that cannot be opened because its file
 * system is full, read-only or out of inodes. The store tells these from
 * an operator's mistake by the errno of its own open(2) of the files
 * before SQLite opens them (storage/store-open.c), so those calls are
 * failed here as the kernel would fail them: the program is linked with
 * --wrap=open, which reaches the store's calls in libneurond.a and not
 * SQLite's, made inside its shared library. */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>
#include <sqlite3.h>

#include "storage/store.h"
#include "tests/fakes/fault-vfs.h"

/* Ticks 20 s apart from 58:50 of an hour: a chunk span (a minute) ends
 * every three ticks, the hour after the fourth. */
#define HOUR0 (3600000LL * 472222)
#define T0 (HOUR0 + 58 * 60000 + 50000)
#define INTERVAL_MS 20000
/* Ticks after the first fault before the faults stop: the store retries
 * 1 and 3 ticks after a failure, so its retries meet the fault too. */
#define TICKS_UNDER_FAULT 3
#define TICKS_MAX 256

/* Two series lists: the second drops the first's first series and adds
 * one, as a runtime that ends and one that starts would. */
static const struct series_desc all_series[] = {
        { METRIC_CORE_UTILIZATION, { "0", "0" } },
        { METRIC_CORE_UTILIZATION, { "0", "1" } },
        { METRIC_DEVICE_DMA_BYTES, { "0", "read" } },
        { METRIC_DEVICE_MEMORY_USED, { "0" } },
};
#define N_ALL 4
#define N_LIST 3
static const size_t lists[2][N_LIST] = { { 0, 1, 2 }, { 1, 2, 3 } };

enum step { OPEN, LIST_A, LIST_B, TICK, CLOSE };

/* The daemon's life, in steps. */
static const enum step workload[] = {
        OPEN,   LIST_A,                                        /* a new database */
        TICK,   TICK,   TICK,   TICK, TICK, TICK, TICK,  TICK, /* 58:50 to 01:10: two spans end, and the hour */
        LIST_B, TICK,   TICK,   TICK, TICK, TICK, TICK,        /* another series list, two more spans */
        CLOSE,  OPEN,   LIST_B, TICK, TICK, TICK, CLOSE,       /* a stop, a start with ticks, a stop */
};

/* What was appended, and whether the store said it is stored. */
struct tick {
        int64_t ts;
        int list;
        int instance; /* the store it was appended to */
        double v[N_LIST];
        uint8_t valid[N_LIST];
        bool confirmed;
};

struct run {
        int expect; /* the error every failure is reported as */
        char dir[64], path[96];
        struct store *s;
        int instance;       /* stores opened so far */
        int list, want;     /* the list registered with s (-1: none), the one the daemon has */
        bool reported;      /* an error returned or the stats degraded */
        long outside_close; /* faults met outside store_close() */
        int after_fault;    /* ticks since the first fault */
        bool faulting;      /* a fault was met, and the faults go on */
        bool stopped;       /* the faults stopped */
        size_t n;
        struct tick ticks[TICKS_MAX];
};

static struct run run;

/* The file system's state as the store's open(2) calls meet it (the
 * start-up cases below). */
static enum { FS_OK, FS_READ_ONLY, FS_NO_INODES } fs_state;

static double value_of(size_t series, size_t k) {
        switch (series) {
        case 0:
        case 1: /* binary fractions: kept as they are */
                return (double) ((k * 5 + series * 3) % 16) / 16.0;
        case 2:
                return (double) (k * 1000 + 7);
        default:
                return (double) (1000000 + 4096 * (k % 5));
        }
}

/* Every tick appended to the store open now is stored. */
static void confirm(void) {
        for (size_t k = 0; k < run.n; k++)
                if (run.ticks[k].instance == run.instance)
                        run.ticks[k].confirmed = true;
}

/* A call's result, and the stats: any error is the one expected. */
static void note(int r) {
        struct history_stats st;
        if (r < 0) {
                assert_int_equal(r, run.expect);
                run.reported = true;
        }
        if (run.s) {
                store_get_stats(run.s, &st);
                if (st.degraded)
                        assert_int_equal(st.last_error, run.expect);
                run.reported |= st.degraded;
        }
}

/* Opens as the daemon does: a file system that fails leaves it running
 * without the database (deferred), anything else stops it, and the next
 * step starts it again. A fault in writing never damages the file, so
 * nothing is ever set aside. */
static bool open_store(void) {
        struct store_options o;
        if (run.s)
                return true;
        store_options_init(&o);
        o.check_interval_ms = 0; /* no thread of its own */
        int r = store_open_or_set_aside(run.path, &o, &run.s, NULL, 0);
        assert_int_not_equal(r, 1);
        note(r);
        if (r < 0 && store_error_is_transient(r))
                assert_int_equal(store_open_deferred(run.path, &o, r, &run.s), 0);
        else if (r < 0)
                return false;
        run.instance++;
        run.list = -1;
        return true;
}

static void close_store(void) {
        long before = fault_vfs_failures();
        if (!run.s)
                return;
        store_close(run.s);
        run.s = NULL;
        /* Nothing failed: everything it held is written. */
        if (fault_vfs_failures() == before)
                confirm();
}

/* A tick as the loop gives it: the list registered first when it
 * changed, and no tick stored while that fails. */
static void tick(void) {
        if (run.faulting)
                run.after_fault++;
        if (!open_store())
                return;
        if (run.list != run.want) {
                struct series_desc descs[N_LIST];
                for (size_t j = 0; j < N_LIST; j++)
                        descs[j] = all_series[lists[run.want][j]];
                int r = store_register_series(run.s, descs, N_LIST);
                note(r);
                if (r < 0)
                        return;
                run.list = run.want;
                /* The ticks held for the old list were written first. */
                confirm();
        }
        assert_true(run.n < TICKS_MAX);
        struct tick *t = &run.ticks[run.n];
        *t = (struct tick){ .ts = T0 + (int64_t) run.n * INTERVAL_MS, .list = run.list, .instance = run.instance };
        for (size_t j = 0; j < N_LIST; j++) {
                size_t series = lists[run.list][j];
                t->v[j] = value_of(series, run.n);
                t->valid[j] = !(series == 1 && run.n % 5 == 3); /* a series that misses ticks */
        }
        run.n++;
        int r = store_append(run.s, t->ts, t->v, t->valid, N_LIST);
        note(r);
        if (r == 0)
                confirm();
}

static void step(enum step st) {
        long before = fault_vfs_failures();
        switch (st) {
        case OPEN:
                open_store();
                break;
        case LIST_A:
        case LIST_B:
                run.want = st == LIST_A ? 0 : 1;
                break;
        case TICK:
                tick();
                break;
        case CLOSE:
                close_store();
                break;
        }
        if (st != CLOSE)
                run.outside_close += fault_vfs_failures() - before;
        run.faulting = !run.stopped && fault_vfs_failures() > 0;
}

/* The faults stop: a fault met outside a close was reported by then. */
static void stop_faults(void) {
        fault_vfs_disarm();
        run.faulting = false;
        run.stopped = true;
        if (run.outside_close > 0)
                assert_true(run.reported);
}

/* Ticks until the store says one is stored: within the longest back-off
 * once the cause is gone. */
static void resume(void) {
        bool stored = false;
        for (int k = 0; k < 70 && !stored; k++) {
                step(TICK);
                stored = run.s && run.n > 0 && run.ticks[run.n - 1].confirmed;
        }
        assert_true(stored);
}

static int64_t db_int(sqlite3 *db, const char *sql) {
        sqlite3_stmt *st = NULL;
        assert_int_equal(sqlite3_prepare_v2(db, sql, -1, &st, NULL), SQLITE_OK);
        assert_int_equal(sqlite3_step(st), SQLITE_ROW);
        int64_t v = sqlite3_column_int64(st, 0);
        sqlite3_finalize(st);
        return v;
}

/* The file after a clean stop: sound, every tick in an hourly chunk, and
 * each hour's rollups count the chunk's samples, once. */
static void check_file(void) {
        sqlite3 *db = NULL;
        sqlite3_stmt *st = NULL;
        assert_int_equal(sqlite3_open_v2(run.path, &db, SQLITE_OPEN_READONLY, NULL), SQLITE_OK);
        assert_int_equal(sqlite3_prepare_v2(db, "PRAGMA integrity_check", -1, &st, NULL), SQLITE_OK);
        assert_int_equal(sqlite3_step(st), SQLITE_ROW);
        assert_string_equal((const char *) sqlite3_column_text(st, 0), "ok");
        sqlite3_finalize(st);
        assert_int_equal(db_int(db, "SELECT count(*) FROM recent"), 0);
        assert_int_equal(db_int(db, "SELECT count(*) FROM head"), 0);
        assert_int_equal(db_int(db, "SELECT count(*) FROM pending"), 0);
        assert_int_equal(db_int(db, "SELECT count(*) FROM chunks c LEFT JOIN rollup_1h h "
                                    "ON h.series_id = c.series_id AND h.ts = c.hour LEFT JOIN rollup_1m m "
                                    "ON m.series_id = c.series_id AND m.hour = c.hour "
                                    "WHERE h.count IS NOT c.count OR m.count IS NOT c.count"),
                         0);
        assert_int_equal(db_int(db, "SELECT (SELECT count(*) FROM rollup_1h) + (SELECT count(*) FROM rollup_1m) - "
                                    "2 * (SELECT count(*) FROM chunks)"),
                         0);
        sqlite3_close(db);
}

/* The index in all_series of a stored series, by its name and labels. */
static size_t series_index(const struct cursor_series *cs) {
        for (size_t i = 0; i < N_ALL; i++) {
                const struct metric_desc *m = &metric_table[all_series[i].metric];
                size_t set = 0, matched = 0;
                if (strcmp(cs->name, m->name) != 0)
                        continue;
                /* An empty value is no label. */
                for (size_t j = 0; j < metric_label_count(m); j++) {
                        set += all_series[i].label_values[j][0] != '\0';
                        for (size_t k = 0; k < cs->n_labels; k++)
                                matched += strcmp(cs->labels[k].name, m->labels[j]) == 0 &&
                                           strcmp(cs->labels[k].value, all_series[i].label_values[j]) == 0;
                }
                if (matched == set && cs->n_labels == set)
                        return i;
        }
        fail_msg("a stored series that was never registered: %s", cs->name);
        return 0;
}

/* Every stored sample, through the store's own reader of raw samples:
 * each was appended, with that value, and is there once; every tick
 * confirmed is there whole. */
static void check_ticks(void) {
        struct store *s = NULL;
        struct store_options o;
        struct cursor_series *list = NULL;
        size_t n_list = 0, index_of[64];
        static bool seen[TICKS_MAX][N_LIST];

        store_options_init(&o);
        o.check_interval_ms = 0;
        assert_int_equal(store_open_or_set_aside(run.path, &o, &s, NULL, 0), 0);
        assert_int_equal(store_cursor_ops.list_series(s, 0, &list, &n_list), 0);
        for (size_t k = 0; k < n_list; k++) {
                assert_true(list[k].id > 0 && list[k].id < 64);
                index_of[list[k].id] = series_index(&list[k]);
        }
        memset(seen, 0, sizeof(seen));
        struct cursor_position after = { 0, 0 };
        struct cursor_page page = { 0 };
        do {
                cursor_page_free(&page);
                assert_int_equal(store_cursor_ops.read(s, &after, 1000, &page), 0);
                for (size_t p = 0; p < page.n; p++) {
                        const struct cursor_sample *x = &page.samples[p];
                        int64_t k = (x->timestamp_ms - T0) / INTERVAL_MS;
                        assert_true(k >= 0 && (size_t) k < run.n && run.ticks[k].ts == x->timestamp_ms);
                        const struct tick *t = &run.ticks[k];
                        size_t j = 0;
                        while (j < N_LIST && lists[t->list][j] != index_of[x->series])
                                j++;
                        assert_true(j < N_LIST && t->valid[j]);
                        assert_true(x->value == t->v[j]);
                        assert_false(seen[k][j]);
                        seen[k][j] = true;
                }
                if (page.n > 0)
                        after = (struct cursor_position){ page.samples[page.n - 1].timestamp_ms,
                                                          page.samples[page.n - 1].series };
        } while (page.more);
        cursor_page_free(&page);
        for (size_t k = 0; k < run.n; k++)
                for (size_t j = 0; j < N_LIST && run.ticks[k].confirmed; j++)
                        if (run.ticks[k].valid[j] && !seen[k][j])
                                fail_msg("tick %zu (series %zu) was reported stored and is missing", k, j);
        free(list);
        store_close(s);
}

/* A new run in a folder of its own, on a tmpfs where there is one: each
 * run syncs its file several times, and on a disk the sweeps took 40 s
 * instead of 6. */
static void begin_run(int expect) {
        struct run fresh = { .expect = expect, .list = -1, .want = 0 };
        run = fresh;
        /* Whatever a failed test left. */
        fault_vfs_disarm();
        fs_state = FS_OK;
        snprintf(run.dir, sizeof(run.dir), "%s/test-store-faults-XXXXXX",
                 access("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp");
        assert_non_null(mkdtemp(run.dir));
        snprintf(run.path, sizeof(run.path), "%s/neurond.db", run.dir);
}

/* Removes the run's folder, which holds the database's files and nothing
 * else (no file set aside). */
static void remove_run(void) {
        static const char *const suffixes[] = { "", "-wal", "-shm", "-journal", ".lock" };
        char name[128];
        for (size_t i = 0; i < sizeof(suffixes) / sizeof(suffixes[0]); i++) {
                snprintf(name, sizeof(name), "%s%s", run.path, suffixes[i]);
                unlink(name);
        }
        assert_int_equal(rmdir(run.dir), 0);
}

/* A clean stop once the faults are gone; then the file and the ticks are
 * checked, and the folder goes. */
static void end_run(void) {
        close_store();
        check_file();
        check_ticks();
        remove_run();
}

/* ---- the sweeps ---- */

/* What the store reports each kind as (storage/store.h's errors). */
static const int reported_as[FAULT__COUNT] = {
        [FAULT_WRITE] = -EIO,   [FAULT_FULL] = -ENOSPC,  [FAULT_SYNC] = -EIO,
        [FAULT_OPEN] = -EACCES, [FAULT_TRUNCATE] = -EIO,
};

/* One run of the workload with the nth call of kind failing; returns the
 * faults it met (0: the workload does not reach n). */
static long run_once(enum fault_kind kind, long nth) {
        begin_run(reported_as[kind]);
        fault_vfs_arm(kind, nth);
        for (size_t i = 0; i < sizeof(workload) / sizeof(workload[0]); i++) {
                step(workload[i]);
                if (run.faulting && run.after_fault >= TICKS_UNDER_FAULT)
                        stop_faults();
        }
        /* A fault late in the workload: ticks go on under it. */
        while (run.faulting && run.after_fault < TICKS_UNDER_FAULT)
                step(TICK);
        stop_faults();
        long faults = fault_vfs_failures();
        resume();
        end_run();
        return faults;
}

/* Fails the 1st, 2nd ... call of kind until the workload makes fewer;
 * returns the number of runs that met a fault. */
static long sweep(enum fault_kind kind) {
        struct timespec t0, t1;
        clock_gettime(CLOCK_MONOTONIC, &t0);
        long n = 1;
        while (run_once(kind, n) > 0)
                n++;
        clock_gettime(CLOCK_MONOTONIC, &t1);
        print_message("%s: %ld runs met the fault (%.1f s)\n", fault_kind_name(kind), n - 1,
                      (double) (t1.tv_sec - t0.tv_sec) + (double) (t1.tv_nsec - t0.tv_nsec) / 1e9);
        return n - 1;
}

static void store__write_fails__reported_and_nothing_lost(void **state) {
        (void) state;
        assert_true(sweep(FAULT_WRITE) > 100);
}

static void store__disk_full__reported_and_nothing_lost(void **state) {
        (void) state;
        assert_true(sweep(FAULT_FULL) > 100);
}

static void store__sync_fails__reported_and_nothing_lost(void **state) {
        (void) state;
        assert_true(sweep(FAULT_SYNC) > 0);
}

static void store__open_fails__reported_and_nothing_lost(void **state) {
        (void) state;
        assert_true(sweep(FAULT_OPEN) > 0);
}

static void store__truncate_fails__reported_and_nothing_lost(void **state) {
        (void) state;
        assert_true(sweep(FAULT_TRUNCATE) > 0);
}

/* ---- the start-up cases ---- */

int __real_open(const char *path, int flags, ...);
int __wrap_open(const char *path, int flags, ...);

int __wrap_open(const char *path, int flags, ...) {
        int mode = 0;
        if (flags & O_CREAT) {
                va_list ap;
                va_start(ap, flags);
                mode = va_arg(ap, int);
                va_end(ap);
        }
        /* Read-only: no file opens for writing. Out of inodes: files that
         * exist open, new ones cannot be made. */
        bool writes = (flags & O_ACCMODE) != O_RDONLY || (flags & O_CREAT);
        if (fs_state == FS_READ_ONLY && writes) {
                errno = EROFS;
                return -1;
        }
        if (fs_state == FS_NO_INODES && (flags & O_CREAT) && access(path, F_OK) != 0) {
                errno = ENOSPC;
                return -1;
        }
        return __real_open(path, flags, mode);
}

static void fs_recovers(void) {
        fs_state = FS_OK;
}

static void space_returns(void) {
        fault_vfs_disarm();
}

/* The first start's database: ticks, and a clean stop (its -wal and -shm
 * files go with it). */
static void first_start(void) {
        step(OPEN);
        step(LIST_A);
        for (int k = 0; k < 5; k++)
                step(TICK);
        step(CLOSE);
        assert_true(run.n == 5 && run.ticks[4].confirmed);
}

/* A start that cannot open the database: the store runs without it,
 * degraded and unopened, queries and the series list say -EAGAIN (the
 * daemon's 503), ticks wait in memory and the open is retried with
 * back-off; once the file system recovers, the database opens at a retry
 * with every tick held, and the first start's are kept. */
static void start_degraded(int error, void (*recovers)(void)) {
        struct history_stats st;
        assert_true(store_error_is_transient(error));
        run.expect = error;
        step(OPEN);
        assert_non_null(run.s);
        store_get_stats(run.s, &st);
        assert_true(st.degraded && st.unopened);
        assert_int_equal(st.last_error, error);
        step(LIST_A);
        for (int k = 0; k < 12; k++)
                step(TICK);
        store_get_stats(run.s, &st);
        assert_true(st.degraded && st.unopened);
        assert_true(st.write_errors >= 2 && st.write_errors < 12); /* retried, backing off */
        assert_int_equal(st.ticks_dropped, 0);
        struct history_query q = {
                .metric = METRIC_CORE_UTILIZATION, .start_ms = T0, .end_ms = T0 + 3600000, .step_ms = 60000
        };
        struct history_result *res = NULL;
        assert_int_equal(store_query_range(run.s, &q, &res), -EAGAIN);
        struct series_desc *list = NULL;
        size_t n_list = 0;
        assert_int_equal(store_list_series(run.s, -1, NULL, 0, &list, &n_list), -EAGAIN);

        recovers();
        resume();
        store_get_stats(run.s, &st);
        assert_false(st.degraded || st.unopened);
        assert_int_equal(st.damaged_set_aside, 0);
        end_run();
}

/* A full file system: the new database's first page cannot be written
 * (SQLite's SQLITE_FULL, as from a full tmpfs). */
static void store_open__disk_full__deferred_until_space_returns(void **state) {
        (void) state;
        begin_run(-ENOSPC);
        fault_vfs_arm(FAULT_FULL, 1);
        start_degraded(-ENOSPC, space_returns);
}

/* A file system mounted read-only, with the first start's database on it:
 * the store's open(2) of its lock file says EROFS. */
static void store_open__read_only_file_system__deferred_until_writable(void **state) {
        (void) state;
        begin_run(0);
        first_start();
        fs_state = FS_READ_ONLY;
        start_degraded(-EROFS, fs_recovers);
}

/* Out of inodes: the first start's database is there, its -wal file
 * cannot be made (ENOSPC from open(2)). */
static void store_open__out_of_inodes__deferred_until_files_can_be_made(void **state) {
        (void) state;
        begin_run(0);
        first_start();
        fs_state = FS_NO_INODES;
        start_degraded(-ENOSPC, fs_recovers);
}

/* A missing directory or a directory in the database's place is the
 * operator's to fix: not transient (the daemon exits 2). */
static void store_open__operator_mistakes__not_transient(void **state) {
        (void) state;
        struct store *s = NULL;
        char path[128];
        begin_run(0);
        snprintf(path, sizeof(path), "%s/missing/neurond.db", run.dir);
        int r = store_open(path, &s);
        assert_int_equal(r, -ENOENT);
        assert_false(store_error_is_transient(r));
        snprintf(path, sizeof(path), "%s/neurond.db", run.dir);
        assert_int_equal(mkdir(path, 0700), 0);
        r = store_open(path, &s);
        assert_true(r < 0);
        assert_false(store_error_is_transient(r));
        assert_null(s);
        assert_false(store_error_is_transient(-EACCES));
        assert_int_equal(rmdir(path), 0);
        remove_run();
}

int main(void) {
        if (fault_vfs_register() != SQLITE_OK)
                return 1;
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(store__write_fails__reported_and_nothing_lost),
                cmocka_unit_test(store__disk_full__reported_and_nothing_lost),
                cmocka_unit_test(store__sync_fails__reported_and_nothing_lost),
                cmocka_unit_test(store__open_fails__reported_and_nothing_lost),
                cmocka_unit_test(store__truncate_fails__reported_and_nothing_lost),
                cmocka_unit_test(store_open__disk_full__deferred_until_space_returns),
                cmocka_unit_test(store_open__read_only_file_system__deferred_until_writable),
                cmocka_unit_test(store_open__out_of_inodes__deferred_until_files_can_be_made),
                cmocka_unit_test(store_open__operator_mistakes__not_transient),
        };
        return cmocka_run_group_tests_name("store faults", tests, NULL, NULL);
}
