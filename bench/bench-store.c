/* Storage benchmarks: prints each figure beside its goal and its anchor.
 *
 *   bench-store [DIR [INSTANCE-SPEC [HOURS]]]   (DIR: a new one in /tmp)
 *
 * Feeds the device model through the real store path (store_append: chunk
 * encoding, SQLite writes, rollups) for 24 simulated hours at 1 s in DIR,
 * then times range queries; then a week of trn3-gen2-ultraserver at one
 * tick a minute (BENCH_WEEK=0 leaves it out) and 7-day queries of one
 * series and of every core. Timestamps are the simulated clock, exactly
 * 1 s apart, as the daemon stamps ticks that arrive within 5 ms of its
 * interval grid (daemon/loop.c).
 *
 * Anchors: the same ticks (up to 2 hours of them) go into a plain SQLite
 * table of one row per sample, for ingest and size. With
 * BENCH_OPENMETRICS=FILE the stored samples (gauges rounded as the store
 * keeps them) are also written there as OpenMetrics text, from which
 * bench/store-vs-prometheus.sh builds Prometheus's blocks. */
#include "config.h"

#include <errno.h>
#include <math.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "collectors/collector.h"
#include "storage/precision.h"
#include "storage/store.h"

#define DAY_S 86400
#define PLAIN_TICKS_MAX 7200
#define WEEK_SPEC "model:trn3-gen2-ultraserver,scenario=training"
#define T0 1790000000000LL

static double now_s(clockid_t id) {
        struct timespec ts;
        clock_gettime(id, &ts);
        return (double) ts.tv_sec + (double) ts.tv_nsec / 1e9;
}

static int64_t db_int(const char *path, const char *sql) {
        char cmd[4400];
        snprintf(cmd, sizeof(cmd), "sqlite3 '%s' \"%s\"", path, sql);
        FILE *p = popen(cmd, "r");
        long long v = -1;
        if (p) {
                if (fscanf(p, "%lld", &v) != 1)
                        v = -1;
                pclose(p);
        }
        return v;
}

/* Median time of runs of one query, in milliseconds; the answer's series
 * and the first one's points go to ret_series and ret_points. */
static double time_query(struct store *s, const struct history_query *q, size_t *ret_series, size_t *ret_points) {
        double t[15];
        for (int i = 0; i < 15; i++) {
                struct history_result *res = NULL;
                double a = now_s(CLOCK_MONOTONIC);
                if (store_query_range(s, q, &res) < 0) {
                        fprintf(stderr, "query failed\n");
                        exit(1);
                }
                t[i] = (now_s(CLOCK_MONOTONIC) - a) * 1000;
                *ret_series = res->n_series;
                *ret_points = res->n_series ? res->series[0].n_points : 0;
                history_result_free(res);
        }
        for (int i = 0; i < 15; i++)
                for (int j = i + 1; j < 15; j++)
                        if (t[j] < t[i]) {
                                double x = t[i];
                                t[i] = t[j];
                                t[j] = x;
                        }
        return t[7];
}

static double store_wall;

/* One sample as an OpenMetrics line, its value as the store keeps it, so
 * that Prometheus is given exactly what neurond stored. */
static void openmetrics_sample(FILE *f, const struct series_desc *sd, int64_t ts, double v) {
        const struct metric_desc *m = &metric_table[sd->metric];
        if (m->type == METRIC_GAUGE)
                v = precision_round_gauge(v);
        fputs(m->name, f);
        for (size_t l = 0; l < metric_label_count(m); l++) {
                fprintf(f, "%c%s=\"", l ? ',' : '{', m->labels[l]);
                for (const char *p = sd->label_values[l]; *p; p++) {
                        if (*p == '\\' || *p == '"')
                                fputc('\\', f);
                        fputc(*p == '\n' ? 'n' : *p, f);
                }
                fputc('"', f);
        }
        if (metric_label_count(m))
                fputc('}', f);
        if (isnan(v))
                fputs(" NaN", f);
        else if (isinf(v))
                fputs(v > 0 ? " +Inf" : " -Inf", f);
        else
                fprintf(f, " %.17g", v);
        fprintf(f, " %lld.%03lld\n", (long long) (ts / 1000), (long long) (ts % 1000));
}

static struct store *feed(const char *path, struct collector *c, int64_t ticks, int64_t step_ms, FILE *openmetrics,
                          double *ret_store_cpu, double *ret_poll_cpu, uint64_t *ret_samples) {
        struct store *s = NULL;
        struct sample_batch b = { .n = c->inv.n_series };
        double store_cpu = 0, poll_cpu = 0;
        uint64_t samples = 0;

        remove(path);
        if (store_open(path, &s) < 0 || store_register_series(s, c->inv.series, c->inv.n_series) < 0) {
                fprintf(stderr, "cannot open %s\n", path);
                exit(1);
        }
        b.values = calloc(b.n, sizeof(*b.values));
        b.valid = calloc(b.n, 1);
        for (int64_t t = 0; t < ticks; t++) {
                int64_t ts = T0 + t * step_ms;
                double a = now_s(CLOCK_THREAD_CPUTIME_ID);
                memset(b.valid, 0, b.n);
                c->ops->read(c, ts, &b);
                double m = now_s(CLOCK_THREAD_CPUTIME_ID), w = now_s(CLOCK_MONOTONIC);
                if (store_append(s, ts, b.values, b.valid, b.n) < 0) {
                        fprintf(stderr, "append failed\n");
                        exit(1);
                }
                double e = now_s(CLOCK_THREAD_CPUTIME_ID);
                store_wall += now_s(CLOCK_MONOTONIC) - w;
                poll_cpu += m - a;
                store_cpu += e - m;
                for (size_t i = 0; i < b.n; i++) {
                        samples += b.valid[i];
                        if (openmetrics && b.valid[i])
                                openmetrics_sample(openmetrics, &c->inv.series[i], ts, b.values[i]);
                }
        }
        free(b.values);
        free(b.valid);
        *ret_store_cpu = store_cpu;
        *ret_poll_cpu = poll_cpu;
        *ret_samples = samples;
        return s;
}

/* The mean of one series over [start, end] in steps of step ms. */
static struct history_query series_query(const struct series_desc *sd, int64_t start, int64_t end, int64_t step) {
        struct history_query q = {
                .metric = sd->metric, .start_ms = start, .end_ms = end, .step_ms = step, .agg = HISTORY_AGG_AVG
        };
        const struct metric_desc *m = &metric_table[q.metric];
        for (size_t l = 0; l < metric_label_count(m); l++) {
                snprintf(q.matchers[l].name, sizeof(q.matchers[l].name), "%s", m->labels[l]);
                snprintf(q.matchers[l].value, sizeof(q.matchers[l].value), "%s", sd->label_values[l]);
        }
        q.n_matchers = metric_label_count(m);
        return q;
}

static void sql_or_die(sqlite3 *db, const char *sql) {
        if (sqlite3_exec(db, sql, NULL, NULL, NULL) != SQLITE_OK) {
                fprintf(stderr, "plain SQLite: %s\n", sqlite3_errmsg(db));
                exit(1);
        }
}

/* The anchor for ingest and size: the same ticks as rows of one table a
 * range query can use (key: series, time), one transaction per tick, with
 * the store's page size, journal and sync settings. Returns the SQLite CPU
 * time; the file's size and the samples go to ret_bytes and ret_samples. */
static double feed_plain(const char *path, const char *spec, int64_t ticks, int64_t *ret_bytes, uint64_t *ret_samples) {
        struct collector *c = NULL;
        sqlite3 *db = NULL;
        sqlite3_stmt *insert = NULL;
        char err[256];
        double cpu = 0;
        uint64_t samples = 0;

        remove(path);
        if (collector_open_spec(spec, &c, err, sizeof(err)) < 0 || sqlite3_open(path, &db) != SQLITE_OK) {
                fprintf(stderr, "plain SQLite: cannot open %s or %s\n", spec, path);
                exit(1);
        }
        sql_or_die(db, "PRAGMA page_size = 4096; PRAGMA journal_mode = WAL; PRAGMA synchronous = NORMAL;"
                       "CREATE TABLE samples (series_id INTEGER NOT NULL, ts INTEGER NOT NULL, value REAL NOT NULL,"
                       "  PRIMARY KEY (series_id, ts)) WITHOUT ROWID");
        if (sqlite3_prepare_v2(db, "INSERT INTO samples VALUES (?, ?, ?)", -1, &insert, NULL) != SQLITE_OK) {
                fprintf(stderr, "plain SQLite: %s\n", sqlite3_errmsg(db));
                exit(1);
        }
        struct sample_batch b = { .n = c->inv.n_series };
        b.values = calloc(b.n, sizeof(*b.values));
        b.valid = calloc(b.n, 1);
        for (int64_t t = 0; t < ticks; t++) {
                int64_t ts = T0 + t * 1000;
                memset(b.valid, 0, b.n);
                c->ops->read(c, ts, &b);
                double a = now_s(CLOCK_THREAD_CPUTIME_ID);
                sql_or_die(db, "BEGIN");
                for (size_t i = 0; i < b.n; i++) {
                        if (!b.valid[i])
                                continue;
                        sqlite3_bind_int64(insert, 1, (sqlite3_int64) i + 1);
                        sqlite3_bind_int64(insert, 2, ts);
                        sqlite3_bind_double(insert, 3, b.values[i]);
                        if (sqlite3_step(insert) != SQLITE_DONE) {
                                fprintf(stderr, "plain SQLite: %s\n", sqlite3_errmsg(db));
                                exit(1);
                        }
                        sqlite3_reset(insert);
                        samples++;
                }
                sql_or_die(db, "COMMIT");
                cpu += now_s(CLOCK_THREAD_CPUTIME_ID) - a;
        }
        sqlite3_finalize(insert);
        sql_or_die(db, "PRAGMA wal_checkpoint(TRUNCATE)");
        sqlite3_close(db);
        free(b.values);
        free(b.valid);
        collector_close(c);
        *ret_bytes = db_int(path, "SELECT page_count * page_size FROM pragma_page_count, pragma_page_size");
        *ret_samples = samples;
        return cpu;
}

/* What each family's chunks take, per sample: where the bytes go. */
static void print_families(const char *path) {
        char cmd[4400];
        snprintf(cmd, sizeof(cmd),
                 "sqlite3 -separator ' ' '%s' \"SELECT s.metric, count(DISTINCT s.id), sum(c.count),"
                 " round(1.0 * sum(c.size) / sum(c.count), 3) FROM chunks c JOIN series s ON s.id = c.series_id"
                 " GROUP BY s.metric ORDER BY sum(c.size) DESC\"",
                 path);
        FILE *p = popen(cmd, "r");
        char metric[128];
        long long series, samples;
        double per_sample;
        if (!p)
                return;
        printf("  raw chunks by family: series, samples, bytes/sample (the hourly chunks' bytes)\n");
        while (fscanf(p, "%127s %lld %lld %lf", metric, &series, &samples, &per_sample) == 4)
                printf("  %-50s %6lld %10lld %8.3f\n", metric, series, samples, per_sample);
        pclose(p);
}

/* A week at one tick a minute fills the 1 min tier as a week at 1 s
 * would: one row per series and minute. Of the largest UltraServer, for
 * the query of every core; about 12 minutes on 2 vCPUs. */
static int bench_week(const char *dir) {
        struct collector *c = NULL;
        struct store *s;
        char path[4096], err[256], label[96];
        double store_cpu, poll_cpu, ms;
        uint64_t samples;
        size_t n_series, points;

        if (collector_open_spec(WEEK_SPEC, &c, err, sizeof(err)) < 0) {
                fprintf(stderr, "%s: %s\n", WEEK_SPEC, err);
                return -1;
        }
        printf("workload: %s, %zu series, 7 simulated days at 1 min\n", WEEK_SPEC, c->inv.n_series);
        snprintf(path, sizeof(path), "%s/bench-week.db", dir);
        s = feed(path, c, 7 * 24 * 60, 60000, NULL, &store_cpu, &poll_cpu, &samples);
        int64_t week_end = T0 + 7LL * DAY_S * 1000 - 1, week_step = 7LL * DAY_S;
        struct history_query q = series_query(&c->inv.series[0], T0, week_end, week_step);
        ms = time_query(s, &q, &n_series, &points);
        snprintf(label, sizeof(label), "7 d query, 1 min rollups, %zu points (ms)", points);
        printf("%-52s %12.2f   < 10\n", label, ms);
        q = (struct history_query){
                .metric = METRIC_CORE_PHYSICAL_UTILIZATION,
                .start_ms = T0,
                .end_ms = week_end,
                .step_ms = week_step,
                .agg = HISTORY_AGG_AVG,
        };
        ms = time_query(s, &q, &n_series, &points);
        snprintf(label, sizeof(label), "7 d query, %zu cores x %zu points (ms)", n_series, points);
        printf("%-52s %12.2f   < 300\n", label, ms);
        store_close(s);
        collector_close(c);
        return 0;
}

int main(int argc, char **argv) {
        char path[4096], err[256];
        struct collector *c = NULL;
        char tmpdir[] = "/tmp/bench-store-XXXXXX";
        const char *dir = argc > 1 ? argv[1] : mkdtemp(tmpdir);
        if (!dir) {
                perror("mkdtemp");
                return 1;
        }
        const char *spec = argc > 2 ? argv[2] : "model:trn2.48xlarge,scenario=training";
        int64_t day_s = argc > 3 ? (int64_t) strtol(argv[3], NULL, 10) * 3600 : DAY_S;
        if (day_s <= 0)
                day_s = DAY_S;

        if (collector_open_spec(spec, &c, err, sizeof(err)) < 0) {
                printf("note: %s unavailable (%s); using model:trn1.32xlarge, default workload\n", spec, err);
                spec = "model:trn1.32xlarge";
                if (collector_open_spec(spec, &c, err, sizeof(err)) < 0) {
                        fprintf(stderr, "%s\n", err);
                        return 1;
                }
        }
        printf("workload: %s, %zu series, %lld simulated hours at 1 s\n", spec, c->inv.n_series,
               (long long) (day_s / 3600));

        double store_cpu, poll_cpu;
        uint64_t samples;
        const char *openmetrics_path = getenv("BENCH_OPENMETRICS");
        FILE *openmetrics = NULL;
        if (openmetrics_path && !(openmetrics = fopen(openmetrics_path, "w"))) {
                perror(openmetrics_path);
                return 1;
        }
        snprintf(path, sizeof(path), "%s/bench-day.db", dir);
        struct store *s = feed(path, c, day_s, 1000, openmetrics, &store_cpu, &poll_cpu, &samples);
        store_close(s);
        if (openmetrics) {
                fputs("# EOF\n", openmetrics);
                if (fclose(openmetrics) != 0) {
                        perror(openmetrics_path);
                        return 1;
                }
        }
        int64_t chunk_bytes =
                db_int(path, "SELECT sum(pgsize) FROM dbstat WHERE name IN ('chunks', 'chunk_data', 'head')");
        int64_t file_bytes = db_int(path, "SELECT page_count * page_size FROM pragma_page_count, pragma_page_size");

        printf("%-52s %12s   %s\n", "figure", "measured", "goal");
        printf("%-52s %12.3f   <= 1.2\n", "raw tier bytes/sample (chunks and head pages)",
               (double) chunk_bytes / (double) samples);
        printf("%-52s %12.3f   <= 1.5\n", "database bytes/sample (all tiers, whole file)",
               (double) file_bytes / (double) samples);
        printf("%-52s %12.0f   >= 2000000\n", "ingest samples/s, one core (store_append CPU time)",
               (double) samples / store_cpu);
        printf("%-52s %12.0f   (wall clock, shared disk)\n", "ingest samples/s, elapsed",
               (double) samples / store_wall);
        printf("%-52s %12.4f   < 0.1\n", "poll+store CPU % of one core at 1 s",
               (store_cpu + poll_cpu) / (double) day_s * 100.0);
        print_families(path);

        int64_t plain_ticks = day_s < PLAIN_TICKS_MAX ? day_s : PLAIN_TICKS_MAX, plain_bytes;
        uint64_t plain_samples;
        char plain_path[4096];
        snprintf(plain_path, sizeof(plain_path), "%s/bench-plain.db", dir);
        double plain_cpu = feed_plain(plain_path, spec, plain_ticks, &plain_bytes, &plain_samples);
        char label[96];
        snprintf(label, sizeof(label), "anchor: plain SQLite bytes/sample (%lld h)", (long long) (plain_ticks / 3600));
        printf("%-52s %12.3f   (row per sample)\n", label, (double) plain_bytes / (double) plain_samples);
        printf("%-52s %12.0f   (row per sample)\n", "anchor: plain SQLite ingest samples/s, one core",
               (double) plain_samples / plain_cpu);

        if (store_open(path, &s) < 0)
                return 1;
        size_t n_series = 0, points = 0;
        struct history_query q = series_query(&c->inv.series[0], T0, T0 + day_s * 1000 - 1, day_s);
        double ms = time_query(s, &q, &n_series, &points);
        snprintf(label, sizeof(label), "%lld h query, raw tier, %zu points (ms)", (long long) (day_s / 3600), points);
        printf("%-52s %12.2f   < 5\n", label, ms);
        store_close(s);
        collector_close(c);

        const char *week = getenv("BENCH_WEEK");
        if (!(week && strcmp(week, "0") == 0) && bench_week(dir) < 0)
                return 1;
        /* The databases are large: remove them. */
        static const char *const files[] = { "bench-day.db", "bench-week.db", "bench-plain.db" };
        static const char *const suffix[] = { "", "-wal", "-shm", ".lock" };
        for (size_t f = 0; f < sizeof(files) / sizeof(files[0]); f++)
                for (size_t x = 0; x < 4; x++) {
                        snprintf(path, sizeof(path), "%s/%s%s", dir, files[f], suffix[x]);
                        remove(path);
                }
        if (argc <= 1)
                rmdir(dir);
        return 0;
}
