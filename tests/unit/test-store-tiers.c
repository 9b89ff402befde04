#include "config.h"

#include <errno.h>
#include <glob.h>
#include <math.h>
#include <setjmp.h>
#include <sqlite3.h>
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

#include "storage/store.h"
#include "tests/unit/assert-double.h"
#include "web/api.h"

#define N_SERIES 4
#define T0 1700000012345LL /* not on a minute: buckets must still align */

static char dir[64];

static const struct series_desc series[N_SERIES] = {
        { METRIC_CORE_UTILIZATION, { "0", "0" } },
        { METRIC_CORE_UTILIZATION, { "0", "1" } },
        { METRIC_DEVICE_DMA_BYTES, { "0", "read" } },
        { METRIC_DEVICE_MEMORY_USED, { "0" } },
};

/* The test's own copy of everything appended, for naive answers. */
struct truth {
        size_t n;
        int64_t ts[20000];
        double v[20000][N_SERIES];
        uint8_t ok[20000][N_SERIES];
};
static struct truth truth;

static double value_at(size_t i, uint64_t t, uint8_t *valid) {
        uint64_t h = (t + 1) * 0x9e3779b97f4a7c15ULL ^ (i + 7) * 0xbf58476d1ce4e5b9ULL;
        h ^= h >> 29;
        *valid = !(i == 1 && h % 13 == 0); /* series 1 misses some ticks */
        switch (i) {
        case 0:
        case 1:
                return (double) (h % 1000003) / 1000003.0;
        case 2: /* a counter reset every 500 ticks */
                return (double) ((t % 500) * 1000 + h % 777);
        default:
                return (double) (1000000 + 4096 * ((t / 90) % 7));
        }
}

/* What the store promises to keep of a value: gauges that are not whole
 * numbers to 24 significant bits, ties to even; everything else exactly. */
static double kept(size_t i, double v) {
        int exponent;
        if (metric_table[series[i].metric].type != METRIC_GAUGE || !isfinite(v) || v == floor(v))
                return v;
        /* A decimal of at most 6 places stays as it is. */
        if (fabs(v * 1e6) < 9007199254740992.0 && (double) llround(v * 1e6) / 1e6 == v)
                return v;
        double mantissa = frexp(v, &exponent); /* 0.5 <= |mantissa| < 1 */
        return ldexp(nearbyint(ldexp(mantissa, 24)), exponent - 24);
}

/* Appends the next tick and records in the truth what the store keeps. */
static int append_tick(struct store *s, int64_t interval_ms) {
        size_t t = truth.n++;
        double appended[N_SERIES];
        assert_true(t < 20000);
        truth.ts[t] = t == 0 ? T0 : truth.ts[t - 1] + interval_ms;
        for (size_t i = 0; i < N_SERIES; i++) {
                appended[i] = value_at(i, t, &truth.ok[t][i]);
                truth.v[t][i] = kept(i, appended[i]);
        }
        return store_append(s, truth.ts[t], appended, truth.ok[t], N_SERIES);
}

static void append_ticks(struct store *s, size_t count, int64_t interval_ms) {
        for (size_t k = 0; k < count; k++)
                assert_int_equal(append_tick(s, interval_ms), 0);
}

static void path_of(char *out, size_t size, const char *name) {
        snprintf(out, size, "%s/%s", dir, name);
}

/* 8 KiB that are no database, as name; its path in out. */
static void write_junk(const char *name, char *out, size_t size) {
        path_of(out, size, name);
        FILE *f = fopen(out, "wb");
        assert_non_null(f);
        for (int i = 0; i < 8192; i++)
                fputc(i * 7 % 251, f);
        fclose(f);
}

/* The monotonic clock the store reads for its stop's compaction deadline
 * (linked with -Wl,--wrap=clock_monotonic_ms): the real one, unless a test
 * sets fake_clock_step_ms; then each read moves it on by that much, as if
 * each slice of compaction between two reads took that long. */
int64_t __real_clock_monotonic_ms(void);
int64_t __wrap_clock_monotonic_ms(void);
static int64_t fake_clock_ms, fake_clock_step_ms;
static unsigned fake_clock_reads;

int64_t __wrap_clock_monotonic_ms(void) {
        if (fake_clock_step_ms == 0)
                return __real_clock_monotonic_ms();
        fake_clock_reads++;
        fake_clock_ms += fake_clock_step_ms;
        return fake_clock_ms;
}

static struct store *open_store(const char *name, const struct store_options *o) {
        char path[128];
        struct store *s = NULL;
        struct store_options def;
        store_options_init(&def);
        path_of(path, sizeof(path), name);
        assert_int_equal(store_open_with(path, o ? o : &def, &s), 0);
        assert_int_equal(store_register_series(s, series, N_SERIES), 0);
        return s;
}

static int setup(void **state) {
        (void) state;
        snprintf(dir, sizeof(dir), "/tmp/test-store-XXXXXX");
        assert_non_null(mkdtemp(dir));
        truth.n = 0;
        fake_clock_step_ms = 0; /* the real clock, even after a test that failed with the fake one */
        return 0;
}

static int teardown(void **state) {
        (void) state;
        char cmd[128];
        snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
        assert_int_equal(system(cmd), 0);
        return 0;
}

/* The naive answer: every bucket's aggregate over the truth. */
static void check_query(struct store *s, size_t i, int64_t start, int64_t end, int64_t step, enum history_agg agg,
                        bool rate) {
        struct history_query q = {
                .metric = series[i].metric,
                .start_ms = start,
                .end_ms = end,
                .step_ms = step,
                .agg = agg,
                .rate = rate,
        };
        const struct metric_desc *m = &metric_table[series[i].metric];
        for (size_t l = 0; l < metric_label_count(m); l++) {
                snprintf(q.matchers[l].name, sizeof(q.matchers[l].name), "%s", m->labels[l]);
                snprintf(q.matchers[l].value, sizeof(q.matchers[l].value), "%s", series[i].label_values[l]);
        }
        q.n_matchers = metric_label_count(m);
        struct history_result *res = NULL;
        assert_int_equal(store_query_range(s, &q, &res), 0);
        /* A series with no point in the window is left out: then the
         * naive answer must have none either. */
        assert_true(res->n_series <= 1);
        const struct history_series none = { 0 }, *sr = res->n_series ? &res->series[0] : &none;
        if (res->n_series)
                assert_string_equal(sr->desc.label_values[0], series[i].label_values[0]);

        /* The tier the store picks for this step (every query here is
         * within every retention): on the rollup tiers a sample counts as
         * of its period's start, the period being counted whole or not at
         * all. Rates are asked of raw samples only: those of the step
         * before start give the first one its rate. */
        int64_t period = step % 3600000 == 0 ? 3600000 : step % 60000 == 0 ? 60000 : 1;
        int64_t first = start - start % step;
        assert_true(!rate || period == 1);
        size_t p = 0;
        for (int64_t b = first; b <= end; b += step) {
                double mn = INFINITY, mx = -INFINITY, sum = 0, last = 0, prev = NAN;
                int64_t prev_ts = 0;
                size_t count = 0;
                for (size_t t = 0; t < truth.n; t++) {
                        if (!truth.ok[t][i] || (rate && truth.ts[t] < start - step))
                                continue;
                        double v = truth.v[t][i];
                        if (rate) {
                                double r = v >= prev ? v - prev : v;
                                bool have = !isnan(prev);
                                r /= (double) (truth.ts[t] - prev_ts) / 1000.0;
                                prev = v;
                                prev_ts = truth.ts[t];
                                if (!have)
                                        continue;
                                v = r;
                        }
                        int64_t key = truth.ts[t] - truth.ts[t] % period;
                        if (key < start || key > end || key < b || key >= b + step)
                                continue;
                        mn = fmin(mn, v);
                        mx = fmax(mx, v);
                        sum += v;
                        last = v;
                        count++;
                }
                if (count == 0)
                        continue;
                double want = agg == HISTORY_AGG_MIN    ? mn
                              : agg == HISTORY_AGG_MAX  ? mx
                              : agg == HISTORY_AGG_SUM  ? sum
                              : agg == HISTORY_AGG_LAST ? last
                                                        : sum / (double) count;
                assert_true(p < sr->n_points);
                assert_int_equal(sr->points[p].timestamp_ms, b);
                /* Rollup tiers keep sums of fractional gauges as they keep
                 * samples: to 24 significant bits. */
                bool rounded = step % 60000 == 0 && kept(i, 0.1 + 1.0 / 3) != 0.1 + 1.0 / 3 && !rate &&
                               (agg == HISTORY_AGG_AVG || agg == HISTORY_AGG_SUM);
                assert_double_near(sr->points[p].value, want, (rounded ? 1.2e-7 : 1e-9) * fmax(1, fabs(want)));
                p++;
        }
        assert_int_equal(p, sr->n_points);
        history_result_free(res);
}

/* Every series holds every tick appended so far, at 1 s steps. */
static void check_every_tick(struct store *s) {
        for (size_t i = 0; i < N_SERIES; i++)
                check_query(s, i, T0, truth.ts[truth.n - 1], 1000, HISTORY_AGG_LAST, false);
}

static void store_query_range__raw_tier__matches_naive(void **state) {
        (void) state;
        struct store *s = open_store("raw.db", NULL);
        append_ticks(s, 1500, 1000); /* 25 min: closed chunks and an open one */
        for (size_t i = 0; i < N_SERIES; i++)
                for (int agg = HISTORY_AGG_AVG; agg <= HISTORY_AGG_SUM; agg++) {
                        check_query(s, i, T0, truth.ts[truth.n - 1], 7000, (enum history_agg) agg, false);
                        check_query(s, i, T0 + 333333, T0 + 1222222, 1000, (enum history_agg) agg, false);
                }
        check_query(s, 2, T0, truth.ts[truth.n - 1], 1000, HISTORY_AGG_AVG, true);
        check_query(s, 2, T0, truth.ts[truth.n - 1], 13000, HISTORY_AGG_MAX, true);
        store_close(s);
}

static void store_query_range__minute_tier__matches_naive(void **state) {
        (void) state;
        struct store *s = open_store("minute.db", NULL);
        append_ticks(s, 3000, 1000);
        /* Rollups hold complete minutes: query up to the last one. */
        int64_t end = truth.ts[truth.n - 1];
        end = end - end % 60000 - 1;
        for (size_t i = 0; i < N_SERIES; i++)
                for (int agg = HISTORY_AGG_AVG; agg <= HISTORY_AGG_SUM; agg++)
                        check_query(s, i, T0 - T0 % 120000, end, 120000, (enum history_agg) agg, false);
        /* From T0, 12.345 s into its minute: that minute is left out. */
        for (size_t i = 0; i < N_SERIES; i++)
                check_query(s, i, T0, end, 120000, HISTORY_AGG_SUM, false);
        store_close(s);
}

static void store_query_range__hour_tier__matches_naive(void **state) {
        (void) state;
        struct store *s = open_store("hour.db", NULL);
        append_ticks(s, 15000, 2000); /* over 8 hours */
        int64_t end = truth.ts[truth.n - 1];
        end = end - end % 60000 - 1;
        for (size_t i = 0; i < N_SERIES; i++)
                for (int agg = HISTORY_AGG_AVG; agg <= HISTORY_AGG_SUM; agg++)
                        check_query(s, i, T0 - T0 % 3600000, end, 3600000, (enum history_agg) agg, false);
        /* From T0, inside its hour: that hour is left out. */
        for (size_t i = 0; i < N_SERIES; i++)
                check_query(s, i, T0, end, 3600000, HISTORY_AGG_SUM, false);
        store_close(s);
        /* After a clean stop the partial minute is in the rollups too. */
        s = open_store("hour.db", NULL);
        check_query(s, 3, T0 - T0 % 3600000, truth.ts[truth.n - 1], 3600000, HISTORY_AGG_SUM, false);
        check_query(s, 0, T0, truth.ts[truth.n - 1], 7000, HISTORY_AGG_LAST, false);
        store_close(s);
}

static void copy_file(const char *from, const char *to) {
        FILE *in = fopen(from, "rb"), *out = fopen(to, "wb");
        char buf[65536];
        size_t n;
        assert_non_null(out);
        if (!in) { /* no -wal or -shm file is fine */
                fclose(out);
                unlink(to);
                return;
        }
        while ((n = fread(buf, 1, sizeof(buf), in)) > 0)
                assert_int_equal(fwrite(buf, 1, n, out), n);
        fclose(in);
        fclose(out);
}

/* The files as a crash would leave them: copied while the store is open. */
static void snapshot_files(const char *from, const char *to) {
        static const char *const suffix[] = { "", "-wal" };
        for (size_t i = 0; i < 2; i++) {
                char a[160], b[160];
                snprintf(a, sizeof(a), "%s/%s%s", dir, from, suffix[i]);
                snprintf(b, sizeof(b), "%s/%s%s", dir, to, suffix[i]);
                copy_file(a, b);
        }
}

static void store_open__after_crash__keeps_every_tick(void **state) {
        (void) state;
        struct store *s = open_store("live.db", NULL);
        append_ticks(s, 437, 1000); /* mid-minute, mid-chunk */
        snapshot_files("live.db", "crashed.db");
        store_close(s);

        s = open_store("crashed.db", NULL);
        for (size_t i = 0; i < N_SERIES; i++) {
                check_query(s, i, T0, truth.ts[truth.n - 1], 1000, HISTORY_AGG_LAST, false);
                check_query(s, i, T0 - T0 % 60000, truth.ts[truth.n - 1], 60000, HISTORY_AGG_SUM, false);
        }
        /* Carry on in the same minute: the split minute adds up. */
        append_ticks(s, 500, 1000);
        store_close(s);
        s = open_store("crashed.db", NULL);
        for (size_t i = 0; i < N_SERIES; i++) {
                check_query(s, i, T0 - T0 % 60000, truth.ts[truth.n - 1], 60000, HISTORY_AGG_AVG, false);
                check_query(s, i, T0 - T0 % 60000, truth.ts[truth.n - 1], 60000, HISTORY_AGG_MIN, false);
                check_query(s, i, T0 - T0 % 3600000, truth.ts[truth.n - 1], 3600000, HISTORY_AGG_SUM, false);
                check_query(s, i, T0, truth.ts[truth.n - 1], 5000, HISTORY_AGG_MAX, false);
        }
        store_close(s);
}

static int64_t db_int(const char *name, const char *sql) {
        char path[128];
        sqlite3 *db = NULL;
        sqlite3_stmt *st = NULL;
        path_of(path, sizeof(path), name);
        assert_int_equal(sqlite3_open(path, &db), SQLITE_OK);
        assert_int_equal(sqlite3_prepare_v2(db, sql, -1, &st, NULL), SQLITE_OK);
        assert_int_equal(sqlite3_step(st), SQLITE_ROW);
        int64_t v = sqlite3_column_int64(st, 0);
        sqlite3_finalize(st);
        sqlite3_close(db);
        return v;
}

static void store_append__old_data__removed_by_age(void **state) {
        (void) state;
        struct store_options o;
        store_options_init(&o);
        o.raw_retention_ms = 20 * 60000;
        o.minute_retention_ms = 2 * 3600000;
        o.hour_retention_ms = 4 * 3600000;
        struct store *s = open_store("age.db", &o);
        append_ticks(s, 12000, 2000); /* 6.7 hours */
        int64_t newest = truth.ts[truth.n - 1];
        store_close(s);
        /* Retention runs once per chunk span and deletes whole hours:
         * allow both of slack. */
        int64_t slack = o.chunk_ms + 3600000;
        assert_true(db_int("age.db", "SELECT min(hour) FROM chunks") >= newest - o.raw_retention_ms - slack);
        assert_true(db_int("age.db", "SELECT min(hour) FROM rollup_1m") >= newest - o.minute_retention_ms - slack);
        assert_true(db_int("age.db", "SELECT min(ts) FROM rollup_1h") >=
                    newest - o.hour_retention_ms - slack - 3600000);
        assert_true(db_int("age.db", "SELECT min(ts) FROM rollup_1h") < newest - 3 * 3600000);
        assert_int_equal(db_int("age.db", "SELECT count(*) FROM recent"), 0);
        /* The chunks' bytes went with them. */
        assert_true(db_int("age.db", "SELECT count(*) FROM chunk_data") > 0);
        assert_int_equal(db_int("age.db", "SELECT count(*) FROM chunk_data WHERE id / 1048576 * 3600000 < "
                                          "(SELECT min(hour) FROM chunks)"),
                         0);
        /* A clean stop compacts everything. */
        assert_int_equal(db_int("age.db", "SELECT count(*) FROM head"), 0);
        assert_int_equal(db_int("age.db", "SELECT count(*) FROM pending"), 0);
}

/* Samples appended and kept (valid), all series. */
static int64_t truth_samples(void) {
        int64_t n = 0;
        for (size_t t = 0; t < truth.n; t++)
                for (size_t i = 0; i < N_SERIES; i++)
                        n += truth.ok[t][i];
        return n;
}

/* What a stop that left hours pending leaves behind: no ticks outside
 * chunks, head chunks only in pending hours, each compacted series' hour
 * rolled up from exactly its chunk, and every sample appended in the raw
 * tier once. */
static void check_stopped_file(const char *name) {
        assert_int_equal(db_int(name, "SELECT count(*) FROM recent"), 0);
        assert_int_equal(db_int(name, "SELECT count(*) FROM head WHERE start_ts / 3600000 * 3600000 "
                                      "NOT IN (SELECT hour FROM pending)"),
                         0);
        assert_int_equal(db_int(name, "SELECT count(*) FROM (SELECT series_id, b FROM ("
                                      "  SELECT series_id, hour AS b, count AS raw, 0 AS m, 0 AS h FROM chunks"
                                      "  UNION ALL SELECT series_id, hour, 0, count, 0 FROM rollup_1m"
                                      "  UNION ALL SELECT series_id, ts, 0, 0, count FROM rollup_1h)"
                                      " GROUP BY 1, 2 HAVING sum(raw) != sum(m) OR sum(raw) != sum(h))"),
                         0);
        assert_int_equal(db_int(name, "SELECT (SELECT coalesce(sum(count), 0) FROM chunks) + "
                                      "(SELECT coalesce(sum(count), 0) FROM head)"),
                         truth_samples());
}

/* A stop with a backlog: hours end faster than the slice a tick compacts
 * (a tick an hour; a slice takes two of the four series' hours here, as
 * the daemon's takes about 3,000 of a large host's 8,400), so hours pile
 * up pending. The stop compacts only while STORE_CLOSE_COMPACT_MS of the
 * monotonic clock last, here a second a slice, whatever is left: the rest
 * stays pending, the file consistent, and the next start compacts it, every
 * tier then answering as the truth. */
static void store_close__backlog__compacts_until_its_deadline(void **state) {
        (void) state;
        struct store_options o;
        store_options_init(&o);
        o.compact_slice = 100;
        struct store *s = open_store("backlog.db", &o);
        append_ticks(s, 40, 3600000);
        int64_t before = db_int("backlog.db", "SELECT count(*) FROM pending");
        assert_true(before >= 15);

        fake_clock_ms = 0;
        fake_clock_reads = 0;
        fake_clock_step_ms = 1000;
        store_close(s);
        fake_clock_step_ms = 0;
        int64_t after = db_int("backlog.db", "SELECT count(*) FROM pending");
        /* It compacted while its time lasted, and no slice began after: a
         * read for the deadline, one before each slice, one that ends. */
        assert_true(after < before);
        assert_true(fake_clock_reads <= STORE_CLOSE_COMPACT_MS / 1000 + 1);
        /* The deadline, not the work, ended it. */
        assert_true(after > 0);
        check_stopped_file("backlog.db");

        /* The next start, with the daemon's slice, compacts the backlog in
         * its first tick's slice, and its stop the rest. */
        s = open_store("backlog.db", NULL);
        append_ticks(s, 1, 60000);
        assert_int_equal(db_int("backlog.db", "SELECT count(*) FROM pending"), 1);
        store_close(s);
        assert_int_equal(db_int("backlog.db", "SELECT count(*) FROM pending"), 0);
        check_stopped_file("backlog.db");
        s = open_store("backlog.db", NULL);
        int64_t end = truth.ts[truth.n - 1];
        for (size_t i = 0; i < N_SERIES; i++) {
                check_query(s, i, T0, end, 3600000, HISTORY_AGG_SUM, false);
                check_query(s, i, T0, end, 60000, HISTORY_AGG_AVG, false);
                check_query(s, i, T0, end, 7000, HISTORY_AGG_LAST, false);
        }
        store_close(s);
}

static void store_append__size_cap__holds_and_reuses_space(void **state) {
        (void) state;
        struct store_options o;
        store_options_init(&o);
        o.size_cap_bytes = 160 * 1024;
        struct store *s = open_store("cap.db", &o);
        append_ticks(s, 19000, 1000);
        store_close(s);
        /* Five hours of these series need more than the cap. */
        int64_t used = db_int("cap.db", "SELECT (SELECT page_count FROM pragma_page_count) - "
                                        "(SELECT freelist_count FROM pragma_freelist_count)") *
                       db_int("cap.db", "PRAGMA page_size");
        /* The cap holds within a chunk span's worth of new data. */
        assert_true(used <= (int64_t) o.size_cap_bytes * 105 / 100);
        char path[128];
        struct stat st;
        path_of(path, sizeof(path), "cap.db");
        assert_int_equal(stat(path, &st), 0);
        assert_true(st.st_size <= (off_t) o.size_cap_bytes * 115 / 100);
        /* The newest data survives; old data went. */
        assert_true(db_int("cap.db", "SELECT max(hour) FROM chunks") >= truth.ts[truth.n - 1] - 3600000);
        assert_true(db_int("cap.db", "SELECT min(hour) FROM chunks") > T0);
        assert_int_equal(db_int("cap.db", "SELECT count(*) FROM chunk_data WHERE id / 1048576 * 3600000 < "
                                          "(SELECT min(hour) FROM chunks)"),
                         0);
        assert_int_equal(db_int("cap.db", "PRAGMA auto_vacuum"), 2);
}

static void exec_sql(const char *name, const char *sql) {
        char path[128];
        sqlite3 *db = NULL;
        path_of(path, sizeof(path), name);
        assert_int_equal(sqlite3_open(path, &db), SQLITE_OK);
        assert_int_equal(sqlite3_exec(db, sql, NULL, NULL, NULL), SQLITE_OK);
        sqlite3_close(db);
}

static void store_open__schema_1__migrated(void **state) {
        (void) state;
        exec_sql("v1.db", "CREATE TABLE series (id INTEGER PRIMARY KEY, metric TEXT NOT NULL, labels TEXT NOT NULL,"
                          " UNIQUE (metric, labels));"
                          "CREATE TABLE samples (series_id INTEGER NOT NULL REFERENCES series(id), ts INTEGER NOT NULL,"
                          " value REAL NOT NULL, PRIMARY KEY (series_id, ts)) WITHOUT ROWID;"
                          "PRAGMA user_version = 1;");
        /* Fill it as the foundation's store did: one row per sample. */
        char sql[256];
        snprintf(sql, sizeof(sql),
                 "INSERT INTO series(id, metric, labels) VALUES (7, 'neuroncore_utilization_ratio', "
                 "json_object('neuron_device', '0', 'neuroncore', '0'))");
        exec_sql("v1.db", sql);
        char path[128];
        sqlite3 *db = NULL;
        sqlite3_stmt *ins = NULL;
        path_of(path, sizeof(path), "v1.db");
        assert_int_equal(sqlite3_open(path, &db), SQLITE_OK);
        sqlite3_exec(db, "BEGIN", NULL, NULL, NULL);
        assert_int_equal(sqlite3_prepare_v2(db, "INSERT INTO samples VALUES (7, ?1, ?2)", -1, &ins, NULL), SQLITE_OK);
        for (size_t t = 0; t < 1000; t++) {
                truth.ts[t] = T0 + 1000 * (int64_t) t;
                truth.v[t][0] = value_at(0, t, &truth.ok[t][0]);
                sqlite3_bind_int64(ins, 1, truth.ts[t]);
                sqlite3_bind_double(ins, 2, truth.v[t][0]);
                assert_int_equal(sqlite3_step(ins), SQLITE_DONE);
                sqlite3_reset(ins);
        }
        truth.n = 1000;
        sqlite3_finalize(ins);
        sqlite3_exec(db, "COMMIT", NULL, NULL, NULL);
        sqlite3_close(db);
        assert_string_equal(metric_table[METRIC_CORE_UTILIZATION].name, "neuroncore_utilization_ratio");

        struct store *s = NULL;
        assert_int_equal(store_open(path, &s), 0);
        check_query(s, 0, T0, truth.ts[999], 1000, HISTORY_AGG_LAST, false);
        check_query(s, 0, T0 - T0 % 60000, truth.ts[999], 60000, HISTORY_AGG_AVG, false);
        store_close(s);
        assert_int_equal(db_int("v1.db", "PRAGMA user_version"), STORE_SCHEMA_VERSION);
        assert_int_equal(db_int("v1.db", "SELECT count(*) FROM sqlite_master WHERE name = 'samples'"), 0);
        assert_int_equal(db_int("v1.db", "PRAGMA auto_vacuum"), 2);
}

/* A schema 2 file (tests/data/store-v2.sql, written by the schema 2 store
 * and copied while it was open) keeps every sample and every rollup: its
 * 5-minute chunks become hourly ones, its minute rollup rows chunks, and
 * the hour not yet rolled up is rolled up again from its raw samples. */
static void store_open__schema_2__migrated(void **state) {
        (void) state;
        char path[128], fixture[512], *sql = NULL;
        const char *top = getenv("top_srcdir");
        struct store *s = NULL;
        snprintf(fixture, sizeof(fixture), "%s/tests/data/store-v2.sql", top ? top : ".");
        FILE *f = fopen(fixture, "rb");
        assert_non_null(f);
        sql = calloc(1, 1 << 20);
        assert_non_null(sql);
        assert_true(fread(sql, 1, (1 << 20) - 1, f) > 0);
        fclose(f);
        exec_sql("v2.db", sql);
        free(sql);
        assert_int_equal(db_int("v2.db", "PRAGMA user_version"), 2);
        for (size_t t = 0; t < 460; t++) {
                truth.ts[t] = T0 + 10000 * (int64_t) t;
                for (size_t i = 0; i < N_SERIES; i++)
                        truth.v[t][i] = kept(i, value_at(i, t, &truth.ok[t][i]));
        }
        truth.n = 460;
        int64_t end = truth.ts[459];

        for (int pass = 0; pass < 2; pass++) {
                path_of(path, sizeof(path), "v2.db");
                assert_int_equal(store_open(path, &s), 0);
                for (size_t i = 0; i < N_SERIES; i++) {
                        check_query(s, i, T0, end, 10000, HISTORY_AGG_LAST, false);
                        check_query(s, i, T0 - T0 % 60000, end, 60000, HISTORY_AGG_AVG, false);
                        check_query(s, i, T0 - T0 % 120000, end, 120000, HISTORY_AGG_MAX, false);
                        check_query(s, i, T0 - T0 % 3600000, end, 3600000, HISTORY_AGG_SUM, false);
                        check_query(s, i, T0 - T0 % 3600000, end, 3600000, HISTORY_AGG_MIN, false);
                }
                check_query(s, 2, T0, end, 10000, HISTORY_AGG_AVG, true);
                /* The second pass reads what compaction made at the close. */
                store_close(s);
        }
        assert_int_equal(db_int("v2.db", "PRAGMA user_version"), STORE_SCHEMA_VERSION);
        assert_int_equal(db_int("v2.db", "SELECT count(*) FROM sqlite_master WHERE name LIKE '%_2'"), 0);
        assert_int_equal(db_int("v2.db", "SELECT count(*) FROM meta WHERE key = 'rolled_ms'"), 0);
        assert_int_equal(db_int("v2.db", "SELECT count(*) FROM chunks"), 2 * N_SERIES);
        assert_int_equal(db_int("v2.db", "SELECT count(*) FROM pending"), 0);
}

static void store_open__newer_or_damaged__refused(void **state) {
        (void) state;
        char path[128];
        struct store *s = NULL;
        exec_sql("v9.db", "CREATE TABLE x (a); PRAGMA user_version = 9;");
        path_of(path, sizeof(path), "v9.db");
        assert_int_equal(store_open(path, &s), -EPROTONOSUPPORT);
        assert_int_equal(db_int("v9.db", "PRAGMA user_version"), 9);

        write_junk("junk.db", path, sizeof(path));
        assert_int_equal(store_open(path, &s), -EUCLEAN);

        /* A real database with a page overwritten. */
        s = open_store("torn.db", NULL);
        append_ticks(s, 700, 1000);
        store_close(s);
        path_of(path, sizeof(path), "torn.db");
        FILE *f = fopen(path, "r+b");
        assert_non_null(f);
        fseek(f, 0, SEEK_END);
        long size = ftell(f);
        fseek(f, 4096, SEEK_SET);
        for (long i = 4096; i < size - 4096; i++)
                fputc(0xA5, f);
        fclose(f);
        assert_int_equal(store_open(path, &s), -EUCLEAN);
}

static void store_append__disk_full__degrades_then_resumes(void **state) {
        (void) state;
        struct store *s = open_store("full.db", NULL);
        struct history_stats st;
        append_ticks(s, 100, 1000);
        int64_t pages = db_int("full.db", "PRAGMA page_count");
        assert_int_equal(store_set_page_limit(s, pages), 0);
        /* The file fills once its pages do: at the latest when the first
         * hour's chunks are written. */
        int failures = 0, first = -1, resumed_at = -1;
        for (int k = 0; k < 15000 && (first < 0 || k < first + 370); k++) {
                if (first >= 0 && k == first + 300) {
                        store_get_stats(s, &st);
                        assert_true(st.degraded);
                        assert_int_equal(st.last_error, -ENOSPC);
                        /* Retries back off: far fewer attempts than ticks. */
                        assert_true(st.write_errors < 40);
                        assert_int_equal(store_set_page_limit(s, 0), 0);
                }
                int r = append_tick(s, 1000);
                assert_true(r == 0 || r == -ENOSPC);
                failures += r < 0;
                if (r < 0 && first < 0)
                        first = k;
                if (r == 0 && first >= 0 && k >= first + 300 && resumed_at < 0)
                        resumed_at = k;
                if (resumed_at >= 0)
                        assert_int_equal(r, 0);
        }
        assert_true(first >= 0 && failures > 0);
        /* Within the longest back-off, with nothing lost. */
        assert_true(resumed_at >= first + 300 && resumed_at <= first + 365);
        store_get_stats(s, &st);
        assert_int_equal(st.ticks_dropped, 0);
        assert_false(st.degraded);
        check_every_tick(s);
        store_close(s);
}

static unsigned healthz(struct store *s, char *body, size_t size) {
        struct snapshot_slot slot;
        struct web_context ctx = {
                .latest = &slot, .interval_ms = 1000, .time_scale = 1, .history = { &store_history_ops, s }
        };
        struct web_reply reply = { 0 };
        struct timespec now;
        clock_gettime(CLOCK_MONOTONIC, &now);
        snapshot_slot_init(&slot);
        struct snapshot *snap = snapshot_new(0);
        snap->tick = 1;
        snap->monotonic_ms = (int64_t) now.tv_sec * 1000 + now.tv_nsec / 1000000;
        snapshot_slot_publish(&slot, snap);
        api_healthz(&ctx, &(struct web_request){ .method = "GET", .path = "/healthz" }, &reply);
        snprintf(body, size, "%.*s", (int) reply.body.len, reply.body.data);
        buf_free(&reply.body);
        snapshot_slot_destroy(&slot);
        return reply.status;
}

static void healthz__store_cannot_write__degraded_then_ok(void **state) {
        (void) state;
        char body[512];
        struct store *s = open_store("health.db", NULL);
        append_ticks(s, 10, 1000);
        assert_int_equal(healthz(s, body, sizeof(body)), 200);
        assert_non_null(strstr(body, "\"status\":\"ok\""));
        assert_int_equal(store_set_page_limit(s, 1), 0);
        /* The last page fills up, at the latest with the first hour's chunks. */
        int r = 0;
        for (int k = 0; k < 15000 && r == 0; k++) {
                size_t t = truth.n++;
                truth.ts[t] = truth.ts[t - 1] + 1000;
                for (size_t i = 0; i < N_SERIES; i++)
                        truth.v[t][i] = value_at(i, t, &truth.ok[t][i]);
                r = store_append(s, truth.ts[t], truth.v[t], truth.ok[t], N_SERIES);
        }
        assert_int_equal(r, -ENOSPC);
        /* Still serving: 200, but degraded, with the reason. */
        assert_int_equal(healthz(s, body, sizeof(body)), 200);
        assert_non_null(strstr(body, "\"status\":\"degraded\""));
        assert_non_null(strstr(body, "No space left on device"));
        assert_int_equal(store_set_page_limit(s, 0), 0);
        append_ticks(s, 1, 1000); /* the first retry comes one tick later */
        assert_int_equal(healthz(s, body, sizeof(body)), 200);
        assert_non_null(strstr(body, "\"status\":\"ok\""));
        store_close(s);
}

static void store_list_series__lists_registered(void **state) {
        (void) state;
        struct store *s = open_store("list.db", NULL);
        struct series_desc *list = NULL;
        size_t n = 0;
        assert_int_equal(store_list_series(s, -1, NULL, 0, &list, &n), 0);
        assert_int_equal(n, N_SERIES);
        assert_int_equal(list[2].metric, METRIC_DEVICE_DMA_BYTES);
        assert_string_equal(list[2].label_values[1], "read");
        free(list);
        struct history_matcher m = { "neuroncore", "1" };
        assert_int_equal(store_list_series(s, METRIC_CORE_UTILIZATION, &m, 1, &list, &n), 0);
        assert_int_equal(n, 1);
        assert_string_equal(list[0].label_values[1], "1");
        free(list);
        struct history_query q = {
                .metric = METRIC_CORE_UTILIZATION, .start_ms = 0, .end_ms = 1000, .step_ms = 1, .rate = true
        };
        struct history_result *res = NULL;
        assert_int_equal(store_query_range(s, &q, &res), -EINVAL); /* rate of a gauge */
        store_close(s);
}

/* Gauges that are not whole numbers come back to 24 significant bits, over
 * the whole range of doubles, and nothing else changes: counters (even fractional ones), whole gauges above
 * 2^24 and infinities come back bit for bit. (Queries skip NaN samples;
 * test-chunk.c checks that chunks keep them.) */
static void store_append__values__kept_to_documented_precision(void **state) {
        (void) state;
        struct store *s = open_store("precision.db", NULL);
        static const double in[][N_SERIES] = {
                { 0.123456789012345, -1e-300, 12345.678901234567, 1099511627777.0 },
                { 0.999999999999, INFINITY, 12346.5, 1099511627776.0 },
                { 2.5, 1.0 / 3.0, 12347.25, 3.0 },
        };
        static const uint8_t valid[N_SERIES] = { 1, 1, 1, 1 };
        for (size_t t = 0; t < 3; t++)
                assert_int_equal(store_append(s, T0 + 1000 * (int64_t) t, in[t], valid, N_SERIES), 0);
        for (size_t i = 0; i < N_SERIES; i++) {
                struct history_query q = { .metric = series[i].metric,
                                           .start_ms = T0,
                                           .end_ms = T0 + 2000,
                                           .step_ms = 1000,
                                           .agg = HISTORY_AGG_LAST };
                struct history_result *res = NULL;
                assert_int_equal(store_query_range(s, &q, &res), 0);
                const struct history_series *sr = NULL;
                for (size_t k = 0; k < res->n_series; k++)
                        if (strcmp(res->series[k].desc.label_values[1], series[i].label_values[1]) == 0)
                                sr = &res->series[k];
                assert_non_null(sr);
                assert_int_equal(sr->n_points, 3);
                for (size_t t = 0; t < 3; t++) {
                        double want = kept(i, in[t][i]), got = sr->points[t].value;
                        assert_true(memcmp(&got, &want, sizeof(got)) == 0);
                }
                history_result_free(res);
        }
        store_close(s);
}

static void store_open__missing_directory__enoent(void **state) {
        (void) state;
        char path[128];
        struct store *s = NULL;
        path_of(path, sizeof(path), "missing/neurond.db");
        assert_int_equal(store_open(path, &s), -ENOENT);
        assert_null(s);
}

/* The database's directory is missing at first (standing in for a full or
 * read-only file system: every open attempt fails), then appears. */
static void store_open_deferred__database_appears__stores_held_ticks(void **state) {
        (void) state;
        char sub[128], path[160], body[512];
        struct store *s = NULL;
        struct history_stats st;
        struct store_options o;
        store_options_init(&o);
        path_of(sub, sizeof(sub), "later");
        snprintf(path, sizeof(path), "%s/neurond.db", sub);
        assert_int_equal(store_open_deferred(path, &o, -ENOSPC, &s), 0);
        assert_int_equal(store_register_series(s, series, N_SERIES), 0);
        store_get_stats(s, &st);
        assert_true(st.degraded && st.unopened);
        assert_int_equal(st.last_error, -ENOSPC);
        assert_int_equal(healthz(s, body, sizeof(body)), 200);
        assert_non_null(strstr(body, "\"status\":\"degraded\""));
        assert_non_null(strstr(body, "the database cannot be opened: No space left on device"));

        for (int k = 0; k < 100; k++) {
                int r = append_tick(s, 1000);
                assert_true(r == -ENOSPC || r == -ENOENT);
        }
        store_get_stats(s, &st);
        assert_true(st.degraded && st.unopened);
        assert_int_equal(st.last_error, -ENOENT);
        assert_true(st.write_errors > 0 && st.write_errors < 10); /* backed off */
        assert_int_equal(st.ticks_dropped, 0);
        struct history_query q = {
                .metric = METRIC_CORE_UTILIZATION, .start_ms = T0, .end_ms = T0 + 100000, .step_ms = 1000
        };
        struct history_result *res = NULL;
        assert_int_equal(store_query_range(s, &q, &res), -EAGAIN);
        struct series_desc *list = NULL;
        size_t n = 0;
        assert_int_equal(store_list_series(s, -1, NULL, 0, &list, &n), -EAGAIN);

        assert_int_equal(mkdir(sub, 0700), 0);
        int opened = -1;
        for (int k = 0; k < 70 && opened < 0; k++)
                if (append_tick(s, 1000) == 0)
                        opened = k;
        assert_true(opened >= 0); /* within the longest back-off */
        store_get_stats(s, &st);
        assert_false(st.degraded || st.unopened);
        assert_int_equal(st.damaged_set_aside, 0);
        assert_int_equal(append_tick(s, 1000), 0);
        /* Every tick, those held before the database opened too. */
        check_every_tick(s);
        assert_int_equal(store_list_series(s, -1, NULL, 0, &list, &n), 0);
        assert_int_equal(n, N_SERIES);
        free(list);
        store_close(s);
        s = open_store("later/neurond.db", NULL);
        check_every_tick(s);
        store_close(s);
}

/* Closing tries the database once more, so held ticks are not lost when it
 * came back since the last retry. */
static void store_close__deferred__writes_held_ticks(void **state) {
        (void) state;
        char sub[128], path[160];
        struct store *s = NULL;
        struct store_options o;
        store_options_init(&o);
        path_of(sub, sizeof(sub), "later");
        snprintf(path, sizeof(path), "%s/neurond.db", sub);
        assert_int_equal(store_open_deferred(path, &o, -EROFS, &s), 0);
        assert_int_equal(store_register_series(s, series, N_SERIES), 0);
        for (int k = 0; k < 5; k++)
                assert_int_equal(append_tick(s, 1000), -ENOENT);
        assert_int_equal(mkdir(sub, 0700), 0);
        store_close(s);
        s = open_store("later/neurond.db", NULL);
        check_every_tick(s);
        store_close(s);
}

/* When the database finally opens, it gets the start-up checks: a damaged
 * file is set aside and a new one started. */
static void store_open_deferred__damaged_file__set_aside_when_opened(void **state) {
        (void) state;
        char path[128], pattern[160];
        struct store *s = NULL;
        struct history_stats st;
        struct store_options o;
        store_options_init(&o);
        write_junk("junk.db", path, sizeof(path));
        assert_int_equal(store_open_deferred(path, &o, -EIO, &s), 0);
        assert_int_equal(store_register_series(s, series, N_SERIES), 0);
        assert_int_equal(append_tick(s, 1000), 0); /* the first retry is at the first tick */
        store_get_stats(s, &st);
        assert_false(st.degraded || st.unopened);
        assert_int_equal(st.damaged_set_aside, 1);
        glob_t g;
        snprintf(pattern, sizeof(pattern), "%s.damaged-*[0-9]", path); /* not -wal, -shm */
        assert_int_equal(glob(pattern, 0, NULL, &g), 0);
        assert_int_equal(g.gl_pathc, 1);
        globfree(&g);
        check_query(s, 0, T0, truth.ts[truth.n - 1], 1000, HISTORY_AGG_LAST, false);
        store_close(s);
}

/* One process per database: a second store on the file is refused before
 * it writes anything, and the holder's pid is there to name; the holder
 * goes on storing. */
static void store_open__locked__ebusy_naming_holder(void **state) {
        (void) state;
        char path[128];
        struct store *other = NULL;
        struct store_options o;
        long pid = 0;
        store_options_init(&o);
        struct store *s = open_store("one.db", NULL);
        append_ticks(s, 10, 1000);
        path_of(path, sizeof(path), "one.db");
        assert_int_equal(store_open(path, &other), -EBUSY);
        assert_int_equal(store_open_or_set_aside(path, &o, &other, NULL, 0), -EBUSY);
        assert_null(other);
        assert_int_equal(store_lock_holder(path, &pid), 0);
        assert_int_equal(pid, (long) getpid());
        append_ticks(s, 10, 1000);
        store_close(s);
        /* Let go: the file stays, naming no one. */
        assert_int_equal(store_lock_holder(path, &pid), -ENODATA);
        s = open_store("one.db", NULL);
        check_every_tick(s);
        store_close(s);
}

/* The lock is taken before the integrity check: a second store never sets
 * the holder's file aside; and setting a damaged file aside keeps it. */
static void store_open_or_set_aside__damaged__keeps_the_lock(void **state) {
        (void) state;
        char path[128], aside[256] = "";
        struct store *s = NULL, *other = NULL;
        struct store_options o;
        store_options_init(&o);
        write_junk("junk.db", path, sizeof(path));
        assert_int_equal(store_open_or_set_aside(path, &o, &s, aside, sizeof(aside)), 1);
        assert_int_equal(store_open_or_set_aside(path, &o, &other, NULL, 0), -EBUSY);
        assert_null(other);
        store_close(s);
        assert_int_equal(store_open_or_set_aside(path, &o, &s, NULL, 0), 0);
        store_close(s);
}

/* A deferred store whose database another process holds waits, degraded,
 * and takes the lock and stores what it held once the other lets go. */
static void store_open_deferred__locked__waits_for_the_lock(void **state) {
        (void) state;
        char path[128];
        struct store *s = NULL;
        struct history_stats st;
        struct store_options o;
        store_options_init(&o);
        path_of(path, sizeof(path), "two.db");
        struct store *holder = open_store("two.db", NULL);
        assert_int_equal(store_open_deferred(path, &o, -EROFS, &s), 0);
        assert_int_equal(store_register_series(s, series, N_SERIES), 0);
        for (int k = 0; k < 10; k++)
                assert_int_equal(append_tick(s, 1000), -EBUSY);
        store_get_stats(s, &st);
        assert_true(st.degraded && st.unopened);
        assert_int_equal(st.last_error, -EBUSY);
        store_close(holder);
        int opened = -1;
        for (int k = 0; k < 70 && opened < 0; k++)
                if (append_tick(s, 1000) == 0)
                        opened = k;
        assert_true(opened >= 0);
        check_every_tick(s);
        store_close(s);
}

/* Writes every page of the WAL into the file, from a connection of the
 * test's own, then overwrites the file after its header with junk: every
 * page a new connection reads from the file is damaged. */
static void damage_under_store(const char *path) {
        sqlite3 *db = NULL;
        assert_int_equal(sqlite3_open(path, &db), SQLITE_OK);
        sqlite3_busy_timeout(db, 5000);
        assert_int_equal(sqlite3_exec(db, "PRAGMA wal_checkpoint(TRUNCATE)", NULL, NULL, NULL), SQLITE_OK);
        sqlite3_close(db);
        FILE *f = fopen(path, "r+b");
        assert_non_null(f);
        fseek(f, 0, SEEK_END);
        long size = ftell(f);
        fseek(f, 100, SEEK_SET);
        for (long i = 100; i < size; i++)
                fputc(0xA5, f);
        fclose(f);
}

/* A file damaged while the store has it open: the scheduled check finds
 * it and the store turns degraded; the next write sets the file aside and
 * starts a new one, which gets every tick held in memory. */
static void store_append__damaged_while_open__set_aside_with_the_ticks(void **state) {
        (void) state;
        char path[128], body[512];
        struct history_stats st;
        struct store_options o;
        store_options_init(&o);
        o.check_interval_ms = 100;
        path_of(path, sizeof(path), "live.db");
        struct store *s = open_store("live.db", &o);
        append_ticks(s, 20, 1000);
        /* Checks of a sound file find nothing. */
        usleep(300 * 1000);
        store_get_stats(s, &st);
        assert_false(st.degraded);

        damage_under_store(path);
        /* Up to 30 s: the check runs in its own thread, which valgrind on a
         * busy machine may not schedule for seconds. */
        for (int k = 0; k < 600 && !st.degraded; k++) {
                usleep(50 * 1000);
                store_get_stats(s, &st);
        }
        assert_true(st.degraded);
        assert_int_equal(st.last_error, -EUCLEAN);
        assert_int_equal(st.damaged_set_aside, 0);
        assert_int_equal(healthz(s, body, sizeof(body)), 200);
        assert_non_null(strstr(body, "\"status\":\"degraded\""));
        assert_string_equal(store_set_aside_name(s), "");

        assert_int_equal(append_tick(s, 1000), 0);
        store_get_stats(s, &st);
        assert_false(st.degraded);
        assert_int_equal(st.damaged_set_aside, 1);
        const char *aside = store_set_aside_name(s);
        assert_int_equal(strncmp(aside, path, strlen(path)), 0);
        assert_int_equal(strncmp(aside + strlen(path), ".damaged-", 9), 0);
        struct stat sb;
        assert_int_equal(stat(aside, &sb), 0);
        check_every_tick(s);
        /* The new file is sound, and keeps the ticks over a restart. */
        usleep(300 * 1000);
        store_get_stats(s, &st);
        assert_false(st.degraded);
        append_ticks(s, 5, 1000);
        store_close(s);
        s = open_store("live.db", NULL);
        check_every_tick(s);
        store_close(s);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test_setup_teardown(store_query_range__raw_tier__matches_naive, setup, teardown),
                cmocka_unit_test_setup_teardown(store_query_range__minute_tier__matches_naive, setup, teardown),
                cmocka_unit_test_setup_teardown(store_query_range__hour_tier__matches_naive, setup, teardown),
                cmocka_unit_test_setup_teardown(store_open__after_crash__keeps_every_tick, setup, teardown),
                cmocka_unit_test_setup_teardown(store_append__old_data__removed_by_age, setup, teardown),
                cmocka_unit_test_setup_teardown(store_append__size_cap__holds_and_reuses_space, setup, teardown),
                cmocka_unit_test_setup_teardown(store_close__backlog__compacts_until_its_deadline, setup, teardown),
                cmocka_unit_test_setup_teardown(store_open__schema_1__migrated, setup, teardown),
                cmocka_unit_test_setup_teardown(store_open__schema_2__migrated, setup, teardown),
                cmocka_unit_test_setup_teardown(store_open__newer_or_damaged__refused, setup, teardown),
                cmocka_unit_test_setup_teardown(store_append__disk_full__degrades_then_resumes, setup, teardown),
                cmocka_unit_test_setup_teardown(store_list_series__lists_registered, setup, teardown),
                cmocka_unit_test_setup_teardown(store_append__values__kept_to_documented_precision, setup, teardown),
                cmocka_unit_test_setup_teardown(healthz__store_cannot_write__degraded_then_ok, setup, teardown),
                cmocka_unit_test_setup_teardown(store_open__missing_directory__enoent, setup, teardown),
                cmocka_unit_test_setup_teardown(store_open_deferred__database_appears__stores_held_ticks, setup,
                                                teardown),
                cmocka_unit_test_setup_teardown(store_close__deferred__writes_held_ticks, setup, teardown),
                cmocka_unit_test_setup_teardown(store_open_deferred__damaged_file__set_aside_when_opened, setup,
                                                teardown),
                cmocka_unit_test_setup_teardown(store_open__locked__ebusy_naming_holder, setup, teardown),
                cmocka_unit_test_setup_teardown(store_open_or_set_aside__damaged__keeps_the_lock, setup, teardown),
                cmocka_unit_test_setup_teardown(store_open_deferred__locked__waits_for_the_lock, setup, teardown),
                cmocka_unit_test_setup_teardown(store_append__damaged_while_open__set_aside_with_the_ticks, setup,
                                                teardown),
        };
        return cmocka_run_group_tests_name("store-tiers", tests, NULL, NULL);
}
