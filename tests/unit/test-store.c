#include "config.h"

#include <errno.h>
#include <math.h>
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
#include "tests/unit/assert-double.h"

static const struct series_desc series[] = {
        { .metric = METRIC_CORE_UTILIZATION, .label_values = { "0", "0" } },
        { .metric = METRIC_CORE_UTILIZATION, .label_values = { "0", "1" } },
        { .metric = METRIC_DEVICE_MEMORY_USED, .label_values = { "0" } },
};

struct fixture {
        char dir[64];
        char path[96];
};

static int setup(void **state) {
        struct fixture *f = calloc(1, sizeof(*f));
        snprintf(f->dir, sizeof(f->dir), "/tmp/neurond-test-store-XXXXXX");
        if (!mkdtemp(f->dir))
                return -1;
        snprintf(f->path, sizeof(f->path), "%s/neurond.db", f->dir);
        *state = f;
        return 0;
}

static int teardown(void **state) {
        struct fixture *f = *state;
        char path[128];
        static const char *const suffixes[] = { "", "-wal", "-shm", ".lock" };
        for (size_t i = 0; i < 4; i++) {
                snprintf(path, sizeof(path), "%s%s", f->path, suffixes[i]);
                unlink(path);
        }
        rmdir(f->dir);
        free(f);
        return 0;
}

static struct store *open_store(const char *path) {
        struct store *s = NULL;
        assert_int_equal(store_open(path, &s), 0);
        assert_int_equal(store_register_series(s, series, 3), 0);
        return s;
}

static struct history_result *query(struct store *s, enum metric_id metric, int64_t start, int64_t end, int64_t step,
                                    enum history_agg agg) {
        struct history_query q = { .metric = metric, .start_ms = start, .end_ms = end, .step_ms = step, .agg = agg };
        struct history_result *r = NULL;
        assert_int_equal(store_query_range(s, &q, &r), 0);
        return r;
}

static void store_append__ticks__read_back_by_bucket(void **state) {
        struct fixture *f = *state;
        struct store *s = open_store(f->path);

        /* Ten ticks one second apart; core 1's value is invalid on odd ticks. */
        for (int t = 0; t < 10; t++) {
                double values[] = { t / 10.0, 1, 4096.0 * t };
                uint8_t valid[] = { 1, t % 2 == 0, 1 };
                assert_int_equal(store_append(s, 1000000 + t * 1000, values, valid, 3), 0);
        }
        struct history_result *r = query(s, METRIC_CORE_UTILIZATION, 1000000, 1009000, 5000, HISTORY_AGG_AVG);
        assert_int_equal(r->n_series, 2);
        assert_string_equal(r->series[0].desc.label_values[1], "0");
        assert_int_equal(r->series[0].n_points, 2);
        assert_int_equal(r->series[0].points[0].timestamp_ms, 1000000);
        /* Ratios are kept to a float's precision. */
        assert_double_near(r->series[0].points[0].value, 0.2, 1e-7);
        assert_int_equal(r->series[0].points[1].timestamp_ms, 1005000);
        assert_double_near(r->series[0].points[1].value, 0.7, 1e-7);
        history_result_free(r);

        r = query(s, METRIC_DEVICE_MEMORY_USED, 1000000, 1009000, 5000, HISTORY_AGG_LAST);
        assert_int_equal(r->n_series, 1);
        assert_double_near(r->series[0].points[0].value, 4096.0 * 4, 0);
        assert_double_near(r->series[0].points[1].value, 4096.0 * 9, 0);
        history_result_free(r);

        r = query(s, METRIC_CORE_UTILIZATION, 1000000, 1009000, 1000, HISTORY_AGG_SUM);
        assert_int_equal(r->series[1].n_points, 5); /* only the valid ticks were stored */
        history_result_free(r);
        store_close(s);
}

static struct health_event event(int64_t ts, int device, unsigned kind, enum health_severity severity) {
        struct health_event ev = { .timestamp_ms = ts,
                                   .device = device,
                                   .core = -1,
                                   .kind = kind,
                                   .phase = HEALTH_BEGIN,
                                   .severity = severity,
                                   .state = HEALTH_DEGRADED,
                                   .value = NAN };
        snprintf(ev.reason, sizeof(ev.reason), "event at %lld", (long long) ts);
        return ev;
}

static size_t query_events(struct store *s, struct history_events_query q, struct health_event **ret) {
        size_t n = 0;
        assert_int_equal(store_query_events(s, &q, ret, &n), 0);
        return n;
}

/* Health events go to the database with the tick after them, are read
 * back by range, device, kind and severity, and age out with the raw
 * tier. */
static void store_add_events__with_the_tick__filtered_and_bounded(void **state) {
        struct fixture *f = *state;
        struct store_options o;
        store_options_init(&o);
        o.raw_retention_ms = 3600 * 1000;
        struct store *s = NULL;
        assert_int_equal(store_open_with(f->path, &o, &s), 0);
        assert_int_equal(store_register_series(s, series, 3), 0);
        struct health_event *got = NULL;
        struct history_events_query all = {
                .start_ms = 0, .end_ms = INT64_MAX, .device = -1, .kind = -1, .severity = -1, .limit = 100
        };

        /* A file without events has no table yet: none. */
        assert_int_equal(query_events(s, all, &got), 0);
        free(got);
        const double values[] = { 0.5, 0.5, 1 };
        const uint8_t valid[] = { 1, 1, 1 };
        const struct health_event batch[] = {
                event(1000000, 3, HEALTH_RULE_DEVICE_DOWN, HEALTH_CRITICAL),
                event(1000000, 3, HEALTH_RULE__COUNT, HEALTH_CRITICAL),
                event(1000000, 4, HEALTH_RULE_LINK_DOWN, HEALTH_WARNING),
        };
        store_add_events(s, batch, 3);
        assert_int_equal(store_append(s, 1000000, values, valid, 3), 0);
        assert_int_equal(query_events(s, all, &got), 3);
        assert_int_equal(got[0].device, 3);
        assert_int_equal(got[0].kind, HEALTH_RULE_DEVICE_DOWN);
        assert_int_equal(got[0].core, -1);
        assert_true(isnan(got[0].value));
        assert_string_equal(got[2].reason, "event at 1000000");
        free(got);
        struct history_events_query q = all;
        q.device = 3;
        q.kind = HEALTH_RULE__COUNT;
        assert_int_equal(query_events(s, q, &got), 1);
        assert_int_equal(got[0].phase, HEALTH_BEGIN);
        free(got);
        q = all;
        q.severity = HEALTH_WARNING;
        assert_int_equal(query_events(s, q, &got), 1);
        assert_int_equal(got[0].device, 4);
        free(got);
        q = all;
        q.limit = 2; /* the newest two, oldest first */
        assert_int_equal(query_events(s, q, &got), 2);
        assert_int_equal(got[1].device, 4);
        free(got);

        /* An hour and a bit later the first ones are past the raw retention. */
        const struct health_event later = event(1000000 + 3700 * 1000, 5, HEALTH_RULE_HBM_FULL, HEALTH_WARNING);
        store_add_events(s, &later, 1);
        assert_int_equal(store_append(s, 1000000 + 3700 * 1000, values, valid, 3), 0);
        assert_int_equal(query_events(s, all, &got), 1);
        assert_int_equal(got[0].device, 5);
        free(got);
        store_close(s);

        /* Kept across a restart. */
        s = open_store(f->path);
        assert_int_equal(query_events(s, all, &got), 1);
        free(got);
        store_close(s);
}

static void store_query_range__label_matcher__filters(void **state) {
        struct fixture *f = *state;
        struct store *s = open_store(f->path);
        double values[] = { 0.5, 0.75, 1 };
        uint8_t valid[] = { 1, 1, 1 };
        assert_int_equal(store_append(s, 5000, values, valid, 3), 0);

        struct history_query q = { .metric = METRIC_CORE_UTILIZATION,
                                   .start_ms = 0,
                                   .end_ms = 10000,
                                   .step_ms = 1000,
                                   .n_matchers = 1,
                                   .matchers = { { "neuroncore", "1" } } };
        struct history_result *r = NULL;
        assert_int_equal(store_query_range(s, &q, &r), 0);
        assert_int_equal(r->n_series, 1);
        assert_double_near(r->series[0].points[0].value, 0.75, 0);
        history_result_free(r);
        store_close(s);
}

static void store_open__reopen__series_keep_identity(void **state) {
        struct fixture *f = *state;
        struct store *s = open_store(f->path);
        double values[] = { 0.5, 0.75, 1 };
        uint8_t valid[] = { 1, 1, 1 };
        assert_int_equal(store_append(s, 1000, values, valid, 3), 0);
        store_close(s);

        s = open_store(f->path);
        assert_int_equal(store_append(s, 2000, values, valid, 3), 0);
        struct history_result *r = query(s, METRIC_CORE_UTILIZATION, 0, 3000, 1000, HISTORY_AGG_AVG);
        assert_int_equal(r->n_series, 2);
        assert_int_equal(r->series[0].n_points, 2);
        history_result_free(r);
        store_close(s);
}

/* A database of an earlier neurond named the ECC device label
 * neuron_device; now it is neuron_device_index, as AWS's exporter spells
 * it. Opening renames it in place: the history goes on in one series. */
static void store_open__earlier_label_names__history_continues(void **state) {
        struct fixture *f = *state;
        const struct series_desc ecc = { .metric = METRIC_DEVICE_ECC_EVENTS,
                                         .label_values = { "3", "mem_ecc_uncorrected" } };
        struct store *s = NULL;
        double v = 1;
        uint8_t valid = 1;
        sqlite3 *db;

        assert_int_equal(store_open(f->path, &s), 0);
        assert_int_equal(store_register_series(s, &ecc, 1), 0);
        assert_int_equal(store_append(s, 1000, &v, &valid, 1), 0);
        store_close(s);
        /* As the earlier version wrote the row. */
        assert_int_equal(sqlite3_open(f->path, &db), SQLITE_OK);
        assert_int_equal(sqlite3_exec(db,
                                      "UPDATE series SET labels = "
                                      "'{\"neuron_device\":\"3\",\"event_type\":\"mem_ecc_uncorrected\"}'",
                                      NULL, NULL, NULL),
                         SQLITE_OK);
        sqlite3_close(db);

        assert_int_equal(store_open(f->path, &s), 0);
        assert_int_equal(store_register_series(s, &ecc, 1), 0);
        v = 2;
        assert_int_equal(store_append(s, 2000, &v, &valid, 1), 0);
        struct history_result *r = query(s, METRIC_DEVICE_ECC_EVENTS, 0, 3000, 1000, HISTORY_AGG_LAST);
        assert_int_equal(r->n_series, 1);
        assert_string_equal(r->series[0].desc.label_values[0], "3");
        assert_int_equal(r->series[0].n_points, 2);
        history_result_free(r);
        store_close(s);
}

/* A label a family gained is empty in a series that has no value for it,
 * and an empty label is no label: the series keeps the identity it had
 * before the family had the label. */
static void store_register_series__empty_label__same_series_as_without(void **state) {
        struct fixture *f = *state;
        struct store *s = open_store(f->path);
        double values[] = { 0.5, 0.75, 1 };
        uint8_t valid[] = { 1, 1, 1 };
        sqlite3 *db;
        assert_int_equal(store_append(s, 1000, values, valid, 3), 0);
        store_close(s);
        assert_int_equal(sqlite3_open(f->path, &db), SQLITE_OK);
        sqlite3_stmt *st = NULL;
        assert_int_equal(sqlite3_prepare_v2(db,
                                            "SELECT labels FROM series WHERE metric = 'neuroncore_utilization_ratio' "
                                            "ORDER BY id LIMIT 1",
                                            -1, &st, NULL),
                         SQLITE_OK);
        assert_int_equal(sqlite3_step(st), SQLITE_ROW);
        assert_string_equal((const char *) sqlite3_column_text(st, 0),
                            "{\"neuron_device\":\"0\",\"neuroncore\":\"0\"}");
        sqlite3_finalize(st);
        sqlite3_close(db);
}

static void store_open__newer_schema__eprotonosupport(void **state) {
        struct fixture *f = *state;
        sqlite3 *db;
        assert_int_equal(sqlite3_open(f->path, &db), SQLITE_OK);
        assert_int_equal(sqlite3_exec(db, "PRAGMA user_version = 999", NULL, NULL, NULL), SQLITE_OK);
        sqlite3_close(db);

        struct store *s = NULL;
        assert_int_equal(store_open(f->path, &s), -EPROTONOSUPPORT);
        assert_null(s);
}

/* Series times buckets past the budget is refused before anything is
 * read; within it, every physical core of trn3-gen2-ultraserver (144
 * devices of 8) at 1,000 points each is answered. */
static void store_query_range__points_budget__every_core_fits_more_e2big(void **state) {
        enum { CORES = 144 * 8 };
        struct fixture *f = *state;
        struct store *s = NULL;
        struct series_desc *cores = calloc(CORES, sizeof(*cores));
        double *values = calloc(CORES, sizeof(*values));
        uint8_t *valid = calloc(CORES, 1);
        assert_non_null(cores);
        assert_non_null(values);
        assert_non_null(valid);
        for (int i = 0; i < CORES; i++) {
                cores[i].metric = METRIC_CORE_PHYSICAL_UTILIZATION;
                snprintf(cores[i].label_values[0], sizeof(cores[i].label_values[0]), "%d", i / 8);
                snprintf(cores[i].label_values[1], sizeof(cores[i].label_values[1]), "%d", i % 8 / 2);
                snprintf(cores[i].label_values[2], sizeof(cores[i].label_values[2]), "%d", i % 8);
                values[i] = 0.5;
                valid[i] = 1;
        }
        assert_int_equal(store_open(f->path, &s), 0);
        assert_int_equal(store_register_series(s, cores, CORES), 0);
        assert_int_equal(store_append(s, 5000, values, valid, CORES), 0);

        struct history_query q = {
                .metric = METRIC_CORE_PHYSICAL_UTILIZATION, .start_ms = 0, .end_ms = 999 * 1000, .step_ms = 1000
        };
        struct history_result *r = NULL;
        assert_int_equal(store_query_range(s, &q, &r), 0);
        assert_int_equal(r->n_series, CORES);
        history_result_free(r);
        /* The most buckets that fit, then one more. */
        q.end_ms = (HISTORY_POINTS_MAX / CORES - 1) * 1000;
        r = NULL;
        assert_int_equal(store_query_range(s, &q, &r), 0);
        history_result_free(r);
        q.end_ms += 1000;
        r = NULL;
        assert_int_equal(store_query_range(s, &q, &r), -E2BIG);
        assert_null(r);
        store_close(s);
        free(cores);
        free(values);
        free(valid);
}

/* Counts its calls; says "give up" from the second on. */
static bool cancel_after_one(const void *cls) {
        int *calls = (int *) cls;
        return ++*calls > 1;
}

/* The query asks between series, and stops when told. */
static void store_query_range__cancelled__ecanceled(void **state) {
        struct fixture *f = *state;
        struct store *s = open_store(f->path);
        double values[] = { 0.5, 0.75, 1 };
        uint8_t valid[] = { 1, 1, 1 };
        assert_int_equal(store_append(s, 5000, values, valid, 3), 0);

        int calls = 0;
        struct history_query q = {
                .metric = METRIC_CORE_UTILIZATION,
                .start_ms = 0,
                .end_ms = 10000,
                .step_ms = 1000,
                .cancelled = cancel_after_one,
                .cancel_cls = &calls,
        };
        struct history_result *r = NULL;
        assert_int_equal(store_query_range(s, &q, &r), -ECANCELED);
        assert_null(r);
        assert_int_equal(calls, 2); /* before the first series, and the second */
        /* The store answers the next query as usual. */
        q.cancelled = NULL;
        assert_int_equal(store_query_range(s, &q, &r), 0);
        assert_int_equal(r->n_series, 2);
        history_result_free(r);
        store_close(s);
}

static void store_append__wrong_count__einval(void **state) {
        struct fixture *f = *state;
        struct store *s = open_store(f->path);
        double values[] = { 1, 2 };
        uint8_t valid[] = { 1, 1 };
        assert_int_equal(store_append(s, 1000, values, valid, 2), -EINVAL);
        store_close(s);
}

/* Due when the tick about to be appended is in a later hour than the
 * oldest buffered one (that hour is compacted and rolled up soon); not for
 * the first tick after open, nor within an hour, nor once compacted. */
static void store_rollup_due__hour_ended__true_once(void **state) {
        struct fixture *f = *state;
        struct store *s = open_store(f->path);
        double values[] = { 1, 2, 3 };
        uint8_t valid[] = { 1, 1, 1 };
        const int64_t h = 3600000 * 500000LL;

        assert_false(store_rollup_due(s, h + 1000));
        assert_int_equal(store_append(s, h + 1000, values, valid, 3), 0);
        assert_false(store_rollup_due(s, h + 59999));
        assert_int_equal(store_append(s, h + 3599000, values, valid, 3), 0);
        assert_true(store_rollup_due(s, h + 3600000));
        assert_int_equal(store_append(s, h + 3600000, values, valid, 3), 0);
        assert_false(store_rollup_due(s, h + 3601000));
        assert_true(store_rollup_due(s, h + 7200000));
        store_close(s);
}

/* A series list in which one series appears twice (two runtimes under one
 * tag): neither copy is stored, since either value would be a guess, and
 * every other series is, tick after tick, across a change of the list and
 * a restart; the store says so while it lasts. */
static void store_register_series__duplicate__others_stored_across_changes_and_restart(void **state) {
        struct fixture *f = *state;
        const struct series_desc twice[] = {
                { .metric = METRIC_RUNTIME_INFO, .label_values = { "job", "" } },
                { .metric = METRIC_DEVICE_MEMORY_USED, .label_values = { "0" } },
                { .metric = METRIC_RUNTIME_INFO, .label_values = { "job", "" } },
        };
        struct history_stats st;
        struct store *s = NULL;
        double values[] = { 1, 4096, 2, 8192 };
        uint8_t valid[] = { 1, 1, 1, 1 };

        assert_int_equal(store_open(f->path, &s), 0);
        assert_int_equal(store_register_series(s, twice, 3), 0);
        store_get_stats(s, &st);
        assert_int_equal(st.series_duplicated, 2);
        assert_true(st.degraded);
        for (int t = 0; t < 3; t++)
                assert_int_equal(store_append(s, 1000000 + t * 1000, values, valid, 3), 0);
        /* The list changes while the open minute holds the ticks above. */
        assert_int_equal(store_register_series(s, series, 3), 0);
        store_get_stats(s, &st);
        assert_int_equal(st.series_duplicated, 0);
        assert_false(st.degraded);
        for (int t = 3; t < 6; t++)
                assert_int_equal(store_append(s, 1000000 + t * 1000, values, valid, 3), 0);
        assert_int_equal(store_register_series(s, twice, 3), 0);
        assert_int_equal(store_append(s, 1006000, values, valid, 3), 0);
        store_close(s);

        s = NULL;
        assert_int_equal(store_open(f->path, &s), 0);
        struct history_result *r = query(s, METRIC_DEVICE_MEMORY_USED, 1000000, 1006000, 1000, HISTORY_AGG_LAST);
        assert_int_equal(r->n_series, 1);
        assert_int_equal(r->series[0].n_points, 7);
        history_result_free(r);
        r = query(s, METRIC_RUNTIME_INFO, 1000000, 1006000, 1000, HISTORY_AGG_LAST);
        assert_int_equal(r->n_series, 0);
        history_result_free(r);
        store_close(s);
}

/* An open minute that cannot be closed out as it is (a row of the recent
 * table listing one series twice, as an older neurond wrote it): the
 * store still opens, sets those samples aside, counts them, and keeps the
 * row's other samples. */
static void store_open__open_minute_lists_a_series_twice__set_aside_and_opened(void **state) {
        struct fixture *f = *state;
        struct store *s = open_store(f->path);
        double values[] = { 0.5, 0.25, 4096 };
        uint8_t valid[] = { 1, 1, 1 };
        assert_int_equal(store_append(s, 1000000, values, valid, 3), 0);
        store_close(s);

        sqlite3 *db = NULL;
        sqlite3_stmt *st = NULL;
        assert_int_equal(sqlite3_open(f->path, &db), SQLITE_OK);
        assert_int_equal(
                sqlite3_prepare_v2(db,
                                   "SELECT (SELECT id FROM series WHERE metric = 'neuroncore_utilization_ratio' "
                                   "ORDER BY id LIMIT 1), (SELECT id FROM series WHERE metric = "
                                   "'neuron_device_memory_used_bytes')",
                                   -1, &st, NULL),
                SQLITE_OK);
        assert_int_equal(sqlite3_step(st), SQLITE_ROW);
        uint32_t core = (uint32_t) sqlite3_column_int64(st, 0), mem = (uint32_t) sqlite3_column_int64(st, 1);
        sqlite3_finalize(st);
        /* Entries as storage/store-internal.h writes them: id, then value. */
        uint8_t row[36];
        const struct {
                uint32_t id;
                double v;
        } entries[] = { { core, 0.5 }, { core, 0.75 }, { mem, 8192 } };
        for (size_t e = 0; e < 3; e++) {
                uint64_t u;
                memcpy(&u, &entries[e].v, sizeof(u));
                for (int i = 0; i < 4; i++)
                        row[12 * e + i] = (uint8_t) (entries[e].id >> (8 * i));
                for (int i = 0; i < 8; i++)
                        row[12 * e + 4 + i] = (uint8_t) (u >> (8 * i));
        }
        assert_int_equal(sqlite3_prepare_v2(db, "INSERT INTO recent(ts, data) VALUES (1001000, ?1)", -1, &st, NULL),
                         SQLITE_OK);
        sqlite3_bind_blob(st, 1, row, sizeof(row), SQLITE_STATIC);
        assert_int_equal(sqlite3_step(st), SQLITE_DONE);
        sqlite3_finalize(st);
        sqlite3_close(db);

        struct history_stats stats;
        s = NULL;
        assert_int_equal(store_open(f->path, &s), 0);
        store_get_stats(s, &stats);
        assert_int_equal(stats.samples_set_aside, 2);
        struct history_result *r = query(s, METRIC_DEVICE_MEMORY_USED, 1000000, 1001000, 1000, HISTORY_AGG_LAST);
        assert_int_equal(r->n_series, 1);
        assert_int_equal(r->series[0].n_points, 2);
        assert_double_near(r->series[0].points[1].value, 8192, 0);
        history_result_free(r);
        store_close(s);
}

static size_t stored_series(struct store *s) {
        struct series_desc *list = NULL;
        size_t n = 0;
        assert_int_equal(store_list_series(s, -1, NULL, 0, &list, &n), 0);
        free(list);
        return n;
}

/* The series limit: a new series beyond it is not stored, and counted;
 * series that are already stored go on being stored. */
static void store_register_series__beyond_the_limit__new_series_left_out_and_counted(void **state) {
        struct fixture *f = *state;
        const struct series_desc more[] = {
                series[0],
                series[1],
                series[2],
                { .metric = METRIC_DEVICE_MEMORY_USED, .label_values = { "1" } },
                { .metric = METRIC_DEVICE_MEMORY_USED, .label_values = { "2" } },
        };
        struct store_options o;
        struct store *s = NULL;
        struct history_stats st;
        double values[] = { 0.5, 0.5, 1, 2, 3 };
        uint8_t valid[] = { 1, 1, 1, 1, 1 };

        store_options_init(&o);
        o.max_series = 4;
        assert_int_equal(store_open_with(f->path, &o, &s), 0);
        assert_int_equal(store_register_series(s, series, 3), 0);
        assert_int_equal(store_append(s, 1000000, values, valid, 3), 0);
        assert_int_equal(store_register_series(s, more, 5), 0);
        store_get_stats(s, &st);
        assert_int_equal(st.series_over_limit, 1);
        assert_int_equal(st.series_refused, 1);
        assert_true(st.degraded);
        assert_int_equal(store_append(s, 1001000, values, valid, 5), 0);
        assert_int_equal(stored_series(s), 4);
        struct history_result *r = query(s, METRIC_DEVICE_MEMORY_USED, 1000000, 1001000, 1000, HISTORY_AGG_LAST);
        assert_int_equal(r->n_series, 2);
        assert_string_equal(r->series[1].desc.label_values[0], "1");
        assert_int_equal(r->series[1].n_points, 1);
        history_result_free(r);
        store_close(s);
}

/* Series of no current list whose rows all aged out of every tier are
 * removed, and free their place under the limit; the series with the
 * highest id stays, so that no id is ever given to another series. */
static void store_enforce_retention__series_without_rows__removed_freeing_the_limit(void **state) {
        struct fixture *f = *state;
        const int64_t hour = 3600000;
        const struct series_desc later[] = { series[2],
                                             { .metric = METRIC_DEVICE_MEMORY_USED, .label_values = { "7" } } };
        struct store_options o;
        struct store *s = NULL;
        struct history_stats st;
        double values[] = { 0.5, 0.5, 1 };
        uint8_t valid[] = { 1, 1, 1 };

        store_options_init(&o);
        o.raw_retention_ms = o.minute_retention_ms = o.hour_retention_ms = 2 * hour;
        o.max_series = 3;
        assert_int_equal(store_open_with(f->path, &o, &s), 0);
        /* Ids in this order: device 0's memory, core 0, core 1 (the highest). */
        const struct series_desc first[] = { series[2], series[0], series[1] };
        assert_int_equal(store_register_series(s, first, 3), 0);
        int64_t t = 100 * hour;
        assert_int_equal(store_append(s, t, values, valid, 3), 0);
        /* Only device 0's memory goes on: the two cores' series age out,
         * and core 0's goes; core 1's, with the highest id, stays. */
        assert_int_equal(store_register_series(s, series + 2, 1), 0);
        for (t += 600000; t < 106 * hour; t += 600000)
                assert_int_equal(store_append(s, t, values + 2, valid, 1), 0);
        assert_int_equal(stored_series(s), 2);
        /* Their places are free for new series. */
        assert_int_equal(store_register_series(s, later, 2), 0);
        store_get_stats(s, &st);
        assert_int_equal(st.series_over_limit, 0);
        assert_int_equal(store_append(s, t, values + 1, valid, 2), 0);
        assert_int_equal(stored_series(s), 3);
        store_close(s);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test_setup_teardown(store_append__ticks__read_back_by_bucket, setup, teardown),
                cmocka_unit_test_setup_teardown(store_add_events__with_the_tick__filtered_and_bounded, setup, teardown),
                cmocka_unit_test_setup_teardown(store_query_range__label_matcher__filters, setup, teardown),
                cmocka_unit_test_setup_teardown(store_open__reopen__series_keep_identity, setup, teardown),
                cmocka_unit_test_setup_teardown(store_open__newer_schema__eprotonosupport, setup, teardown),
                cmocka_unit_test_setup_teardown(store_open__earlier_label_names__history_continues, setup, teardown),
                cmocka_unit_test_setup_teardown(store_register_series__empty_label__same_series_as_without, setup,
                                                teardown),
                cmocka_unit_test_setup_teardown(store_query_range__points_budget__every_core_fits_more_e2big, setup,
                                                teardown),
                cmocka_unit_test_setup_teardown(store_query_range__cancelled__ecanceled, setup, teardown),
                cmocka_unit_test_setup_teardown(store_append__wrong_count__einval, setup, teardown),
                cmocka_unit_test_setup_teardown(store_rollup_due__hour_ended__true_once, setup, teardown),
                cmocka_unit_test_setup_teardown(
                        store_register_series__duplicate__others_stored_across_changes_and_restart, setup, teardown),
                cmocka_unit_test_setup_teardown(store_open__open_minute_lists_a_series_twice__set_aside_and_opened,
                                                setup, teardown),
                cmocka_unit_test_setup_teardown(
                        store_register_series__beyond_the_limit__new_series_left_out_and_counted, setup, teardown),
                cmocka_unit_test_setup_teardown(store_enforce_retention__series_without_rows__removed_freeing_the_limit,
                                                setup, teardown),
        };
        return cmocka_run_group_tests_name("store", tests, NULL, NULL);
}
