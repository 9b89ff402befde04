/* Derived chunks (storage/derive.h): a logical core's utilization coded
 * against its physical cores', its busy-seconds counter against its
 * utilization, what a link receives against what its peer sends. Through the store: every sample reads back bit for bit
 * by range query and by cursor, the derived chunks are what the store wrote, a source's missing chunk is an error and
 * not a wrong answer, and an hour compacted again after its sources changed still reads back. Then the codec's
 * refusals. */
#include "config.h"

#include <errno.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>
#include <sqlite3.h>

#include "storage/derive.h"
#include "storage/precision.h"
#include "storage/store-internal.h"
#include "storage/store.h"

#define T0 1699999800000LL /* ten minutes past an hour */
#define TICKS 7800         /* two hours and ten minutes at 1 s */
#define N_SERIES 12

/* Derived series first, so that their ids come before their sources'. */
enum { LOGICAL0, LOGICAL1, BUSY0, BUSY1, RX01, RX10, PHYS0, PHYS1, PHYS2, PHYS3, TX01, TX10 };
static const struct series_desc series[N_SERIES] = {
        [LOGICAL0] = { METRIC_CORE_UTILIZATION, { "0", "0" } },
        [LOGICAL1] = { METRIC_CORE_UTILIZATION, { "0", "1" } },
        [BUSY0] = { METRIC_CORE_BUSY_SECONDS, { "0", "0" } },
        [BUSY1] = { METRIC_CORE_BUSY_SECONDS, { "0", "1" } },
        [PHYS0] = { METRIC_CORE_PHYSICAL_UTILIZATION, { "0", "0", "0" } },
        [PHYS1] = { METRIC_CORE_PHYSICAL_UTILIZATION, { "0", "0", "1" } },
        [PHYS2] = { METRIC_CORE_PHYSICAL_UTILIZATION, { "0", "1", "2" } },
        [PHYS3] = { METRIC_CORE_PHYSICAL_UTILIZATION, { "0", "1", "3" } },
        /* RX01: what device 0 receives from device 1, TX10 what 1 sends to 0. */
        [RX01] = { METRIC_LINK_RX_BYTES, { "0", "1" } },
        [RX10] = { METRIC_LINK_RX_BYTES, { "1", "0" } },
        [TX01] = { METRIC_LINK_TX_BYTES, { "0", "1" } },
        [TX10] = { METRIC_LINK_TX_BYTES, { "1", "0" } },
};

/* What the store was given at each tick, as it keeps it. */
static struct {
        double v[TICKS][N_SERIES];
        uint8_t ok[TICKS][N_SERIES];
        uint64_t busy_us[2];
        double sent[2];
} truth;

static char dir[64], path[96];

static double noise(uint64_t t, uint64_t i) {
        uint64_t h = (t + 1) * 0x9e3779b97f4a7c15ULL ^ (i + 3) * 0xbf58476d1ce4e5b9ULL;
        h ^= h >> 31;
        return (double) (h % 1000003) / 1000003.0;
}

/* Tick t as the device model makes it: physical ratios, each logical one
 * their mean, each counter the sum of its logical ratio over the ticks.
 * Physical core 3 misses every eleventh tick. */
static void make_tick(int t, double *values, uint8_t *valid) {
        for (int k = 0; k < 4; k++) {
                values[PHYS0 + k] = t % 600 < 420 ? 0.85 + 0.1 * noise(t, k) : 0.08 + 0.1 * noise(t, k);
                valid[PHYS0 + k] = !(k == 3 && t % 11 == 0);
        }
        for (int c = 0; c < 2; c++) {
                double logical = values[PHYS0 + 2 * c] / 2 + values[PHYS1 + 2 * c] / 2;
                values[LOGICAL0 + c] = logical;
                truth.busy_us[c] += metric_busy_us(logical, 1000);
                values[BUSY0 + c] = (double) truth.busy_us[c] / 1e6;
                valid[LOGICAL0 + c] = valid[BUSY0 + c] = 1;
        }
        /* Each device sends in bursts; each receives what the other sends. */
        for (int d = 0; d < 2; d++) {
                truth.sent[d] += t % 600 >= 420 ? floor(4e10 * noise(t, 10 + d)) : 0;
                values[TX01 + d] = values[RX10 - d] = truth.sent[d];
                valid[TX01 + d] = valid[RX10 - d] = 1;
        }
}

static void keep(int t, const double *values, const uint8_t *valid) {
        for (int i = 0; i < N_SERIES; i++) {
                bool gauge = metric_table[series[i].metric].type == METRIC_GAUGE;
                truth.v[t][i] = gauge ? precision_round_gauge(values[i]) : values[i];
                truth.ok[t][i] = valid[i];
        }
}

static struct store *open_store(void) {
        struct store *s = NULL;
        assert_int_equal(store_open(path, &s), 0);
        assert_int_equal(store_register_series(s, series, N_SERIES), 0);
        return s;
}

static int setup(void **state) {
        (void) state;
        snprintf(dir, sizeof(dir), "/tmp/neurond-test-derived-XXXXXX");
        if (!mkdtemp(dir))
                return -1;
        snprintf(path, sizeof(path), "%s/neurond.db", dir);
        memset(&truth, 0, sizeof(truth));
        struct store *s = NULL;
        if (store_open(path, &s) < 0 || store_register_series(s, series, N_SERIES) < 0)
                return -1;
        for (int t = 0; t < TICKS; t++) {
                double values[N_SERIES];
                uint8_t valid[N_SERIES];
                make_tick(t, values, valid);
                keep(t, values, valid);
                if (store_append(s, T0 + t * 1000LL, values, valid, N_SERIES) < 0)
                        return -1;
        }
        store_close(s);
        return 0;
}

static int teardown(void **state) {
        (void) state;
        char cmd[128];
        snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
        return system(cmd) == 0 ? 0 : -1;
}

static int64_t db_int(const char *sql) {
        sqlite3 *db = NULL;
        sqlite3_stmt *st = NULL;
        int64_t v = -1;
        assert_int_equal(sqlite3_open(path, &db), SQLITE_OK);
        assert_int_equal(store_data_register(db), 0);
        assert_int_equal(sqlite3_prepare_v2(db, sql, -1, &st, NULL), SQLITE_OK);
        if (sqlite3_step(st) == SQLITE_ROW)
                v = sqlite3_column_int64(st, 0);
        sqlite3_finalize(st);
        store_data_release(db);
        sqlite3_close(db);
        return v;
}

static void db_exec(const char *sql) {
        sqlite3 *db = NULL;
        assert_int_equal(sqlite3_open(path, &db), SQLITE_OK);
        assert_int_equal(store_data_register(db), 0);
        assert_int_equal(sqlite3_exec(db, sql, NULL, NULL, NULL), SQLITE_OK);
        store_data_release(db);
        sqlite3_close(db);
}

static int series_index(const struct series_desc *d) {
        for (int i = 0; i < N_SERIES; i++) {
                bool same = d->metric == series[i].metric;
                for (int l = 0; l < METRIC_LABELS_MAX && same; l++)
                        same = strcmp(d->label_values[l], series[i].label_values[l]) == 0;
                if (same)
                        return i;
        }
        fail_msg("a series the test did not register");
        return -1;
}

/* SQL that selects series i's row of the series table. */
static void series_where(int i, char *out, size_t size) {
        const struct metric_desc *m = &metric_table[series[i].metric];
        snprintf(out, size,
                 "metric = '%s' AND json_extract(labels, '$.%s') = '%s' "
                 "AND coalesce(json_extract(labels, '$.physical_neuroncore'), '') = '%s'",
                 m->name, m->labels[1], series[i].label_values[1], series[i].label_values[2]);
}

/* Every sample of the family in ticks [first, last], one point a second,
 * is the one given, bit for bit. */
static void assert_family_reads_back(struct store *s, enum metric_id metric, int first, int last) {
        struct history_query q = { .metric = metric,
                                   .start_ms = T0 + first * 1000LL,
                                   .end_ms = T0 + last * 1000LL,
                                   .step_ms = 1000,
                                   .agg = HISTORY_AGG_LAST };
        struct history_result *r = NULL;
        assert_int_equal(store_query_range(s, &q, &r), 0);
        assert_true(r->n_series > 0);
        for (size_t k = 0; k < r->n_series; k++) {
                int i = series_index(&r->series[k].desc);
                size_t p = 0;
                for (int t = first; t <= last; t++) {
                        if (!truth.ok[t][i])
                                continue;
                        assert_true(p < r->series[k].n_points);
                        const struct history_point *got = &r->series[k].points[p++];
                        if (got->timestamp_ms != T0 + t * 1000LL || memcmp(&got->value, &truth.v[t][i], 8) != 0)
                                fail_msg("series %d tick %d: (%lld, %.17g), stored %.17g", i, t,
                                         (long long) (got->timestamp_ms - T0), got->value, truth.v[t][i]);
                }
                assert_int_equal(p, r->series[k].n_points);
        }
        history_result_free(r);
}

static void assert_every_sample_reads_back(struct store *s) {
        assert_family_reads_back(s, METRIC_CORE_PHYSICAL_UTILIZATION, 0, TICKS - 1);
        assert_family_reads_back(s, METRIC_CORE_UTILIZATION, 0, TICKS - 1);
        assert_family_reads_back(s, METRIC_CORE_BUSY_SECONDS, 0, TICKS - 1);
        assert_family_reads_back(s, METRIC_LINK_TX_BYTES, 0, TICKS - 1);
        assert_family_reads_back(s, METRIC_LINK_RX_BYTES, 0, TICKS - 1);
}

/* The first byte of series i's chunk of the hour (0x50: derived). */
static int64_t chunk_kind(int i, int64_t hour) {
        char where[256], sql[512];
        series_where(i, where, sizeof(where));
        snprintf(sql, sizeof(sql),
                 "SELECT unicode(substr(CAST(chunk_bytes(hour, at, size) AS TEXT), 1, 1)) FROM chunks "
                 "WHERE hour = %lld AND series_id = (SELECT id FROM series WHERE %s)",
                 (long long) hour, where);
        return db_int(sql);
}

#define HOUR1 (T0 - 600000)
#define HOUR2 (HOUR1 + 3600000)

static void store_compact__derived_families__coded_against_sources_and_read_back(void **state) {
        (void) state;
        /* Both whole hours are compacted; the derived series' chunks are
         * derived, but for logical core 1, whose physical core 3 misses
         * ticks: no prediction there, so an ordinary chunk. */
        for (int64_t hour = HOUR1; hour <= HOUR2; hour += 3600000) {
                assert_int_equal(chunk_kind(LOGICAL0, hour), 0x50);
                assert_int_equal(chunk_kind(BUSY0, hour), 0x50);
                assert_int_equal(chunk_kind(BUSY1, hour), 0x50);
                assert_int_equal(chunk_kind(RX01, hour), 0x50);
                assert_int_equal(chunk_kind(RX10, hour), 0x50);
                assert_int_equal(chunk_kind(TX01, hour) & 0xf0, 0x40);
                assert_int_equal(chunk_kind(LOGICAL1, hour) & 0xf0, 0x40);
                assert_int_equal(chunk_kind(PHYS0, hour) & 0xf0, 0x40);
        }
        /* A tenth of their sources' size at most (3.1 bytes a sample for the
         * physical ratios, 0.2 for the logical ones in bench/RESULTS.md). */
        int64_t physical = db_int("SELECT sum(size) FROM chunks c JOIN series s ON s.id = c.series_id "
                                  "WHERE s.metric = 'neuroncore_physical_utilization_ratio'");
        int64_t derived =
                db_int("SELECT sum(size) FROM chunks WHERE substr(chunk_bytes(hour, at, size), 1, 1) = x'50'");
        assert_true(derived * 10 < physical);

        struct store *s = open_store();
        assert_every_sample_reads_back(s);
        store_close(s);
}

static void store_cursor__derived_chunks__every_sample_once(void **state) {
        (void) state;
        int64_t ids[N_SERIES];
        for (int i = 0; i < N_SERIES; i++) {
                char where[256], sql[320];
                series_where(i, where, sizeof(where));
                snprintf(sql, sizeof(sql), "SELECT id FROM series WHERE %s", where);
                ids[i] = db_int(sql);
        }
        struct store *s = open_store();
        struct cursor_position pos = { 0, 0 };
        size_t seen = 0;
        for (int pages = 0; pages < 1000; pages++) {
                struct cursor_page page = { 0 };
                assert_int_equal(store_cursor_ops.read(s, &pos, 5000, &page), 0);
                size_t n = page.n;
                for (size_t k = 0; k < n; k++) {
                        const struct cursor_sample *c = &page.samples[k];
                        int t = (int) ((c->timestamp_ms - T0) / 1000), i = 0;
                        while (i < N_SERIES && ids[i] != c->series)
                                i++;
                        assert_true(t >= 0 && t < TICKS && i < N_SERIES && truth.ok[t][i]);
                        if (memcmp(&c->value, &truth.v[t][i], sizeof(c->value)) != 0)
                                fail_msg("series %d tick %d: %.17g, stored %.17g", i, t, c->value, truth.v[t][i]);
                        seen++;
                        pos = (struct cursor_position){ c->timestamp_ms, c->series };
                }
                cursor_page_free(&page);
                if (n == 0)
                        break;
        }
        size_t expected = 0;
        for (int t = 0; t < TICKS; t++)
                for (int i = 0; i < N_SERIES; i++)
                        expected += truth.ok[t][i];
        assert_int_equal(seen, expected);
        store_close(s);
}

static void store_query_range__source_chunk_gone__error_not_wrong_values(void **state) {
        (void) state;
        char sql[256];
        snprintf(sql, sizeof(sql),
                 "DELETE FROM chunks WHERE hour = %lld AND series_id = (SELECT id FROM series WHERE metric = "
                 "'neuroncore_physical_utilization_ratio' AND json_extract(labels, '$.physical_neuroncore') = '1')",
                 (long long) HOUR2);
        db_exec(sql);
        struct store *s = open_store();
        struct history_query q = { .metric = METRIC_CORE_UTILIZATION,
                                   .start_ms = HOUR2,
                                   .end_ms = HOUR2 + 3599999,
                                   .step_ms = 1000,
                                   .agg = HISTORY_AGG_LAST,
                                   .n_matchers = 1,
                                   .matchers = { { "neuroncore", "0" } } };
        struct history_result *r = NULL;
        assert_int_equal(store_query_range(s, &q, &r), -EBADMSG);
        /* The hour before, and the other core, are whole. */
        assert_family_reads_back(s, METRIC_CORE_BUSY_SECONDS, 0, (int) ((HOUR2 - T0) / 1000) - 1);
        q.matchers[0].value[0] = '1';
        assert_int_equal(store_query_range(s, &q, &r), 0);
        history_result_free(r);
        store_close(s);
}

/* A row of an hour's packed chunk bytes is gone: the chunks that had
 * bytes in it (and those derived from them) are errors to a query, the
 * other hour reads back. */
static void store_query_range__chunk_bytes_gone__error_not_wrong_values(void **state) {
        (void) state;
        char where[256], sql[640];
        series_where(PHYS0, where, sizeof(where));
        snprintf(sql, sizeof(sql),
                 "DELETE FROM chunk_data WHERE id = (SELECT hour / 3600000 * 1048576 + at / 4056 FROM chunks "
                 "WHERE hour = %lld AND series_id = (SELECT id FROM series WHERE %s))",
                 (long long) HOUR2, where);
        db_exec(sql);
        struct store *s = open_store();
        struct history_query q = { .metric = METRIC_CORE_PHYSICAL_UTILIZATION,
                                   .start_ms = HOUR2,
                                   .end_ms = HOUR2 + 3599999,
                                   .step_ms = 1000,
                                   .agg = HISTORY_AGG_LAST };
        struct history_result *r = NULL;
        assert_int_equal(store_query_range(s, &q, &r), -EBADMSG);
        q.metric = METRIC_CORE_UTILIZATION;
        assert_int_equal(store_query_range(s, &q, &r), -EBADMSG);
        assert_family_reads_back(s, METRIC_CORE_PHYSICAL_UTILIZATION, 0, (int) ((HOUR2 - T0) / 1000) - 1);
        assert_family_reads_back(s, METRIC_CORE_UTILIZATION, 0, (int) ((HOUR2 - T0) / 1000) - 1);
        store_close(s);
}

/* Ticks of the first hour again (the clock set back), with new physical
 * ratios and no logical ones: compacting the hour again rewrites the
 * physical cores' chunks, and the logical cores' must still read as
 * stored, not as a prediction from the new sources. */
static void store_compact__hour_again_with_new_sources__derived_series_unchanged(void **state) {
        (void) state;
        struct store *s = open_store();
        for (int t = 100; t < 160; t++) {
                double values[N_SERIES] = { 0 };
                uint8_t valid[N_SERIES] = { 0 };
                for (int k = 0; k < 4; k++) {
                        values[PHYS0 + k] = 0.5 + 0.01 * k + 0.001 * (t - 100);
                        valid[PHYS0 + k] = 1;
                        truth.v[t][PHYS0 + k] = precision_round_gauge(values[PHYS0 + k]);
                        truth.ok[t][PHYS0 + k] = 1;
                }
                assert_int_equal(store_append(s, T0 + t * 1000LL, values, valid, N_SERIES), 0);
        }
        /* Two more minutes of ticks after the last: the set-back ticks'
         * head chunk closes, and the hour is compacted again. */
        uint8_t none[N_SERIES] = { 0 };
        double zero[N_SERIES] = { 0 };
        for (int t = TICKS; t < TICKS + 120; t++)
                assert_int_equal(store_append(s, T0 + t * 1000LL, zero, none, N_SERIES), 0);
        store_close(s);
        assert_int_equal(db_int("SELECT count(*) FROM head"), 0);
        char sql[96];
        snprintf(sql, sizeof(sql), "SELECT count(*) FROM pending WHERE hour <= %lld", (long long) HOUR2);
        assert_int_equal(db_int(sql), 0);

        s = open_store();
        assert_every_sample_reads_back(s);
        store_close(s);
        /* Its logical core, which had no new samples, is an ordinary chunk
         * now; its counter is still derived from it. */
        assert_int_equal(chunk_kind(LOGICAL0, HOUR1) & 0xf0, 0x40);
        assert_int_equal(chunk_kind(BUSY0, HOUR1), 0x50);
}

/* Versions 3 and 4 kept each hourly chunk's bytes in its row: the file
 * is rewritten as version 5 and keeps every sample, derived chunks too. */
static void store_open__schema_4__chunks_packed_and_kept(void **state) {
        (void) state;
        db_exec("ALTER TABLE chunks RENAME TO chunks_5;"
                "CREATE TABLE chunks (series_id INTEGER NOT NULL, hour INTEGER NOT NULL, start_ts INTEGER NOT NULL,"
                "  end_ts INTEGER NOT NULL, count INTEGER NOT NULL, data BLOB NOT NULL, UNIQUE (series_id, hour));"
                "INSERT INTO chunks SELECT series_id, hour, start_ts, end_ts, count, chunk_bytes(hour, at, size) "
                "  FROM chunks_5;"
                "DROP TABLE chunks_5; DROP TABLE chunk_data; PRAGMA user_version = 4");
        int64_t chunks = db_int("SELECT count(*) FROM chunks");
        struct store *s = open_store();
        assert_int_equal(db_int("PRAGMA user_version"), 5);
        assert_int_equal(db_int("SELECT count(*) FROM chunks"), chunks);
        assert_int_equal(db_int("SELECT count(*) FROM sqlite_master WHERE name = 'chunks_4'"), 0);
        assert_int_equal(chunk_kind(BUSY0, HOUR2), 0x50);
        assert_every_sample_reads_back(s);
        store_close(s);
}

static void derive_encode__values_it_cannot_code__edom(void **state) {
        (void) state;
        const int64_t ts[3] = { 1000, 2000, 3000 }, id = 7;
        const double ratio[3] = { 0.5, 0.25, 0.75 };
        const struct derive_source src = { ts, ratio, 3 };
        uint8_t *data = NULL;
        size_t size = 0;
        /* A counter that is not whole microseconds. */
        const double not_us[3] = { 0.1, 0.2, 0.2000001 };
        assert_int_equal(derive_encode(DERIVE_INTEGRAL, &id, &src, 1, ts, not_us, 3, &data, &size), -EDOM);
        /* A mean far from its sources' (residual beyond 2^53). */
        const double far[3] = { 0.5, 1e300, 0.75 };
        assert_int_equal(derive_encode(DERIVE_MEAN, &id, &src, 1, ts, far, 3, &data, &size), -EDOM);
        /* An integral needs one source; none is no rule. */
        assert_int_equal(derive_encode(DERIVE_INTEGRAL, (int64_t[]){ 1, 2 }, (struct derive_source[]){ src, src }, 2,
                                       ts, ratio, 3, &data, &size),
                         -EINVAL);
        assert_int_equal(derive_encode(DERIVE_MEAN, &id, &src, 0, ts, ratio, 3, &data, &size), -EINVAL);
}

static void derive_decode__damaged__ebadmsg(void **state) {
        (void) state;
        const int64_t ts[4] = { 1000, 2000, 3000, 4000 }, ids[2] = { 7, 300 };
        const double a[4] = { 0.5, 0.25, NAN, 0.75 }, b[4] = { 0.5, 0.75, 0.5, 0.25 };
        const struct derive_source src[2] = { { ts, a, 4 }, { ts, b, 4 } };
        double mean[4];
        for (int i = 0; i < 4; i++)
                mean[i] = precision_round_gauge(a[i] / 2 + b[i] / 2);
        mean[1] = 0.5000001; /* not the mean: a residual to keep */
        uint8_t *data = NULL;
        size_t size = 0;
        assert_int_equal(derive_encode(DERIVE_MEAN, ids, src, 2, ts, mean, 4, &data, &size), 0);

        struct derive_header h;
        int64_t got_ts[4];
        double got[4];
        assert_int_equal(derive_header_read(data, size, &h), 0);
        assert_int_equal(h.n_sources, 2);
        assert_int_equal(h.sources[1], 300);
        assert_int_equal(derive_decode(&h, data, size, src, got_ts, got), 4);
        assert_memory_equal(got, mean, sizeof(mean));

        /* Cut anywhere, or with an unknown rule or too many sources: refused. */
        for (size_t cut = 0; cut < size; cut++)
                assert_true(derive_header_read(data, cut, &h) < 0 || derive_count(&h, data, cut) < 0 ||
                            derive_decode(&h, data, cut, src, got_ts, got) < 0);
        uint8_t bad[64];
        memcpy(bad, data, size < sizeof(bad) ? size : sizeof(bad));
        bad[1] = 9;
        assert_int_equal(derive_header_read(bad, size, &h), -EBADMSG);
        bad[1] = DERIVE_INTEGRAL; /* with two sources */
        assert_int_equal(derive_header_read(bad, size, &h), -EBADMSG);
        bad[1] = DERIVE_MEAN;
        bad[2] = DERIVE_SOURCES_MAX + 1;
        assert_int_equal(derive_header_read(bad, size, &h), -EBADMSG);
        free(data);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test_setup_teardown(store_compact__derived_families__coded_against_sources_and_read_back,
                                                setup, teardown),
                cmocka_unit_test_setup_teardown(store_cursor__derived_chunks__every_sample_once, setup, teardown),
                cmocka_unit_test_setup_teardown(store_query_range__source_chunk_gone__error_not_wrong_values, setup,
                                                teardown),
                cmocka_unit_test_setup_teardown(store_query_range__chunk_bytes_gone__error_not_wrong_values, setup,
                                                teardown),
                cmocka_unit_test_setup_teardown(store_compact__hour_again_with_new_sources__derived_series_unchanged,
                                                setup, teardown),
                cmocka_unit_test_setup_teardown(store_open__schema_4__chunks_packed_and_kept, setup, teardown),
                cmocka_unit_test(derive_encode__values_it_cannot_code__edom),
                cmocka_unit_test(derive_decode__damaged__ebadmsg),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
