/* Storage benchmarks: prints each figure beside its goal.
 *
 *   bench-store [DIR [INSTANCE-SPEC [HOURS]]]   (DIR: a new one in /tmp)
 *
 * Feeds the device model through the real store path (store_append: chunk
 * encoding, SQLite writes, rollups) for 24 simulated hours at 1 s in DIR,
 * then times range queries. Timestamps are the simulated clock, exactly
 * 1 s apart, as the daemon stamps ticks that arrive within 5 ms of its
 * interval grid (daemon/loop.c). */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "collectors/collector.h"
#include "storage/store.h"

#define DAY_S 86400
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

/* Median time of runs of one query, in milliseconds. */
static double time_query(struct store *s, const struct history_query *q, size_t *ret_points) {
        double t[15];
        for (int i = 0; i < 15; i++) {
                struct history_result *res = NULL;
                double a = now_s(CLOCK_MONOTONIC);
                if (store_query_range(s, q, &res) < 0) {
                        fprintf(stderr, "query failed\n");
                        exit(1);
                }
                t[i] = (now_s(CLOCK_MONOTONIC) - a) * 1000;
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

static struct store *feed(const char *path, struct collector *c, int64_t ticks, int64_t step_ms, double *ret_store_cpu,
                          double *ret_poll_cpu, uint64_t *ret_samples) {
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
                for (size_t i = 0; i < b.n; i++)
                        samples += b.valid[i];
        }
        free(b.values);
        free(b.valid);
        *ret_store_cpu = store_cpu;
        *ret_poll_cpu = poll_cpu;
        *ret_samples = samples;
        return s;
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
        snprintf(path, sizeof(path), "%s/bench-day.db", dir);
        struct store *s = feed(path, c, day_s, 1000, &store_cpu, &poll_cpu, &samples);
        store_close(s);
        int64_t chunk_bytes = db_int(path, "SELECT sum(pgsize) FROM dbstat WHERE name IN ('chunks', 'head')");
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

        if (store_open(path, &s) < 0)
                return 1;
        size_t points = 0;
        struct history_query q = {
                .metric = c->inv.series[0].metric,
                .start_ms = T0,
                .end_ms = T0 + day_s * 1000 - 1,
                .step_ms = day_s,
                .agg = HISTORY_AGG_AVG,
        };
        const struct metric_desc *m = &metric_table[q.metric];
        for (size_t l = 0; l < metric_label_count(m); l++) {
                snprintf(q.matchers[l].name, sizeof(q.matchers[l].name), "%s", m->labels[l]);
                snprintf(q.matchers[l].value, sizeof(q.matchers[l].value), "%s", c->inv.series[0].label_values[l]);
        }
        q.n_matchers = metric_label_count(m);
        double ms = time_query(s, &q, &points);
        char label[96];
        snprintf(label, sizeof(label), "%lld h query, raw tier, %zu points (ms)", (long long) (day_s / 3600), points);
        printf("%-52s %12.2f   < 5\n", label, ms);
        store_close(s);

        /* A week at one tick a minute fills the 1 min tier as a week at 1 s
         * would: one row per series and minute. */
        snprintf(path, sizeof(path), "%s/bench-week.db", dir);
        s = feed(path, c, 7 * 24 * 60, 60000, &store_cpu, &poll_cpu, &samples);
        q.start_ms = T0;
        q.end_ms = T0 + 7LL * DAY_S * 1000 - 1;
        q.step_ms = 605000;
        ms = time_query(s, &q, &points);
        snprintf(label, sizeof(label), "7 d query, 1 min rollups, %zu points (ms)", points);
        printf("%-52s %12.2f   < 10\n", label, ms);
        store_close(s);
        collector_close(c);
        /* The databases are large: remove them. */
        static const char *const files[] = { "bench-day.db", "bench-week.db" };
        static const char *const suffix[] = { "", "-wal", "-shm", ".lock" };
        for (size_t f = 0; f < 2; f++)
                for (size_t x = 0; x < 4; x++) {
                        snprintf(path, sizeof(path), "%s/%s%s", dir, files[f], suffix[x]);
                        remove(path);
                }
        if (argc <= 1)
                rmdir(dir);
        return 0;
}
