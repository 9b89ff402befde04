/* Golden files of the device model: /metrics and the REST answers of
 * model:SPEC after a number of ticks from a fixed epoch, the ticks driven
 * through loop_tick_at() into a real store, compared byte for byte with
 * tests/data/golden/NAME.txt. The model is a function of its seed and its
 * stamps alone, so whatever changes in what it tells, or in how neurond
 * serves it, shows here as a diff; UPDATE_GOLDEN=1 rewrites the files after
 * a change that was meant. neurond's own neurond_* families are left out:
 * they hold timings of this run. */
#include "config.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "collectors/collector.h"
#include "daemon/loop.h"
#include "storage/store.h"
#include "web/api.h"
#include "web/expo.h"

#define EPOCH_MS 1893456000000LL /* 2030-01-01T00:00:00Z */
#define INTERVAL_MS 1000
#define TICKS 30

static const struct {
        const char *name;
        const char *spec;
} models[] = {
        { "trn1.2xlarge-training", "model:trn1.2xlarge,scenario=training,seed=7" },
        { "inf2.8xlarge-inference", "model:inf2.8xlarge,scenario=inference,seed=3" },
        { "inf1.6xlarge", "model:inf1.6xlarge,seed=11" },
        { "trn2.48xlarge-lnc1", "model:trn2.48xlarge,lnc=1,seed=5" },
};

typedef void handler_fn(const struct web_context *ctx, const struct web_request *req, struct web_reply *reply);

/* Appends a handler's answer to out under a heading: the path and the
 * parameters (n of them). */
static void answer(struct buf *out, const char *path, handler_fn *handler, const struct web_context *ctx,
                   const struct param *params, size_t n) {
        struct web_request req = { .method = "GET", .path = path, .params = params, .n_params = n };
        struct web_reply reply = { 0 };
        handler(ctx, &req, &reply);
        assert_int_equal(reply.status, 200);
        buf_printf(out, "== %s", path);
        for (size_t i = 0; i < n; i++)
                buf_printf(out, "%c%s=%s", i ? '&' : '?', params[i].key, params[i].value);
        buf_puts(out, "\n");
        buf_append(out, reply.body.data, reply.body.len);
        buf_free(&reply.body);
}

/* /metrics without neurond's own families. */
static void metrics(struct buf *out, const struct snapshot *snap, const struct collector *c) {
        static const char *const names[] = { "backend" };
        const struct expo_self self = {
                .version = "golden", .backend = c->inv.backend, .n_collectors = 1, .collector_names = names
        };
        struct expo *e = NULL;
        struct buf page = { 0 };
        assert_int_equal(expo_new(snap->set->series, snap->set->n, &e), 0);
        expo_render(e, snap, &self, ACCEPT_TEXT, &page);
        expo_free(e);
        buf_append(&page, "", 1);
        buf_puts(out, "== /metrics\n");
        for (char *line = page.data, *next; line && *line; line = next) {
                next = strchr(line, '\n');
                next = next ? next + 1 : NULL;
                size_t len = next ? (size_t) (next - line) : strlen(line);
                if (!strstr(line, "neurond_") || (size_t) (strstr(line, "neurond_") - line) >= len)
                        buf_append(out, line, len);
        }
        buf_free(&page);
}

/* Everything the golden file holds, for one model. */
static void render(const char *spec, const char *dir, struct buf *out) {
        char err[256], db[256];
        struct collector *c = NULL;
        struct store *store = NULL;
        struct snapshot_slot slot;
        struct loop l;

        assert_int_equal(collector_open_spec(spec, &c, err, sizeof(err)), 0);
        snprintf(db, sizeof(db), "%s/golden.db", dir);
        unlink(db);
        assert_int_equal(store_open(db, &store), 0);
        snapshot_slot_init(&slot);
        struct collector *collectors[] = { c };
        assert_int_equal(loop_init(&l, collectors, 1, store, &slot, INTERVAL_MS), 0);
        assert_int_equal(store_register_series(store, l.series, l.n_series), 0);
        for (int64_t k = 0; k < TICKS; k++)
                assert_int_equal(loop_tick_at(&l, EPOCH_MS + k * INTERVAL_MS, k * INTERVAL_MS * 1000000), 0);

        struct snapshot *snap = snapshot_slot_get(&slot);
        assert_non_null(snap);
        assert_int_equal(snap->timestamp_ms, EPOCH_MS + (TICKS - 1) * INTERVAL_MS);
        metrics(out, snap, c);
        snapshot_unref(snap);
        const struct web_context ctx = {
                .latest = &slot,
                .history = { &store_history_ops, store },
                .interval_ms = INTERVAL_MS,
                .time_scale = 1,
                .started_ms = EPOCH_MS,
        };
        /* /metrics has every value; the API's answers are of their shape. */
        static const struct param two_metrics[] = { { "metric", "neuron_device_memory_used_bytes" },
                                                    { "metric", "neuroncore_utilization_ratio" },
                                                    { "neuron_device", "0" } };
        answer(out, "/api/v1/devices", api_devices, &ctx, NULL, 0);
        answer(out, "/api/v1/devices/0", api_device, &ctx, NULL, 0);
        answer(out, "/api/v1/latest", api_latest, &ctx, two_metrics, 3);
        answer(out, "/api/v1/runtimes", api_runtimes, &ctx, NULL, 0);

        loop_done(&l);
        store_close(store);
        snapshot_slot_destroy(&slot);
        collector_close(c);
        unlink(db);
}

static char *read_file(const char *path, size_t *len) {
        FILE *f = fopen(path, "re");
        if (!f)
                return NULL;
        struct buf b = { 0 };
        char chunk[65536];
        size_t n;
        while ((n = fread(chunk, 1, sizeof(chunk), f)) > 0)
                buf_append(&b, chunk, n);
        fclose(f);
        *len = b.len;
        buf_append(&b, "", 1);
        return b.data;
}

/* The first line where two texts differ, for the failure message. */
static void first_difference(const char *want, const char *got, char *out, size_t size) {
        size_t line = 1, at = 0;
        while (want[at] && want[at] == got[at])
                line += want[at++] == '\n';
        size_t start = at;
        while (start > 0 && want[start - 1] != '\n')
                start--;
        snprintf(out, size, "line %zu:\n  golden: %.200s\n  now:    %.200s", line, want + start, got + start);
        for (char *p = out; (p = strchr(p, '\n')) && p[1]; p++)
                if (p[1] != ' ')
                        *p = ' ';
}

static void golden__model_after_ticks_from_a_fixed_epoch__as_committed(void **state) {
        char dir[] = "/tmp/neurond-test-golden-XXXXXX";
        bool update = getenv("UPDATE_GOLDEN") && strcmp(getenv("UPDATE_GOLDEN"), "1") == 0;
        int failed = 0;

        assert_non_null(mkdtemp(dir));
        for (size_t m = 0; m < sizeof(models) / sizeof(models[0]); m++) {
                char path[4096], diff[1024];
                struct buf got = { 0 };
                size_t len = 0;
                render(models[m].spec, dir, &got);
                /* The same ticks twice give the same bytes: the file can only
                 * differ for a reason. */
                struct buf again = { 0 };
                render(models[m].spec, dir, &again);
                assert_int_equal(got.len, again.len);
                assert_memory_equal(got.data, again.data, got.len);
                buf_free(&again);

                snprintf(path, sizeof(path), "%s/tests/data/golden/%s.txt", TOP_SRCDIR, models[m].name);
                if (update) {
                        FILE *f = fopen(path, "we");
                        assert_non_null(f);
                        assert_int_equal(fwrite(got.data, 1, got.len, f), got.len);
                        assert_int_equal(fclose(f), 0);
                        print_message("# updated %s\n", path);
                } else {
                        char *want = read_file(path, &len);
                        buf_append(&got, "", 1);
                        if (!want) {
                                print_message("# %s: missing (UPDATE_GOLDEN=1 writes it)\n", path);
                                failed++;
                        } else if (len != got.len - 1 || memcmp(want, got.data, len) != 0) {
                                first_difference(want, got.data, diff, sizeof(diff));
                                print_message("# %s: differs at %s (UPDATE_GOLDEN=1 accepts it)\n", path, diff);
                                failed++;
                        }
                        free(want);
                }
                buf_free(&got);
        }
        rmdir(dir);
        assert_int_equal(failed, 0);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(golden__model_after_ticks_from_a_fixed_epoch__as_committed),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
