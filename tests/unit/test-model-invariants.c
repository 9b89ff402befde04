/* Property test: every scenario on every catalog entry, hours of simulated
 * time in uneven steps, every physical limit checked at every tick. */
#include "config.h"

#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "collectors/model.h"

#define START_MS INT64_C(1767225600000) /* 2026-01-01 */
#define SIM_HOURS 3
#define NONE -1
#define SWITCH -2

static const char *const scenarios[] = { "idle", "steady", "training", "inference", "moe", "mixed" };

/* What a series is about, from its labels. */
struct role {
        int dev, core, peer;
        const char *label3; /* direction, status, category, ... */
};

static int label_int(const char *v) {
        if (strcmp(v, "switch") == 0)
                return SWITCH;
        return (int) strtol(v, NULL, 10);
}

static void roles_build(const struct inventory *inv, struct role *roles) {
        for (size_t i = 0; i < inv->n_series; i++) {
                const struct series_desc *s = &inv->series[i];
                const struct metric_desc *m = &metric_table[s->metric];
                struct role r = { NONE, NONE, NONE, NULL };
                for (size_t l = 0; l < metric_label_count(m); l++) {
                        if (strcmp(m->labels[l], "neuron_device") == 0)
                                r.dev = label_int(s->label_values[l]);
                        else if (strcmp(m->labels[l], "neuroncore") == 0)
                                r.core = label_int(s->label_values[l]);
                        else if (strcmp(m->labels[l], "peer_device") == 0)
                                r.peer = label_int(s->label_values[l]);
                        else
                                r.label3 = s->label_values[l];
                }
                roles[i] = r;
        }
}

struct run {
        struct collector *c;
        const struct catalog_instance *inst;
        struct role *roles;
        size_t n;
        double *values, *last; /* this tick; last valid value of each series */
        int64_t *last_ms;      /* when last was taken; -1 never */
        uint8_t *valid;
        /* Per device sums for this check. */
        double *dma, *link, *hbm, *mem, *core_mem_sum;
        int64_t ticks;
};

/* Index of the reverse link series: rx{p,d} for tx{d,p}. */
static size_t *reverse_index(const struct run *r) {
        size_t *rev = calloc(r->n, sizeof(size_t));
        const struct series_desc *s = r->c->inv.series;
        assert_non_null(rev);
        for (size_t i = 0; i < r->n; i++) {
                rev[i] = SIZE_MAX;
                if (s[i].metric != METRIC_LINK_TX_BYTES || r->roles[i].peer < 0)
                        continue;
                for (size_t j = 0; j < r->n; j++)
                        if (s[j].metric == METRIC_LINK_RX_BYTES && r->roles[j].dev == r->roles[i].peer &&
                            r->roles[j].peer == r->roles[i].dev)
                                rev[i] = j;
                assert_true(rev[i] != SIZE_MAX);
        }
        return rev;
}

#define FAIL(...)                                                                                                      \
        do {                                                                                                           \
                print_message("# %s, tick %lld: ", r->c->inv.backend, (long long) r->ticks);                           \
                print_message(__VA_ARGS__);                                                                            \
                fail();                                                                                                \
        } while (0)

static void check_tick(struct run *r, const size_t *rev, int64_t now) {
        const struct catalog_chip *chip = r->inst->chip;
        const struct series_desc *s = r->c->inv.series;
        unsigned n_dev = r->inst->devices;
        double share = (double) chip->memory_bytes / chip->cores;
        double link_bw = r->inst->link_bandwidth + r->inst->cross_link_bandwidth;
        double sw_tx = 0, sw_rx = 0;
        bool sw_all = true;

        memset(r->dma, 0, n_dev * sizeof(double));
        memset(r->link, 0, n_dev * sizeof(double));
        memset(r->hbm, 0, n_dev * sizeof(double));
        memset(r->mem, 0, n_dev * sizeof(double));
        memset(r->core_mem_sum, 0, n_dev * sizeof(double));
        for (size_t i = 0; i < r->n; i++) {
                const struct role *ro = &r->roles[i];
                double v = r->values[i];
                if (!r->valid[i]) {
                        /* Only a missing device's series may be absent. */
                        if (s[i].metric == METRIC_DEVICE_UP)
                                FAIL("neuron_device_up %d absent\n", ro->dev);
                        if (s[i].metric == METRIC_LINK_TX_BYTES || s[i].metric == METRIC_LINK_RX_BYTES)
                                sw_all = false;
                        continue;
                }
                if (!isfinite(v) || v < 0)
                        FAIL("series %zu value %g\n", i, v);
                /* Rates over the time since the series was last seen. */
                double dt = r->last_ms[i] >= 0 ? (double) (now - r->last_ms[i]) / 1000.0 : 0;
                double delta = r->last_ms[i] >= 0 ? v - r->last[i] : 0;
                if (metric_table[s[i].metric].type == METRIC_COUNTER && delta < 0)
                        FAIL("counter %zu went back from %.0f to %.0f\n", i, r->last[i], v);
                switch (s[i].metric) {
                case METRIC_CORE_UTILIZATION:
                case METRIC_DEVICE_POWER_UTILIZATION:
                        if (v > 1)
                                FAIL("ratio %zu is %g\n", i, v);
                        break;
                case METRIC_CORE_MEMORY_USED:
                        if (v > share)
                                FAIL("core %d holds %.0f bytes, over its share %.0f\n", ro->core, v, share);
                        r->core_mem_sum[ro->dev] += v;
                        break;
                case METRIC_DEVICE_MEMORY_USED:
                        if (v > (double) chip->memory_bytes)
                                FAIL("device %d holds %.0f bytes\n", ro->dev, v);
                        r->mem[ro->dev] = v;
                        break;
                case METRIC_DEVICE_MEMORY_TOTAL:
                        if (v != (double) chip->memory_bytes)
                                FAIL("device %d total %.0f\n", ro->dev, v);
                        break;
                case METRIC_DEVICE_DMA_BYTES:
                        if (dt > 0)
                                r->dma[ro->dev] += delta / dt;
                        break;
                case METRIC_DEVICE_HBM_BYTES:
                        if (dt > 0)
                                r->hbm[ro->dev] += delta / dt;
                        break;
                case METRIC_LINK_TX_BYTES:
                case METRIC_LINK_RX_BYTES:
                        if (dt > 0)
                                r->link[ro->dev] += delta / dt;
                        if (ro->peer == SWITCH)
                                *(s[i].metric == METRIC_LINK_TX_BYTES ? &sw_tx : &sw_rx) += v;
                        else if (s[i].metric == METRIC_LINK_TX_BYTES && r->valid[rev[i]] && r->values[rev[i]] != v)
                                FAIL("link %d->%d: sent %.0f, peer received %.0f\n", ro->dev, ro->peer, v,
                                     r->values[rev[i]]);
                        break;
                default:
                        break;
                }
                r->last[i] = v;
                r->last_ms[i] = now;
        }
        /* Whole-byte counters may each lose under one byte to rounding. */
        for (unsigned d = 0; d < n_dev; d++) {
                if (r->dma[d] > chip->dma_bandwidth * (1 + 1e-9) + 8)
                        FAIL("device %u DMA at %.4g B/s, over %.4g\n", d, r->dma[d], chip->dma_bandwidth);
                if (r->hbm[d] > chip->memory_bandwidth * (1 + 1e-9) + 8)
                        FAIL("device %u HBM at %.4g B/s, over %.4g\n", d, r->hbm[d], chip->memory_bandwidth);
                if (r->link[d] > link_bw * (1 + 1e-9) + 8)
                        FAIL("device %u NeuronLink at %.4g B/s, over %.4g\n", d, r->link[d], link_bw);
                if (r->mem[d] != r->core_mem_sum[d])
                        FAIL("device %u memory %.0f, its cores hold %.0f\n", d, r->mem[d], r->core_mem_sum[d]);
        }
        /* Through a NeuronSwitch every byte sent is received somewhere. */
        if (r->inst->topology == TOPOLOGY_SWITCH && sw_all && fabs(sw_tx - sw_rx) > 1e-9 * sw_tx + 2.0 * n_dev)
                FAIL("switch: %.0f bytes sent, %.0f received\n", sw_tx, sw_rx);
}

/* Steps from 250 ms to 10 minutes, so that both short-term rates and long
 * integrations are checked. */
static const int64_t steps_ms[] = { 1000, 1000, 250, 5000, 60000, 1750, 300000, 17000, 600000, 1000, 45000 };

static void run_one(const char *instance, const char *scenario, const char *extra, unsigned seed) {
        char spec[512], err[256];
        struct run run = { 0 }, *r = &run;

        snprintf(spec, sizeof(spec), "model:%s,scenario=%s,seed=%u%s", instance, scenario, seed, extra);
        assert_int_equal(collector_open_spec(spec, &r->c, err, sizeof(err)), 0);
        r->inst = catalog_find(instance);
        r->n = r->c->inv.n_series;
        r->roles = calloc(r->n, sizeof(*r->roles));
        r->values = calloc(r->n, sizeof(double));
        r->last = calloc(r->n, sizeof(double));
        r->last_ms = calloc(r->n, sizeof(int64_t));
        r->valid = calloc(r->n, 1);
        unsigned nd = r->inst->devices;
        r->dma = calloc(nd, sizeof(double));
        r->link = calloc(nd, sizeof(double));
        r->hbm = calloc(nd, sizeof(double));
        r->mem = calloc(nd, sizeof(double));
        r->core_mem_sum = calloc(nd, sizeof(double));
        assert_true(r->roles && r->values && r->last && r->last_ms && r->valid && r->dma && r->link && r->hbm &&
                    r->mem && r->core_mem_sum);
        for (size_t i = 0; i < r->n; i++)
                r->last_ms[i] = -1;
        roles_build(&r->c->inv, r->roles);
        size_t *rev = reverse_index(r);

        int64_t now = START_MS + seed * 7919;
        int64_t end = now + SIM_HOURS * INT64_C(3600000);
        for (size_t k = 0; now < end; k++) {
                struct sample_batch b = { .n = r->n, .values = r->values, .valid = r->valid };
                memset(r->valid, 0, r->n);
                assert_int_equal(r->c->ops->read(r->c, now, &b), 0);
                r->ticks++;
                check_tick(r, rev, now);
                now += steps_ms[k % (sizeof(steps_ms) / sizeof(steps_ms[0]))];
        }
        free(rev);
        free(r->roles);
        free(r->values);
        free(r->last);
        free(r->last_ms);
        free(r->valid);
        free(r->dma);
        free(r->link);
        free(r->hbm);
        free(r->mem);
        free(r->core_mem_sum);
        collector_close(r->c);
}

static void model_read__every_scenario_and_instance__stays_within_physical_limits(void **state) {
        for (size_t i = 0; i < catalog_size; i++)
                for (size_t s = 0; s < sizeof(scenarios) / sizeof(scenarios[0]); s++)
                        run_one(catalog[i].name, scenarios[s], "", (unsigned) (i * 10 + s + 1));
}

/* The same limits hold while faults come and go. */
static void model_read__with_faults__stays_within_physical_limits(void **state) {
        for (size_t i = 0; i < catalog_size; i++) {
                const struct catalog_instance *m = &catalog[i];
                char extra[256];
                int n = snprintf(
                        extra, sizeof(extra),
                        ",fault=device_down:0@10m+20m,fault=core_stuck:1@5m+1h,fault=ecc:0:sram_ecc_uncorrected@1m"
                        ",fault=exec_errors:0:500@30m+5m");
                if (m->topology == TOPOLOGY_SWITCH)
                        snprintf(extra + n, sizeof(extra) - (size_t) n, ",fault=link_down:2:switch@15m+40m");
                else if (m->devices > 1)
                        snprintf(extra + n, sizeof(extra) - (size_t) n, ",fault=link_down:1:%u@15m+40m",
                                 m->devices == 4  ? 2u
                                 : m->devices > 4 ? 2u
                                                  : 0u);
                run_one(m->name, "training", extra, 99);
                run_one(m->name, "moe", extra, 98);
        }
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(model_read__every_scenario_and_instance__stays_within_physical_limits),
                cmocka_unit_test(model_read__with_faults__stays_within_physical_limits),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
