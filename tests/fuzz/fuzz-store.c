/* libFuzzer target for the store: the input is a script of series-list
 * changes, ticks (a stamp that may go back, values of every kind, valid
 * flags) and restarts, played against a real store in a SQLite file; the
 * store is then closed and opened again. Whatever the script:
 *   - every call answers 0 or an error, and nothing crashes;
 *   - the store always opens again, with PRAGMA integrity_check ok;
 *   - a query of every metric over the whole script answers;
 *   - a tick the store took (0) is there after the reopen with its first
 *     series' value when that was valid and finite (the first series of
 *     the pool is never listed twice and is first to be stored, so the
 *     store always keeps it).
 * The pool holds more series than the store's limit, and lists may name a
 * series twice, so both ways of leaving a series out are taken. */
#include "config.h"

#include <errno.h>
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <sqlite3.h>

#include "storage/store.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define LIST_MAX 8
#define SERIES_LIMIT 6
#define TICKS_MAX 64

static const struct series_desc pool[] = {
        { .metric = METRIC_DEVICE_MEMORY_TOTAL, .label_values = { "0" } },
        { .metric = METRIC_CORE_UTILIZATION, .label_values = { "0", "0" } },
        { .metric = METRIC_CORE_UTILIZATION, .label_values = { "0", "1", "job" } },
        { .metric = METRIC_DEVICE_MEMORY_USED, .label_values = { "0" } },
        { .metric = METRIC_DEVICE_MEMORY_USED, .label_values = { "1" } },
        { .metric = METRIC_CORE_BUSY_SECONDS, .label_values = { "0", "0" } },
        { .metric = METRIC_DEVICE_DMA_BYTES, .label_values = { "0", "host_to_device" } },
        { .metric = METRIC_RUNTIME_INFO, .label_values = { "job", "1" } },
        { .metric = METRIC_RUNTIME_INFO, .label_values = { "job", "" } },
        { .metric = METRIC_DEVICE_UP, .label_values = { "0" } },
};
#define POOL (sizeof(pool) / sizeof(pool[0]))

static const double kinds[] = { 0, 1, -1, 0.5, 1e300, -1e-300, 4294967296.0, 1e18, NAN, INFINITY, -INFINITY, 3.25 };

struct script {
        const uint8_t *p, *end;
};

static unsigned next(struct script *s) {
        return s->p < s->end ? *s->p++ : 0;
}

static char dir[64];
static char path[128];

static void remove_files(void) {
        static const char *const suffix[] = { "", "-wal", "-shm", ".lock" };
        char name[160];
        for (size_t i = 0; i < 4; i++) {
                snprintf(name, sizeof(name), "%s%s", path, suffix[i]);
                unlink(name);
        }
}

static struct store *open_store(void) {
        struct store_options o;
        struct store *s = NULL;
        store_options_init(&o);
        o.max_series = SERIES_LIMIT;
        o.check_interval_ms = 0;
        if (store_open_with(path, &o, &s) != 0)
                abort();
        return s;
}

/* A tick the store took: its stamp and the first series' value. */
struct taken {
        int64_t ts;
        double value;
        bool valid;
};

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        struct script sc = { data, data + size };
        struct series_desc list[LIST_MAX];
        struct taken taken[TICKS_MAX];
        size_t n = 1, n_taken = 0;
        int64_t ts = 1800000000000LL, lo = ts, hi = ts;

        if (!dir[0]) {
                snprintf(dir, sizeof(dir), "/tmp/fuzz-store-XXXXXX");
                if (!mkdtemp(dir))
                        abort();
                snprintf(path, sizeof(path), "%s/store.db", dir);
        }
        remove_files();
        struct store *s = open_store();
        list[0] = pool[0];
        if (store_register_series(s, list, n) != 0)
                abort();
        while (sc.p < sc.end && n_taken < TICKS_MAX) {
                unsigned op = next(&sc) % 4;
                if (op == 0) {
                        /* A new list: the first series, then any of the pool's. */
                        n = 1 + next(&sc) % LIST_MAX;
                        for (size_t i = 1; i < n; i++)
                                list[i] = pool[1 + next(&sc) % (POOL - 1)];
                        int r = store_register_series(s, list, n);
                        if (r != 0 && r != -ENOMEM)
                                abort();
                } else if (op == 3) {
                        store_close(s);
                        s = open_store();
                        if (store_register_series(s, list, n) != 0)
                                abort();
                } else {
                        /* A tick, its stamp up to 64 s either way of the last. */
                        double values[LIST_MAX];
                        uint8_t valid[LIST_MAX];
                        ts += ((int) next(&sc) - 128) * 500;
                        for (size_t i = 0; i < n; i++) {
                                unsigned b = next(&sc);
                                values[i] = kinds[b % (sizeof(kinds) / sizeof(kinds[0]))];
                                valid[i] = (b & 0x80) == 0;
                        }
                        int r = store_append(s, ts, values, valid, n);
                        if (r == 0) {
                                taken[n_taken++] = (struct taken){ ts, values[0], valid[0] };
                                lo = ts < lo ? ts : lo;
                                hi = ts > hi ? ts : hi;
                        } else if (r != -EINVAL) {
                                abort();
                        }
                }
        }
        store_close(s);

        s = open_store();
        sqlite3 *db = NULL;
        sqlite3_stmt *st = NULL;
        if (sqlite3_open_v2(path, &db, SQLITE_OPEN_READONLY, NULL) != SQLITE_OK ||
            sqlite3_prepare_v2(db, "PRAGMA integrity_check", -1, &st, NULL) != SQLITE_OK ||
            sqlite3_step(st) != SQLITE_ROW || strcmp((const char *) sqlite3_column_text(st, 0), "ok") != 0)
                abort();
        sqlite3_finalize(st);
        sqlite3_close(db);
        for (size_t i = 0; i < POOL; i++) {
                struct history_query q = {
                        .metric = pool[i].metric, .start_ms = lo, .end_ms = hi, .step_ms = 500, .agg = HISTORY_AGG_LAST
                };
                struct history_result *res = NULL;
                int r = store_query_range(s, &q, &res);
                if (r != 0 && r != -E2BIG)
                        abort();
                /* Every tick taken holds the first series' valid value. */
                for (size_t k = 0; r == 0 && i == 0 && k < n_taken; k++) {
                        bool found = false;
                        for (size_t p = 0; res->n_series == 1 && p < res->series[0].n_points; p++)
                                found = found || res->series[0].points[p].timestamp_ms == taken[k].ts;
                        if (taken[k].valid && isfinite(taken[k].value) && !found)
                                abort();
                }
                history_result_free(res);
        }
        store_close(s);
        remove_files();
        return 0;
}
