/* The store as lib/cursor.h reads it (store_cursor_ops): every stored
 * sample once, in (timestamp, series) order, across closed chunks and the
 * open span; named positions that survive a restart; the series' labels. */
#include "config.h"

#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>
#include <sqlite3.h>

#include "storage/store.h"

#define T0 1700000000000LL
#define N_SERIES 3

static const struct series_desc series[N_SERIES] = {
        { .metric = METRIC_DEVICE_UP, .label_values = { "0" } },
        { .metric = METRIC_CORE_MEMORY_USED, .label_values = { "0", "1" } },
        { .metric = METRIC_DEVICE_MEMORY_USED, .label_values = { "0" } },
};

struct fixture {
        char dir[64];
        char path[96];
};

static int setup(void **state) {
        struct fixture *f = calloc(1, sizeof(*f));
        snprintf(f->dir, sizeof(f->dir), "/tmp/neurond-test-cursor-XXXXXX");
        if (!mkdtemp(f->dir))
                return -1;
        snprintf(f->path, sizeof(f->path), "%s/neurond.db", f->dir);
        *state = f;
        return 0;
}

static int teardown(void **state) {
        struct fixture *f = *state;
        char cmd[128];
        snprintf(cmd, sizeof(cmd), "rm -rf %s", f->dir);
        assert_int_equal(system(cmd), 0);
        free(f);
        return 0;
}

static struct store *open_store(const char *path) {
        struct store_options o;
        struct store *s = NULL;
        store_options_init(&o);
        o.chunk_ms = 60 * 1000; /* a closed chunk every minute of ticks */
        assert_int_equal(store_open_with(path, &o, &s), 0);
        assert_int_equal(store_register_series(s, series, N_SERIES), 0);
        return s;
}

/* Series i's value at tick t; series 1 is absent every seventh tick. */
static double value_of(int t, int i) {
        return t * 10 + i;
}

static bool valid_at(int t, int i) {
        return !(i == 1 && t % 7 == 0);
}

static void append_ticks(struct store *s, int first, int n) {
        for (int t = first; t < first + n; t++) {
                double values[N_SERIES];
                uint8_t valid[N_SERIES];
                for (int i = 0; i < N_SERIES; i++) {
                        values[i] = value_of(t, i);
                        valid[i] = valid_at(t, i);
                }
                assert_int_equal(store_append(s, T0 + t * 1000LL, values, valid, N_SERIES), 0);
        }
}

/* The store's id of each series, by its labels. */
static void series_ids(struct store *s, int64_t ids[N_SERIES]) {
        struct cursor_series *list = NULL;
        size_t n = 0;
        assert_int_equal(store_cursor_ops.list_series(s, 0, &list, &n), 0);
        assert_int_equal(n, N_SERIES);
        for (size_t k = 0; k < n; k++) {
                if (strcmp(list[k].name, "neuron_device_up") == 0)
                        ids[0] = list[k].id;
                else if (strcmp(list[k].name, "neuroncore_memory_used_bytes") == 0)
                        ids[1] = list[k].id;
                else
                        ids[2] = list[k].id;
        }
        free(list);
}

/* Reads every page after pos with pages of at most max samples and checks
 * that they are ticks [first, first + n) exactly, in order. */
static void assert_reads_ticks(struct store *s, struct cursor_position pos, size_t max, int first, int n) {
        int64_t ids[N_SERIES];
        series_ids(s, ids);
        size_t expected = 0;
        for (int t = first; t < first + n; t++)
                for (int i = 0; i < N_SERIES; i++)
                        expected += valid_at(t, i);

        size_t seen = 0;
        int t = first, i = 0;
        for (int pages = 0; pages < 100000; pages++) {
                struct cursor_page page = { 0 };
                assert_int_equal(store_cursor_ops.read(s, &pos, max, &page), 0);
                assert_true(page.n <= max);
                if (page.n == 0) {
                        assert_false(page.more);
                        cursor_page_free(&page);
                        break;
                }
                for (size_t k = 0; k < page.n; k++) {
                        const struct cursor_sample *c = &page.samples[k];
                        while (!valid_at(t, i)) {
                                i = (i + 1) % N_SERIES;
                                t += i == 0;
                        }
                        if (c->timestamp_ms != T0 + t * 1000LL || c->series != ids[i])
                                fail_msg("sample %zu is (%lld, %lld), expected tick %d series %d", seen,
                                         (long long) (c->timestamp_ms - T0), (long long) c->series, t, i);
                        assert_true(c->value == value_of(t, i));
                        struct cursor_position next = { c->timestamp_ms, c->series };
                        assert_true(cursor_position_compare(&next, &pos) > 0);
                        pos = next;
                        seen++;
                        i = (i + 1) % N_SERIES;
                        t += i == 0;
                }
                cursor_page_free(&page);
        }
        assert_int_equal(seen, expected);
}

static void store_cursor_read__chunks_and_open_span__every_sample_once_in_order(void **state) {
        struct fixture *f = *state;
        struct store *s = open_store(f->path);

        /* Three closed minutes and part of a fourth. */
        append_ticks(s, 0, 200);
        struct cursor_position start = { 0, 0 };
        assert_reads_ticks(s, start, 5, 0, 200);
        assert_reads_ticks(s, start, 4, 0, 200);
        assert_reads_ticks(s, start, 1000, 0, 200);
        /* From inside a tick of a closed chunk. */
        int64_t ids[N_SERIES];
        series_ids(s, ids);
        struct cursor_position mid = { T0 + 71 * 1000LL, ids[0] };
        struct cursor_page page = { 0 };
        assert_int_equal(store_cursor_ops.read(s, &mid, 2, &page), 0);
        assert_int_equal(page.n, 2);
        assert_true(page.more);
        assert_int_equal(page.samples[0].timestamp_ms, T0 + 71 * 1000LL);
        assert_true(page.samples[0].value == value_of(71, 1));
        assert_true(page.samples[1].value == value_of(71, 2));
        cursor_page_free(&page);
        store_close(s);
}

/* Rows in one of the database's tables, read on a connection of its own. */
static long table_rows(const char *path, const char *table) {
        char sql[128];
        sqlite3 *db = NULL;
        sqlite3_stmt *stmt = NULL;
        snprintf(sql, sizeof(sql), "SELECT count(*) FROM %s", table);
        assert_int_equal(sqlite3_open_v2(path, &db, SQLITE_OPEN_READONLY, NULL), SQLITE_OK);
        assert_int_equal(sqlite3_prepare_v2(db, sql, -1, &stmt, NULL), SQLITE_OK);
        assert_int_equal(sqlite3_step(stmt), SQLITE_ROW);
        long n = (long) sqlite3_column_int64(stmt, 0);
        sqlite3_finalize(stmt);
        sqlite3_close(db);
        return n;
}

static void store_cursor_read__hourly_chunks_head_and_open_span__every_sample_once_in_order(void **state) {
        struct fixture *f = *state;
        struct store *s = open_store(f->path);

        /* Two hours and a few minutes: the first hours merged into hourly
         * chunks, the last minutes in head chunks and the open span. */
        append_ticks(s, 0, 7500);
        assert_true(table_rows(f->path, "chunks") > 0);
        assert_true(table_rows(f->path, "head") > 0);
        assert_true(table_rows(f->path, "recent") > 0);
        assert_reads_ticks(s, (struct cursor_position){ 0, 0 }, 5000, 0, 7500);
        store_close(s);
}

static void store_cursor_read__after_the_newest__empty_page(void **state) {
        struct fixture *f = *state;
        struct store *s = open_store(f->path);
        struct cursor_position end = { T0 + 9 * 1000LL, INT64_MAX };
        struct cursor_page page = { 0 };

        append_ticks(s, 0, 10);
        assert_int_equal(store_cursor_ops.read(s, &end, 10, &page), 0);
        assert_int_equal(page.n, 0);
        assert_false(page.more);
        cursor_page_free(&page);
        assert_int_equal(store_cursor_ops.newest(s), T0 + 9 * 1000LL);
        store_close(s);
}

static void store_cursor_count_after__position__samples_after_it(void **state) {
        struct fixture *f = *state;
        struct store *s = open_store(f->path);
        uint64_t n = 0;

        append_ticks(s, 0, 130);
        /* From a minute boundary, in closed chunks and the open span: exact. */
        struct cursor_position pos = { T0 + 59 * 1000LL, INT64_MAX };
        assert_int_equal(store_cursor_ops.count_after(s, &pos, &n), 0);
        size_t expected = 0;
        for (int t = 60; t < 130; t++)
                for (int i = 0; i < N_SERIES; i++)
                        expected += valid_at(t, i);
        assert_int_equal(n, expected);
        pos.timestamp_ms = T0 + 129 * 1000LL;
        assert_int_equal(store_cursor_ops.count_after(s, &pos, &n), 0);
        assert_int_equal(n, 0);
        store_close(s);
}

static void store_cursor_positions__saved__kept_across_a_restart(void **state) {
        struct fixture *f = *state;
        struct store *s = open_store(f->path);
        struct cursor_position pos = { T0 + 3000, 2 }, got = { 0 };

        assert_int_equal(store_cursor_ops.load(s, "central", &got), -ENOENT);
        assert_int_equal(store_cursor_ops.save(s, "central", &pos), 0);
        /* Known at once, written with the next tick. */
        assert_int_equal(store_cursor_ops.load(s, "central", &got), 0);
        assert_int_equal(got.timestamp_ms, pos.timestamp_ms);
        append_ticks(s, 0, 1);
        pos.series = 3;
        assert_int_equal(store_cursor_ops.save(s, "central", &pos), 0);
        /* Written at close. */
        store_close(s);

        s = open_store(f->path);
        assert_int_equal(store_cursor_ops.load(s, "central", &got), 0);
        assert_int_equal(got.timestamp_ms, T0 + 3000);
        assert_int_equal(got.series, 3);
        assert_int_equal(store_cursor_ops.load(s, "other", &got), -ENOENT);
        store_close(s);
}

static void store_cursor_list_series__from_an_id__names_and_labels(void **state) {
        struct fixture *f = *state;
        struct store *s = open_store(f->path);
        struct cursor_series *list = NULL;
        size_t n = 0;
        int64_t ids[N_SERIES];

        series_ids(s, ids);
        assert_int_equal(store_cursor_ops.list_series(s, ids[1], &list, &n), 0);
        assert_true(n >= 1);
        assert_int_equal(list[0].id, ids[1]);
        assert_string_equal(list[0].name, "neuroncore_memory_used_bytes");
        assert_int_equal(list[0].n_labels, 2);
        for (size_t k = 0; k < list[0].n_labels; k++)
                if (strcmp(list[0].labels[k].name, "neuroncore") == 0)
                        assert_string_equal(list[0].labels[k].value, "1");
        free(list);
        store_close(s);
}

static void store_cursor_read__no_database_yet__eagain(void **state) {
        struct fixture *f = *state;
        struct store_options o;
        struct store *s = NULL;
        struct cursor_position pos = { 0, 0 };
        struct cursor_page page = { 0 };

        store_options_init(&o);
        assert_int_equal(store_open_deferred(f->path, &o, -ENOSPC, &s), 0);
        assert_int_equal(store_cursor_ops.read(s, &pos, 10, &page), -EAGAIN);
        assert_int_equal(store_cursor_ops.load(s, "x", &pos), -EAGAIN);
        store_close(s);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test_setup_teardown(store_cursor_read__chunks_and_open_span__every_sample_once_in_order,
                                                setup, teardown),
                cmocka_unit_test_setup_teardown(
                        store_cursor_read__hourly_chunks_head_and_open_span__every_sample_once_in_order, setup,
                        teardown),
                cmocka_unit_test_setup_teardown(store_cursor_read__after_the_newest__empty_page, setup, teardown),
                cmocka_unit_test_setup_teardown(store_cursor_count_after__position__samples_after_it, setup, teardown),
                cmocka_unit_test_setup_teardown(store_cursor_positions__saved__kept_across_a_restart, setup, teardown),
                cmocka_unit_test_setup_teardown(store_cursor_list_series__from_an_id__names_and_labels, setup,
                                                teardown),
                cmocka_unit_test_setup_teardown(store_cursor_read__no_database_yet__eagain, setup, teardown),
        };
        return cmocka_run_group_tests_name("store-cursor", tests, NULL, NULL);
}
