/* The health rules (lib/health.h) on synthetic snapshots: three devices of
 * two cores, linked in a triangle, one runtime holding every core. Each
 * rule trips, clears, and gives unknown without its metric; a device is
 * never healthy by default. */
#include "config.h"

#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "lib/health.h"
#include "lib/inventory.h"
#include "lib/snapshot.h"

#define DEVICES 3
#define CORES 2
#define GiB (1024.0 * 1024 * 1024)
#define ECC_TYPES 5

static const char *const ecc_names[ECC_TYPES] = { "mem_ecc_uncorrected", "mem_ecc_repairable_uncorrected",
                                                  "sram_ecc_uncorrected", "mem_ecc_corrected", "sram_ecc_corrected" };
enum { ECC_MEM, ECC_REPAIRABLE, ECC_SRAM, ECC_MEM_CORRECTED, ECC_SRAM_CORRECTED };

/* What one tick shows; omit[] leaves a family out. */
struct world {
        int64_t ts;
        double up[DEVICES], used[DEVICES], ecc[DEVICES][ECC_TYPES];
        double tx[DEVICES][DEVICES]; /* bytes sent from a to b, counters */
        double util[DEVICES * CORES], core_mem[DEVICES * CORES];
        double generic, hardware; /* the runtime's error counters */
        bool per_core;            /* the driver's per-core counters instead (sysfs), no runtime */
        bool workers;             /* the runtime is two processes under its tag, both on device 1 */
        double core_generic[DEVICES * CORES];
        bool omit[METRIC__COUNT];
};

static const bool linked[DEVICES][DEVICES] = { { 0, 1, 1 }, { 1, 0, 1 }, { 1, 1, 0 } };
static unsigned peers[DEVICES][2] = { { 1, 2 }, { 0, 2 }, { 0, 1 } };
static struct device_info devices[DEVICES];

static void make_devices(void) {
        for (unsigned d = 0; d < DEVICES; d++)
                devices[d] = (struct device_info){ .index = d,
                                                   .core_count = CORES,
                                                   .first_core = d * CORES,
                                                   .memory_bytes = (uint64_t) (32 * GiB),
                                                   .n_peers = 2,
                                                   .peers = peers[d] };
}

/* A busy, healthy world at ts. */
static struct world normal(int64_t ts) {
        struct world w = { .ts = ts };
        double s = (double) ts / 1000.0;
        for (int d = 0; d < DEVICES; d++) {
                w.up[d] = 1;
                w.used[d] = 16 * GiB;
                for (int p = 0; p < DEVICES; p++)
                        w.tx[d][p] = linked[d][p] ? 1e9 * s : 0;
        }
        for (int c = 0; c < DEVICES * CORES; c++) {
                w.util[c] = 0.6;
                w.core_mem[c] = 8 * GiB;
        }
        return w;
}

struct builder {
        struct series_desc series[256];
        double values[256];
        size_t n;
};

static void add(struct builder *b, const struct world *w, enum metric_id m, double v, const char *l0, const char *l1,
                const char *l2, const char *l3) {
        if (w->omit[m])
                return;
        struct series_desc *d = &b->series[b->n];
        const char *labels[4] = { l0, l1, l2, l3 };
        *d = (struct series_desc){ .metric = m };
        for (int k = 0; k < 4; k++)
                snprintf(d->label_values[k], sizeof(d->label_values[k]), "%s", labels[k] ? labels[k] : "");
        b->values[b->n++] = v;
}

static struct snapshot *build(const struct world *w) {
        struct builder b = { .n = 0 };
        char dev[8], peer[8], core[8];
        for (int d = 0; d < DEVICES; d++) {
                snprintf(dev, sizeof(dev), "%d", d);
                add(&b, w, METRIC_DEVICE_UP, w->up[d], dev, NULL, NULL, NULL);
                add(&b, w, METRIC_DEVICE_MEMORY_USED, w->used[d], dev, NULL, NULL, NULL);
                add(&b, w, METRIC_DEVICE_MEMORY_TOTAL, 32 * GiB, dev, NULL, NULL, NULL);
                for (int e = 0; e < ECC_TYPES; e++)
                        add(&b, w, METRIC_DEVICE_ECC_EVENTS, w->ecc[d][e], dev, ecc_names[e], NULL, NULL);
                for (int p = 0; p < DEVICES; p++) {
                        snprintf(peer, sizeof(peer), "%d", p);
                        if (!linked[d][p])
                                continue;
                        add(&b, w, METRIC_LINK_TX_BYTES, w->tx[d][p], dev, peer, NULL, NULL);
                        add(&b, w, METRIC_LINK_RX_BYTES, w->tx[p][d], dev, peer, NULL, NULL);
                }
                for (int k = 0; k < CORES; k++) {
                        int c = d * CORES + k;
                        snprintf(core, sizeof(core), "%d", c);
                        add(&b, w, METRIC_CORE_UTILIZATION, w->util[c], dev, core, w->per_core ? NULL : "rt", NULL);
                        add(&b, w, METRIC_CORE_MEMORY_USED, w->core_mem[c], dev, core, NULL, NULL);
                        if (w->per_core)
                                add(&b, w, METRIC_CORE_EXECUTION_ERRORS, w->core_generic[c], dev, core, NULL,
                                    "generic");
                }
        }
        if (!w->per_core) {
                add(&b, w, METRIC_CORE_EXECUTION_ERRORS, w->generic, NULL, NULL, "rt", "generic");
                add(&b, w, METRIC_CORE_EXECUTION_ERRORS, w->hardware, NULL, NULL, "rt", "hardware");
        }
        unsigned cores[DEVICES * CORES];
        for (unsigned c = 0; c < DEVICES * CORES; c++)
                cores[c] = c;
        struct runtime_info rt[2] = { { .pid = 100, .tag = "rt", .n_cores = DEVICES * CORES, .cores = cores } };
        if (w->workers) {
                rt[0].n_cores = 3;
                rt[1] = (struct runtime_info){
                        .pid = 101, .tag = "rt", .n_cores = DEVICES * CORES - 2, .cores = cores + 2
                };
        }
        struct snapshot *s = snapshot_new(b.n);
        assert_non_null(s);
        const struct inventory backend = { .n_runtimes = w->per_core ? 0 : w->workers ? 2 : 1, .runtimes = rt };
        s->set = series_set_new(1, b.series, b.n, &backend);
        assert_non_null(s->set);
        s->timestamp_ms = w->ts;
        for (size_t i = 0; i < b.n; i++) {
                s->values[i] = b.values[i];
                s->valid[i] = 1;
        }
        return s;
}

/* Runs the rules over a sequence of worlds as the loop does: each tick
 * with the one before and its result. */
struct run {
        struct snapshot *prev;
        struct health_result *result;
};

static const struct health_result *tick(struct run *r, const struct world *w) {
        struct snapshot *s = build(w);
        struct health_result *h = health_evaluate(devices, DEVICES, r->prev, s, r->result);
        assert_non_null(h);
        s->health = h;
        health_result_unref(r->result);
        r->result = health_result_ref(h);
        snapshot_unref(r->prev);
        r->prev = s;
        return h;
}

static void run_free(struct run *r) {
        snapshot_unref(r->prev);
        health_result_unref(r->result);
}

static const struct health_device *device(const struct health_result *h, unsigned d) {
        assert_true(d < h->n_devices);
        return &h->devices[d];
}

/* The finding of a rule on a device, or NULL. */
static const struct health_finding *finding(const struct health_result *h, unsigned d, enum health_rule_id rule) {
        const struct health_device *hd = device(h, d);
        for (size_t k = 0; k < hd->count; k++)
                if (h->findings[hd->first + k].rule == rule)
                        return &h->findings[hd->first + k];
        return NULL;
}

static void expect(const struct health_result *h, unsigned d, enum health_state state, enum health_rule_id rule) {
        const struct health_device *hd = device(h, d);
        const struct health_finding *f = finding(h, d, rule);
        if (hd->state != state || !f || f->state != state)
                fail_msg("device %u: %s (finding %s: %s), expected %s by %s", d, health_state_names[hd->state],
                         health_rules[rule].kind, f ? health_state_names[f->state] : "none", health_state_names[state],
                         health_rules[rule].kind);
}

static void expect_healthy(const struct health_result *h) {
        for (unsigned d = 0; d < DEVICES; d++)
                if (device(h, d)->state != HEALTH_HEALTHY) {
                        char text[HEALTH_REASON_MAX];
                        health_finding_text(&h->findings[device(h, d)->first], text, sizeof(text));
                        fail_msg("device %u is %s: %s", d, health_state_names[device(h, d)->state], text);
                }
}

#define T0 1800000000000LL

/* Two normal ticks: the first cannot tell rates, the second is healthy. */
static void start(struct run *r) {
        struct world w = normal(T0);
        const struct health_result *h = tick(r, &w);
        for (unsigned d = 0; d < DEVICES; d++)
                assert_int_equal(device(h, d)->state, HEALTH_UNKNOWN);
        w = normal(T0 + 1000);
        expect_healthy(tick(r, &w));
}

static void health__first_tick__unknown_until_rates_are_known(void **state) {
        struct run r = { 0 };
        struct world w = normal(T0);
        const struct health_result *h = tick(&r, &w);
        expect(h, 0, HEALTH_UNKNOWN, HEALTH_RULE_ECC_UNCORRECTED);
        assert_string_equal(device(h, 0)->action, "none: the backend cannot tell; see the reasons");
        w = normal(T0 + 1000);
        h = tick(&r, &w);
        expect_healthy(h);
        /* One change of state per device, from unknown to healthy. */
        assert_int_equal(h->n_events, DEVICES);
        assert_int_equal(h->events[0].kind, HEALTH_RULE__COUNT);
        assert_int_equal(h->events[0].state, HEALTH_HEALTHY);
        assert_int_equal(h->events_total[HEALTH_RULE__COUNT][HEALTH_INFO], DEVICES);
        assert_null(device(h, 0)->action);
        run_free(&r);
}

static void health__device_down__unhealthy_and_back(void **state) {
        struct run r = { 0 };
        start(&r);
        struct world w = normal(T0 + 2000);
        w.up[1] = 0;
        const struct health_result *h = tick(&r, &w);
        expect(h, 1, HEALTH_UNHEALTHY, HEALTH_RULE_DEVICE_DOWN);
        assert_int_equal(device(h, 1)->count, 1); /* a device that is gone is only that */
        assert_int_equal(device(h, 1)->since_ms, T0 + 2000);
        assert_non_null(strstr(device(h, 1)->action, "reset"));
        assert_int_equal(device(h, 0)->state, HEALTH_HEALTHY);
        /* Begin of the rule, change of state; critical both. */
        assert_int_equal(h->n_events, 2);
        assert_int_equal(h->events[0].kind, HEALTH_RULE_DEVICE_DOWN);
        assert_int_equal(h->events[0].phase, HEALTH_BEGIN);
        assert_int_equal(h->events[0].severity, HEALTH_CRITICAL);
        assert_int_equal(h->events[0].device, 1);
        assert_int_equal(h->events[1].phase, HEALTH_CHANGE);
        w = normal(T0 + 3000);
        w.up[1] = 0;
        h = tick(&r, &w);
        assert_int_equal(device(h, 1)->since_ms, T0 + 2000);
        assert_int_equal(h->n_events, 0);
        w = normal(T0 + 4000);
        h = tick(&r, &w);
        expect_healthy(h);
        assert_int_equal(h->events[0].kind, HEALTH_RULE_DEVICE_DOWN);
        assert_int_equal(h->events[0].phase, HEALTH_END);
        assert_int_equal(h->events[0].severity, HEALTH_INFO);
        run_free(&r);
}

static void health__uncorrected_ecc__unhealthy_for_an_hour(void **state) {
        struct run r = { 0 };
        start(&r);
        struct world w = normal(T0 + 2000);
        w.ecc[2][ECC_SRAM] = 1;
        const struct health_result *h = tick(&r, &w);
        expect(h, 2, HEALTH_UNHEALTHY, HEALTH_RULE_ECC_UNCORRECTED);
        assert_string_equal(finding(h, 2, HEALTH_RULE_ECC_UNCORRECTED)->detail, "sram_ecc_uncorrected");
        assert_true(finding(h, 2, HEALTH_RULE_ECC_UNCORRECTED)->value == 1);
        assert_non_null(strstr(device(h, 2)->action, "replace"));
        /* No more errors: held for an hour, then it clears. */
        w = normal(T0 + 3000);
        w.ecc[2][ECC_SRAM] = 1;
        h = tick(&r, &w);
        expect(h, 2, HEALTH_UNHEALTHY, HEALTH_RULE_ECC_UNCORRECTED);
        assert_int_equal(finding(h, 2, HEALTH_RULE_ECC_UNCORRECTED)->since_ms, T0 + 2000);
        w = normal(T0 + 2000 + 3600 * 1000);
        w.ecc[2][ECC_SRAM] = 1;
        h = tick(&r, &w);
        expect_healthy(h);
        run_free(&r);
}

static void health__repairable_ecc__unhealthy_with_a_reset(void **state) {
        struct run r = { 0 };
        start(&r);
        struct world w = normal(T0 + 2000);
        w.ecc[0][ECC_REPAIRABLE] = 2;
        const struct health_result *h = tick(&r, &w);
        expect(h, 0, HEALTH_UNHEALTHY, HEALTH_RULE_ECC_REPAIRABLE);
        assert_non_null(strstr(device(h, 0)->action, "reload the Neuron driver"));
        /* Held like the others, then gone an hour after the last one. */
        w = normal(T0 + 2000 + 3599 * 1000);
        w.ecc[0][ECC_REPAIRABLE] = 2;
        expect(tick(&r, &w), 0, HEALTH_UNHEALTHY, HEALTH_RULE_ECC_REPAIRABLE);
        w = normal(T0 + 2000 + 3600 * 1000);
        w.ecc[0][ECC_REPAIRABLE] = 2;
        h = tick(&r, &w);
        expect_healthy(h);
        assert_int_equal(h->events[0].kind, HEALTH_RULE_ECC_REPAIRABLE);
        assert_int_equal(h->events[0].phase, HEALTH_END);
        run_free(&r);
}

static void health__corrected_ecc_storm__degraded_while_it_lasts(void **state) {
        struct run r = { 0 };
        start(&r);
        struct world w = normal(T0 + 2000);
        /* Under the threshold: a corrected error a second. */
        for (int s = 0; s < 4; s++) {
                w = normal(T0 + 2000 + s * 1000);
                w.ecc[1][ECC_MEM_CORRECTED] = s;
                expect_healthy(tick(&r, &w));
        }
        w = normal(T0 + 6000);
        w.ecc[1][ECC_MEM_CORRECTED] = 13;
        const struct health_result *h = tick(&r, &w);
        expect(h, 1, HEALTH_DEGRADED, HEALTH_RULE_ECC_CORRECTED);
        assert_true(finding(h, 1, HEALTH_RULE_ECC_CORRECTED)->value == 10);
        w = normal(T0 + 7000);
        w.ecc[1][ECC_MEM_CORRECTED] = 13;
        expect_healthy(tick(&r, &w));
        run_free(&r);
}

static void health__link_down__degraded_on_both_ends(void **state) {
        struct run r = { 0 };
        start(&r);
        struct world w = normal(T0 + 2000);
        struct world before = normal(T0 + 1000);
        w.tx[0][1] = before.tx[0][1];
        w.tx[1][0] = before.tx[1][0];
        const struct health_result *h = tick(&r, &w);
        expect(h, 0, HEALTH_DEGRADED, HEALTH_RULE_LINK_DOWN);
        expect(h, 1, HEALTH_DEGRADED, HEALTH_RULE_LINK_DOWN);
        assert_string_equal(finding(h, 0, HEALTH_RULE_LINK_DOWN)->detail, "peer 1");
        assert_int_equal(device(h, 2)->state, HEALTH_HEALTHY);
        /* Links going quiet with the work is no fault: the job stopped. */
        struct world at2 = w;
        w = normal(T0 + 3000);
        memcpy(w.tx, at2.tx, sizeof(w.tx));
        for (int c = 0; c < DEVICES * CORES; c++)
                w.util[c] = 0;
        expect_healthy(tick(&r, &w));
        w = normal(T0 + 4000);
        expect_healthy(tick(&r, &w));
        /* Links that never carried traffic (devices of different jobs) are silent by design. */
        struct run quiet = { 0 };
        for (int s = 0; s < 3; s++) {
                w = normal(T0 + s * 1000);
                w.tx[0][1] = w.tx[1][0] = 0;
                h = tick(&quiet, &w);
        }
        expect_healthy(h);
        run_free(&quiet);
        run_free(&r);
}

static void health__execution_errors__degraded_on_the_runtime_devices(void **state) {
        struct run r = { 0 };
        start(&r);
        struct world w = normal(T0 + 2000);
        w.generic = 100;
        const struct health_result *h = tick(&r, &w);
        for (unsigned d = 0; d < DEVICES; d++)
                expect(h, d, HEALTH_DEGRADED, HEALTH_RULE_EXEC_ERRORS);
        assert_string_equal(finding(h, 0, HEALTH_RULE_EXEC_ERRORS)->detail, "runtime rt");
        assert_true(finding(h, 0, HEALTH_RULE_EXEC_ERRORS)->value == 100);
        w = normal(T0 + 3000);
        w.generic = 100;
        expect_healthy(tick(&r, &w));
        w = normal(T0 + 4000);
        w.generic = 100;
        w.hardware = 1;
        h = tick(&r, &w);
        expect(h, 2, HEALTH_DEGRADED, HEALTH_RULE_HARDWARE_ERRORS);
        w = normal(T0 + 5000);
        w.generic = 100;
        w.hardware = 1;
        expect_healthy(tick(&r, &w));
        /* Two processes under the tag: its errors count on every device
         * either holds, once on the device both hold cores of. */
        w = normal(T0 + 6000);
        w.generic = 150;
        w.hardware = 1;
        w.workers = true;
        h = tick(&r, &w);
        for (unsigned d = 0; d < DEVICES; d++) {
                expect(h, d, HEALTH_DEGRADED, HEALTH_RULE_EXEC_ERRORS);
                assert_true(finding(h, d, HEALTH_RULE_EXEC_ERRORS)->value == 50);
        }
        run_free(&r);
}

/* The driver's counters name the core (sysfs): the finding does, and the
 * core's state is degraded. Without runtimes, a stuck core is one idle
 * beside a busy core of its device. */
static void health__per_core_counters__the_core_is_named(void **state) {
        struct run r = { 0 };
        struct world w;
        for (int s = 0; s < 2; s++) {
                w = normal(T0 + s * 1000);
                w.per_core = true;
                tick(&r, &w);
        }
        expect_healthy(r.result);
        w = normal(T0 + 2000);
        w.per_core = true;
        w.core_generic[4] = 5;
        w.util[1] = 0;
        const struct health_result *h = tick(&r, &w);
        expect(h, 2, HEALTH_DEGRADED, HEALTH_RULE_EXEC_ERRORS);
        assert_int_equal(finding(h, 2, HEALTH_RULE_EXEC_ERRORS)->core, 4);
        assert_int_equal(h->cores[4].state, HEALTH_DEGRADED);
        assert_int_equal(h->cores[5].state, HEALTH_HEALTHY);
        expect(h, 0, HEALTH_DEGRADED, HEALTH_RULE_CORE_STUCK);
        assert_int_equal(finding(h, 0, HEALTH_RULE_CORE_STUCK)->core, 1);
        run_free(&r);
}

static void health__core_stuck__degraded_core_and_device(void **state) {
        struct run r = { 0 };
        start(&r);
        struct world w = normal(T0 + 2000);
        w.util[3] = 0;
        const struct health_result *h = tick(&r, &w);
        expect(h, 1, HEALTH_DEGRADED, HEALTH_RULE_CORE_STUCK);
        assert_int_equal(finding(h, 1, HEALTH_RULE_CORE_STUCK)->core, 3);
        assert_int_equal(h->cores[3].state, HEALTH_DEGRADED);
        assert_int_equal(h->cores[2].state, HEALTH_HEALTHY);
        /* Every core of the runtime idle, memory held: a model loaded, nothing to run. */
        w = normal(T0 + 3000);
        for (int c = 0; c < DEVICES * CORES; c++)
                w.util[c] = 0;
        expect_healthy(tick(&r, &w));
        /* An idle core holding only the driver's few pages is a free core. */
        w = normal(T0 + 4000);
        w.util[3] = 0;
        w.core_mem[3] = 64e6;
        expect_healthy(tick(&r, &w));
        run_free(&r);
}

static void health__hbm_full__degraded(void **state) {
        struct run r = { 0 };
        start(&r);
        struct world w = normal(T0 + 2000);
        w.used[2] = 31 * GiB;
        const struct health_result *h = tick(&r, &w);
        expect(h, 2, HEALTH_DEGRADED, HEALTH_RULE_HBM_FULL);
        assert_true(fabs(finding(h, 2, HEALTH_RULE_HBM_FULL)->value - 31.0 / 32) < 1e-9);
        w = normal(T0 + 3000);
        w.used[2] = 30 * GiB;
        expect_healthy(tick(&r, &w));
        run_free(&r);
}

/* Each rule without its figures: unknown, never healthy. */
static void health__each_rule_without_its_metric__unknown(void **state) {
        for (unsigned id = 0; id < HEALTH_RULE__COUNT; id++) {
                const struct health_rule *rule = &health_rules[id];
                struct run r = { 0 };
                const struct health_result *h = NULL;
                for (int s = 0; s < 3; s++) {
                        struct world w = normal(T0 + s * 1000);
                        /* A backend without link counters has neither direction. */
                        w.omit[rule->metric] = true;
                        w.omit[METRIC_LINK_RX_BYTES] = rule->metric == METRIC_LINK_TX_BYTES;
                        h = tick(&r, &w);
                }
                const struct health_finding *f = finding(h, 0, id);
                if (!f || f->state != HEALTH_UNKNOWN || device(h, 0)->state != HEALTH_UNKNOWN)
                        fail_msg("rule %s without %s: device 0 is %s", rule->kind, metric_table[rule->metric].name,
                                 health_state_names[device(h, 0)->state]);
                run_free(&r);
        }
}

/* A degraded device with a rule it cannot evaluate is degraded: what was
 * found outranks what could not be told. */
static void health__degraded_and_unknown__degraded(void **state) {
        struct run r = { 0 };
        for (int s = 0; s < 3; s++) {
                struct world w = normal(T0 + s * 1000);
                w.omit[METRIC_LINK_TX_BYTES] = w.omit[METRIC_LINK_RX_BYTES] = true;
                w.used[0] = 31.5 * GiB;
                tick(&r, &w);
        }
        expect(r.result, 0, HEALTH_DEGRADED, HEALTH_RULE_HBM_FULL);
        assert_int_equal(finding(r.result, 0, HEALTH_RULE_LINK_DOWN)->state, HEALTH_UNKNOWN);
        assert_int_equal(health_worst(r.result), HEALTH_DEGRADED);
        run_free(&r);
}

static void health__names__look_up_both_ways(void **state) {
        assert_int_equal(health_kind_lookup("link_down"), HEALTH_RULE_LINK_DOWN);
        assert_int_equal(health_kind_lookup("state"), HEALTH_RULE__COUNT);
        assert_true(health_kind_lookup("nope") < 0);
        assert_int_equal(health_severity_lookup("critical"), HEALTH_CRITICAL);
        for (unsigned id = 0; id < HEALTH_RULE__COUNT; id++) {
                assert_non_null(health_rules[id].reason);
                assert_non_null(health_rules[id].action);
        }
}

int main(void) {
        make_devices();
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(health__first_tick__unknown_until_rates_are_known),
                cmocka_unit_test(health__device_down__unhealthy_and_back),
                cmocka_unit_test(health__uncorrected_ecc__unhealthy_for_an_hour),
                cmocka_unit_test(health__repairable_ecc__unhealthy_with_a_reset),
                cmocka_unit_test(health__corrected_ecc_storm__degraded_while_it_lasts),
                cmocka_unit_test(health__link_down__degraded_on_both_ends),
                cmocka_unit_test(health__execution_errors__degraded_on_the_runtime_devices),
                cmocka_unit_test(health__core_stuck__degraded_core_and_device),
                cmocka_unit_test(health__per_core_counters__the_core_is_named),
                cmocka_unit_test(health__hbm_full__degraded),
                cmocka_unit_test(health__each_rule_without_its_metric__unknown),
                cmocka_unit_test(health__degraded_and_unknown__degraded),
                cmocka_unit_test(health__names__look_up_both_ways),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
