/* Property test: every scenario on every catalog entry, hours of simulated
 * time in uneven steps, every physical limit checked at every tick, and
 * the runtimes' figures consistent with their cores' while runtimes start
 * and exit (the series list changes: values are followed by identity). */
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
        const char *tag;    /* runtime_tag, or NULL */
        const char *label3; /* direction, status, category, percentile ... */
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
                struct role r = { NONE, NONE, NONE, NULL, NULL };
                for (size_t l = 0; l < metric_label_count(m); l++) {
                        if (!s->label_values[l][0])
                                continue;
                        if (strcmp(m->labels[l], "neuron_device") == 0 ||
                            strcmp(m->labels[l], "neuron_device_index") == 0)
                                r.dev = label_int(s->label_values[l]);
                        else if (strcmp(m->labels[l], "neuroncore") == 0)
                                r.core = label_int(s->label_values[l]);
                        else if (strcmp(m->labels[l], "runtime_tag") == 0)
                                r.tag = s->label_values[l];
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
        struct series_desc *series; /* a copy of the collector's list, sorted by identity */
        size_t *pos;                /* pos[k]: where series[k] is in the collector's list */
        struct role *roles;
        size_t n;
        double *values, *last; /* this tick; last valid value of each series (by sorted position) */
        int64_t *last_ms;      /* when last was taken; -1 never */
        uint8_t *valid;
        size_t *rev; /* reverse link series */
        /* Per device sums for this check. */
        double *dma, *link, *hbm, *mem, *core_mem_sum;
        int64_t ticks;
        size_t list_changes;
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

static int series_cmp(const void *a, const void *b) {
        return memcmp(a, b, sizeof(struct series_desc));
}

static const struct series_desc *sort_base;

static int index_cmp(const void *a, const void *b) {
        return series_cmp(&sort_base[*(const size_t *) a], &sort_base[*(const size_t *) b]);
}

/* Sets up the per-series arrays for the collector's current list, carrying
 * each series' last value over from the old list by identity (a series
 * that stays keeps its counters; a runtime that came back is a new one). */
static void run_track(struct run *r) {
        const struct inventory *inv = &r->c->inv;
        size_t n = inv->n_series, n_old = r->n;
        size_t *order = calloc(n ? n : 1, sizeof(size_t));
        struct series_desc *sorted = calloc(n ? n : 1, sizeof(*sorted));
        double *last = calloc(n ? n : 1, sizeof(double));
        int64_t *last_ms = calloc(n ? n : 1, sizeof(int64_t));
        assert_true(order && sorted && last && last_ms);
        for (size_t i = 0; i < n; i++)
                order[i] = i;
        sort_base = inv->series;
        qsort(order, n, sizeof(*order), index_cmp);
        for (size_t k = 0; k < n; k++) {
                sorted[k] = inv->series[order[k]];
                const struct series_desc *hit =
                        n_old ? bsearch(&sorted[k], r->series, n_old, sizeof(*r->series), series_cmp) : NULL;
                last_ms[k] = -1;
                if (hit) {
                        last[k] = r->last[hit - r->series];
                        last_ms[k] = r->last_ms[hit - r->series];
                }
        }
        free(r->series);
        free(r->pos);
        free(r->last);
        free(r->last_ms);
        free(r->roles);
        free(r->values);
        free(r->valid);
        free(r->rev);
        r->n = n;
        r->series = sorted;
        r->pos = order;
        r->last = last;
        r->last_ms = last_ms;
        r->roles = calloc(n ? n : 1, sizeof(*r->roles));
        r->values = calloc(n ? n : 1, sizeof(double));
        r->valid = calloc(n ? n : 1, 1);
        assert_true(r->roles && r->values && r->valid);
        roles_build(inv, r->roles);
        r->rev = reverse_index(r);
}

#define FAIL(...)                                                                                                      \
        do {                                                                                                           \
                print_message("# %s, tick %lld: ", r->c->inv.backend, (long long) r->ticks);                           \
                print_message(__VA_ARGS__);                                                                            \
                fail();                                                                                                \
        } while (0)

/* The runtimes' figures against their cores' and the inventory's. */
static void check_runtimes(struct run *r) {
        const struct inventory *inv = &r->c->inv;
        const struct series_desc *s = inv->series;
        size_t nr = inv->n_runtimes;
        double *kinds = calloc(nr ? nr : 1, sizeof(double)), *device = calloc(nr ? nr : 1, sizeof(double));
        double *host = calloc(nr ? nr : 1, sizeof(double)), *host_sum = calloc(nr ? nr : 1, sizeof(double));
        double *vcpu = calloc(nr ? nr : 1, sizeof(double));
        size_t *n_kinds = calloc(nr ? nr : 1, sizeof(size_t));
        double *kinds_of_core = calloc(r->c->inv.n_devices * 8 + 1, sizeof(double));
        assert_true(kinds && device && host && host_sum && vcpu && n_kinds && kinds_of_core);

        for (size_t i = 0; i < r->n; i++) {
                const struct role *ro = &r->roles[i];
                const struct runtime_info *rt = NULL;
                if (ro->tag)
                        for (size_t k = 0; k < nr && !rt; k++)
                                if (strcmp(inv->runtimes[k].tag, ro->tag) == 0)
                                        rt = &inv->runtimes[k];
                if (ro->tag && !rt)
                        FAIL("series %zu names runtime %s, which is not listed\n", i, ro->tag);
                /* A core's runtime_tag is the runtime the inventory says holds it. */
                if (ro->core >= 0 && ro->tag && runtime_info_find_core(inv->runtimes, nr, (unsigned) ro->core) != rt)
                        FAIL("core %d says runtime %s holds it\n", ro->core, ro->tag);
                if (ro->core >= 0 && !ro->tag && s[i].metric == METRIC_CORE_UTILIZATION &&
                    runtime_info_find_core(inv->runtimes, nr, (unsigned) ro->core))
                        FAIL("core %d has no runtime_tag but is held\n", ro->core);
                if (!r->valid[i] || !rt)
                        continue;
                size_t k = (size_t) (rt - inv->runtimes);
                double v = r->values[i];
                switch (s[i].metric) {
                case METRIC_CORE_MEMORY_CONSTANTS:
                case METRIC_CORE_MEMORY_MODEL_CODE:
                case METRIC_CORE_MEMORY_SCRATCHPAD:
                case METRIC_CORE_MEMORY_RUNTIME:
                case METRIC_CORE_MEMORY_TENSORS:
                        kinds[k] += v;
                        n_kinds[k]++;
                        kinds_of_core[ro->core] += v;
                        break;
                case METRIC_RUNTIME_MEMORY_USED:
                        *(strcmp(ro->label3, "host") == 0 ? &host[k] : &device[k]) = v;
                        break;
                case METRIC_RUNTIME_HOST_MEMORY:
                        host_sum[k] += v;
                        break;
                case METRIC_RUNTIME_VCPU_USAGE:
                        vcpu[k] += v;
                        break;
                case METRIC_RUNTIME_LATENCY:
                case METRIC_RUNTIME_DEVICE_LATENCY:
                        /* Percentiles in order; total at least the device time. */
                        if (i > 0 && s[i - 1].metric == s[i].metric && r->valid[i - 1] && r->roles[i - 1].tag &&
                            strcmp(r->roles[i - 1].tag, ro->tag) == 0 && r->values[i - 1] > v)
                                FAIL("%s %s: %s below the percentile before\n", metric_table[s[i].metric].name, ro->tag,
                                     ro->label3);
                        if (s[i].metric == METRIC_RUNTIME_LATENCY) {
                                /* The device family follows with the same runtimes in the same order. */
                                for (size_t j = i + 1; j < r->n; j++)
                                        if (s[j].metric == METRIC_RUNTIME_DEVICE_LATENCY && r->roles[j].tag &&
                                            strcmp(r->roles[j].tag, ro->tag) == 0 &&
                                            strcmp(r->roles[j].label3, ro->label3) == 0) {
                                                if (r->valid[j] && r->values[j] > v * (1 + 1e-12))
                                                        FAIL("%s %s: device latency %g over total %g\n", ro->tag,
                                                             ro->label3, r->values[j], v);
                                                break;
                                        }
                        }
                        break;
                default:
                        break;
                }
        }
        for (size_t k = 0; k < nr; k++) {
                /* When every core of it reports (a device that is down hides its cores). */
                if (n_kinds[k] == 5 * (size_t) inv->runtimes[k].n_cores && device[k] != kinds[k])
                        FAIL("runtime %s: device memory %.0f, its cores' five kinds %.0f\n", inv->runtimes[k].tag,
                             device[k], kinds[k]);
                if (host[k] != host_sum[k])
                        FAIL("runtime %s: host memory %.0f, its categories %.0f\n", inv->runtimes[k].tag, host[k],
                             host_sum[k]);
                if (vcpu[k] > 1 + 1e-12)
                        FAIL("runtime %s: vCPU usage %g\n", inv->runtimes[k].tag, vcpu[k]);
        }
        /* A core's runtime memory is part of what the core holds. */
        for (size_t i = 0; i < r->n; i++)
                if (r->valid[i] && s[i].metric == METRIC_CORE_MEMORY_USED &&
                    kinds_of_core[r->roles[i].core] > r->values[i])
                        FAIL("core %d: runtime memory %.0f over the core's %.0f\n", r->roles[i].core,
                             kinds_of_core[r->roles[i].core], r->values[i]);
        free(kinds);
        free(device);
        free(host);
        free(host_sum);
        free(vcpu);
        free(n_kinds);
        free(kinds_of_core);
}

static void check_tick(struct run *r, int64_t now) {
        const struct catalog_chip *chip = r->inst->chip;
        const struct series_desc *s = r->c->inv.series;
        const size_t *rev = r->rev;
        unsigned n_dev = r->inst->devices;
        /* A logical core holds the share of its lnc physical cores. */
        double share = (double) chip->memory_bytes / r->c->inv.devices[0].core_count;
        double link_bw = r->inst->link_bandwidth + r->inst->cross_link_bandwidth;
        double sw_tx = 0, sw_rx = 0;
        bool sw_all = true;

        memset(r->dma, 0, n_dev * sizeof(double));
        memset(r->link, 0, n_dev * sizeof(double));
        memset(r->hbm, 0, n_dev * sizeof(double));
        memset(r->mem, 0, n_dev * sizeof(double));
        memset(r->core_mem_sum, 0, n_dev * sizeof(double));
        for (size_t k = 0; k < r->n; k++) {
                /* Walk in identity order: last[k] belongs to series[k]. */
                size_t i = r->pos[k];
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
                double dt = r->last_ms[k] >= 0 ? (double) (now - r->last_ms[k]) / 1000.0 : 0;
                double delta = r->last_ms[k] >= 0 ? v - r->last[k] : 0;
                if (metric_table[s[i].metric].type == METRIC_COUNTER && delta < 0)
                        FAIL("counter %zu went back from %.0f to %.0f\n", i, r->last[k], v);
                switch (s[i].metric) {
                case METRIC_CORE_UTILIZATION:
                case METRIC_CORE_PHYSICAL_UTILIZATION:
                case METRIC_DEVICE_POWER_UTILIZATION:
                case METRIC_RUNTIME_VCPU_USAGE:
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
                case METRIC_CORE_FLOPS:
                        /* No more than the core's peak (lnc physical cores). */
                        if (dt > 0 &&
                            delta / dt > chip->fp16_tflops * 1e12 / r->c->inv.devices[0].core_count * 1.000001)
                                FAIL("core %d at %.4g FLOP/s\n", ro->core, delta / dt);
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
                r->last[k] = v;
                r->last_ms[k] = now;
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
        check_runtimes(r);
}

/* Steps from 250 ms to 10 minutes, so that both short-term rates and long
 * integrations are checked. */
static const int64_t steps_ms[] = { 1000, 1000, 250, 5000, 60000, 1750, 300000, 17000, 600000, 1000, 45000 };

static size_t run_one(const char *instance, const char *scenario, const char *extra, unsigned seed) {
        char spec[512], err[256];
        struct run run = { 0 }, *r = &run;

        snprintf(spec, sizeof(spec), "model:%s,scenario=%s,seed=%u%s", instance, scenario, seed, extra);
        assert_int_equal(collector_open_spec(spec, &r->c, err, sizeof(err)), 0);
        r->inst = catalog_find(instance);
        unsigned nd = r->inst->devices;
        r->dma = calloc(nd, sizeof(double));
        r->link = calloc(nd, sizeof(double));
        r->hbm = calloc(nd, sizeof(double));
        r->mem = calloc(nd, sizeof(double));
        r->core_mem_sum = calloc(nd, sizeof(double));
        assert_true(r->dma && r->link && r->hbm && r->mem && r->core_mem_sum);
        run_track(r);

        int64_t now = START_MS + seed * 7919;
        int64_t end = now + SIM_HOURS * INT64_C(3600000);
        for (size_t k = 0; now < end; k++) {
                /* As the loop does: the list first, then the values. */
                int changed = r->c->ops->refresh(r->c, now);
                assert_true(changed >= 0);
                if (changed) {
                        r->list_changes++;
                        run_track(r);
                }
                struct sample_batch b = { .n = r->n, .values = r->values, .valid = r->valid };
                memset(r->valid, 0, r->n);
                assert_int_equal(r->c->ops->read(r->c, now, &b), 0);
                r->ticks++;
                check_tick(r, now);
                now += steps_ms[k % (sizeof(steps_ms) / sizeof(steps_ms[0]))];
        }
        size_t changes = r->list_changes;
        free(r->series);
        free(r->pos);
        free(r->rev);
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
        return changes;
}

static void model_read__every_scenario_and_instance__stays_within_physical_limits(void **state) {
        for (size_t i = 0; i < catalog_size; i++)
                for (size_t s = 0; s < sizeof(scenarios) / sizeof(scenarios[0]); s++) {
                        size_t changes = run_one(catalog[i].name, scenarios[s], "", (unsigned) (i * 10 + s + 1));
                        /* Runtimes appear at the first refresh; in three hours the
                         * redeployed inference server exits and comes back more
                         * than once. Idle has none. */
                        if (strcmp(scenarios[s], "idle") == 0)
                                assert_int_equal(changes, 0);
                        else if (strcmp(scenarios[s], "inference") == 0 || strcmp(scenarios[s], "mixed") == 0)
                                assert_true(changes >= 5);
                        else
                                assert_int_equal(changes, 1);
                }
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
