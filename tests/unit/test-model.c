/* The device model through the collector interface: spec parsing, series,
 * determinism, and faults from the spec and from another thread. */
#include "config.h"

#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "collectors/model.h"
#include "tests/unit/assert-double.h"

#define T0 INT64_C(1767225600000)

struct fixture {
        struct collector *c;
        double *values;
        uint8_t *valid;
};

static struct fixture *open_spec(const char *spec) {
        struct fixture *f = calloc(1, sizeof(*f));
        char err[256];
        assert_non_null(f);
        int r = collector_open_spec(spec, &f->c, err, sizeof(err));
        if (r < 0)
                print_message("# %s: %s\n", spec, err);
        assert_int_equal(r, 0);
        f->values = calloc(f->c->inv.n_series, sizeof(double));
        f->valid = calloc(f->c->inv.n_series, 1);
        assert_true(f->values && f->valid);
        return f;
}

/* A refresh and a read, as the loop does them. Series indexes found
 * before a refresh that changed the list are stale: the tests find them
 * after the first read, and in scenarios whose runtimes all stay. */
static int read_at(struct fixture *f, int64_t ms) {
        int changed = f->c->ops->refresh(f->c, ms);
        assert_true(changed >= 0);
        if (changed) {
                free(f->values);
                free(f->valid);
                f->values = calloc(f->c->inv.n_series, sizeof(double));
                f->valid = calloc(f->c->inv.n_series, 1);
                assert_true(f->values && f->valid);
        }
        struct sample_batch b = { .n = f->c->inv.n_series, .values = f->values, .valid = f->valid };
        memset(f->valid, 0, b.n);
        assert_int_equal(f->c->ops->read(f->c, ms, &b), 0);
        return changed;
}

static void fixture_free(struct fixture *f) {
        collector_close(f->c);
        free(f->values);
        free(f->valid);
        free(f);
}

/* Index of the series with these label values; NULL matches any value. */
static size_t find4(const struct fixture *f, enum metric_id metric, const char *l0, const char *l1, const char *l2,
                    const char *l3) {
        const char *want[4] = { l0, l1, l2, l3 };
        for (size_t i = 0; i < f->c->inv.n_series; i++) {
                const struct series_desc *s = &f->c->inv.series[i];
                if (s->metric != metric)
                        continue;
                bool ok = true;
                for (size_t l = 0; l < metric_label_count(&metric_table[metric]) && ok; l++)
                        ok = !want[l] || strcmp(s->label_values[l], want[l]) == 0;
                if (ok)
                        return i;
        }
        fail_msg("no series %s{%s,%s,%s,%s}", metric_table[metric].name, l0 ? l0 : "*", l1 ? l1 : "*", l2 ? l2 : "*",
                 l3 ? l3 : "*");
        return 0;
}

static size_t find(const struct fixture *f, enum metric_id metric, const char *l0, const char *l1, const char *l2) {
        return find4(f, metric, l0, l1, l2, NULL);
}

static size_t count_metric(const struct fixture *f, enum metric_id metric) {
        size_t n = 0;
        for (size_t i = 0; i < f->c->inv.n_series; i++)
                n += f->c->inv.series[i].metric == metric;
        return n;
}

static void expect_open_error(const char *spec, const char *fragment) {
        struct collector *c = NULL;
        char err[256];
        assert_int_equal(collector_open_spec(spec, &c, err, sizeof(err)), -EINVAL);
        assert_null(c);
        if (!strstr(err, fragment))
                fail_msg("'%s' gave '%s', expected it to mention '%s'", spec, err, fragment);
}

static void model_open__bad_options__explain(void **state) {
        expect_open_error("model:p5.48xlarge", "unknown instance type");
        expect_open_error("model:trn1.2xlarge,scenario=chaos", "unknown scenario");
        expect_open_error("model:trn1.2xlarge,seed=-1", "seed");
        expect_open_error("model:trn1.2xlarge,speed=0", "speed");
        expect_open_error("model:trn1.2xlarge,memory_categories=yes", "memory_categories");
        expect_open_error("model:trn1.2xlarge,fault=meltdown:0", "unknown kind");
        expect_open_error("model:trn1.2xlarge,fault=device_down:1", "device 1 does not exist");
        expect_open_error("model:trn1.32xlarge,fault=core_stuck:32", "core 32 does not exist");
        expect_open_error("model:trn1.32xlarge,fault=link_down:0:10", "no NeuronLink to device 10");
        expect_open_error("model:trn1.32xlarge,fault=link_down:0:switch", "no NeuronSwitch port");
        expect_open_error("model:trn1.32xlarge,fault=ecc:0:dram", "ECC type");
        expect_open_error("model:trn1.32xlarge,fault=device_down:0+0s", "duration");
        expect_open_error("model:trn1.32xlarge,fault=device_down:0+10s@5s", "before");
        expect_open_error("model:trn1.32xlarge,fault=exec_errors:0:-3", "rate");
        expect_open_error("model:trn1.32xlarge,fault=device_down", "takes <device>");
        /* Beyond a year: refused rather than overflowing the schedule. */
        expect_open_error("model:trn1.32xlarge,fault=device_down:0@9999999999999h", "start");
        expect_open_error("model:trn1.32xlarge,fault=device_down:0+400d", "duration");
}

static void model_fault_format__parsed_faults__round_trip(void **state) {
        static const char *const texts[] = {
                "device_down:3@10s+30s",        "core_stuck:17",          "ecc:2:sram_ecc_uncorrected@1m",
                "link_down:4:switch+2h",        "link_down:0:1@250ms+1s", "exec_errors:5:12.5@5m+10s",
                "ecc:0:mem_ecc_corrected:5+1m", "hbm_full:3:0.98",        "hbm_full:2:0.99@1m+10m",
        };
        for (size_t i = 0; i < sizeof(texts) / sizeof(texts[0]); i++) {
                struct model_fault f;
                char err[128], out[128];
                assert_int_equal(model_fault_parse(texts[i], &f, err, sizeof(err)), 0);
                model_fault_format(&f, out, sizeof(out));
                assert_string_equal(out, texts[i]);
        }
        struct model_fault f;
        char err[128];
        assert_int_equal(model_fault_parse("ecc:1", &f, err, sizeof(err)), 0);
        assert_int_equal(f.ecc, DRIVER_ECC_MEM_UNCORRECTED);
        assert_int_equal(f.duration_ms, 0);
        assert_int_equal(model_fault_parse("exec_errors:1", &f, err, sizeof(err)), 0);
        assert_true(f.rate == 100 && f.duration_ms == 10000);
        assert_int_equal(model_fault_parse("device_down:1", &f, err, sizeof(err)), 0);
        assert_true(f.duration_ms == MODEL_FAULT_FOREVER);
        assert_int_equal(model_fault_parse("hbm_full:1", &f, err, sizeof(err)), 0);
        assert_true(f.rate == 0.98 && f.duration_ms == MODEL_FAULT_FOREVER);
        assert_int_equal(model_fault_parse("ecc:1:sram_ecc_corrected", &f, err, sizeof(err)), 0);
        assert_true(f.rate == 1);
        assert_int_equal(model_fault_parse("hbm_full:1:1.5", &f, err, sizeof(err)), -EINVAL);
        assert_int_equal(model_fault_parse("ecc:1:mem_ecc_corrected:0", &f, err, sizeof(err)), -EINVAL);
}

/* A corrected ECC storm counts its rate; a leak fills the device's memory. */
static void model_read__ecc_storm_and_hbm_full__show_in_the_series(void **state) {
        struct fixture *f = open_spec("model:trn1.32xlarge,scenario=steady,seed=4");
        struct model_fault fault;
        char err[128];
        read_at(f, T0);
        size_t corrected = find(f, METRIC_DEVICE_ECC_EVENTS, "1", "mem_ecc_corrected", NULL);
        size_t used = find(f, METRIC_DEVICE_MEMORY_USED, "2", NULL, NULL);
        size_t total = find(f, METRIC_DEVICE_MEMORY_TOTAL, "2", NULL, NULL);
        assert_true(f->valid[corrected] && f->values[corrected] == 0);
        const char *faults[] = { "ecc:1:mem_ecc_corrected:5+10s", "hbm_full:2" };
        for (size_t i = 0; i < 2; i++) {
                assert_int_equal(model_fault_parse(faults[i], &fault, err, sizeof(err)), 0);
                assert_int_equal(model_fault_inject(f->c, &fault, err, sizeof(err)), 0);
        }
        for (int s = 1; s <= 20; s++)
                read_at(f, T0 + s * 1000);
        assert_true(f->values[corrected] == 50);
        assert_true(f->values[used] / f->values[total] > 0.97);
        fixture_free(f);
}

/* Series counts per instance: the store and the 64 MiB goal are sized on them. */
static void model_open__trn3_gen2__has_every_core_and_device(void **state) {
        struct fixture *f = open_spec("model:trn3-gen2-ultraserver,scenario=moe");
        assert_int_equal(f->c->inv.n_devices, 144);
        /* LNC 2 by default on Trainium3: 576 logical cores of 1152 physical. */
        assert_int_equal(f->c->inv.lnc, 2);
        assert_int_equal(count_metric(f, METRIC_CORE_UTILIZATION), 576);
        assert_int_equal(count_metric(f, METRIC_CORE_PHYSICAL_UTILIZATION), 1152);
        assert_int_equal(count_metric(f, METRIC_CORE_MEMORY_USED), 576);
        assert_int_equal(count_metric(f, METRIC_CORE_MEMORY_CATEGORY), 0);
        assert_int_equal(count_metric(f, METRIC_DEVICE_ECC_EVENTS), 5 * 144);
        /* NeuronSwitch: one port per device, not 144 x 143 pairs. */
        assert_int_equal(count_metric(f, METRIC_LINK_TX_BYTES), 144);
        assert_int_equal(count_metric(f, METRIC_CORE_BUSY_SECONDS), 576);
        /* Before the first refresh no runtime is listed: 3 per logical core,
         * 2 physical ones, 14 per device, 2 per switch port. */
        assert_int_equal(f->c->inv.n_series, 576 * 5 + 144 * 14 + 144 * 2);
        /* The inventory still lists every reachable device as a peer. */
        assert_int_equal(f->c->inv.devices[7].n_peers, 143);
        find(f, METRIC_LINK_RX_BYTES, "143", "switch", NULL);

        /* One MoE runtime holds every core: five memory kinds and a FLOP
         * counter per core, and 35 series of its own. */
        assert_int_equal(read_at(f, T0), 1);
        assert_int_equal(f->c->inv.n_runtimes, 1);
        assert_int_equal(f->c->inv.runtimes[0].n_cores, 576);
        assert_int_equal(count_metric(f, METRIC_CORE_MEMORY_TENSORS), 576);
        assert_int_equal(count_metric(f, METRIC_CORE_FLOPS), 576);
        assert_int_equal(f->c->inv.n_series, 576 * 11 + 144 * 14 + 144 * 2 + 35);
        assert_int_equal(read_at(f, T0 + 1000), 0);
        fixture_free(f);

        f = open_spec("model:trn2-ultraserver,scenario=training");
        assert_int_equal(count_metric(f, METRIC_LINK_TX_BYTES), 64 * 6);
        find(f, METRIC_LINK_TX_BYTES, "5", "53", NULL);
        fixture_free(f);
}

/* Logical NeuronCores: LNC 2 by default on Trainium2 and Trainium3, as the
 * tools do; neuroncore is the logical index, the physical cores a
 * breakdown (neuron-monitor's v3d object) whose mean is the logical one. */
static void model_open__lnc__logical_cores_with_physical_breakdown(void **state) {
        struct fixture *f = open_spec("model:trn2.48xlarge,scenario=training");
        assert_int_equal(f->c->inv.lnc, 2);
        assert_int_equal(f->c->inv.devices[3].core_count, 4);
        assert_int_equal(f->c->inv.devices[3].physical_core_count, 8);
        assert_int_equal(f->c->inv.devices[3].first_core, 12);
        assert_int_equal(count_metric(f, METRIC_CORE_UTILIZATION), 64);
        read_at(f, T0);
        read_at(f, T0 + 3000);
        size_t u = find(f, METRIC_CORE_UTILIZATION, "3", "13", "training-0");
        size_t p0 = find(f, METRIC_CORE_PHYSICAL_UTILIZATION, "3", "13", "26");
        size_t p1 = find(f, METRIC_CORE_PHYSICAL_UTILIZATION, "3", "13", "27");
        assert_true(f->valid[u] && f->valid[p0] && f->valid[p1]);
        assert_double_near(f->values[u], (f->values[p0] + f->values[p1]) / 2, 1e-12);
        /* Memory of a logical core: both physical cores'. */
        size_t mem = find(f, METRIC_CORE_MEMORY_USED, "3", "13", NULL);
        assert_true(f->values[mem] > 96.0 * 1073741824.0 / 8);
        fixture_free(f);

        f = open_spec("model:trn2.48xlarge,lnc=1");
        assert_int_equal(f->c->inv.lnc, 1);
        assert_int_equal(count_metric(f, METRIC_CORE_UTILIZATION), 128);
        assert_int_equal(count_metric(f, METRIC_CORE_PHYSICAL_UTILIZATION), 0);
        fixture_free(f);

        f = open_spec("model:trn1.32xlarge");
        assert_int_equal(f->c->inv.lnc, 1);
        assert_int_equal(count_metric(f, METRIC_CORE_UTILIZATION), 32);
        fixture_free(f);

        expect_open_error("model:trn1.32xlarge,lnc=2", "lnc=2 needs NeuronCore-v3");
        expect_open_error("model:trn2.48xlarge,lnc=4", "lnc");
        /* Fault targets are logical cores too. */
        expect_open_error("model:trn2.48xlarge,fault=core_stuck:64", "core 64 does not exist");
}

static void model_read__memory_categories__sum_to_core_memory(void **state) {
        struct fixture *f = open_spec("model:inf2.24xlarge,scenario=mixed,memory_categories=on");
        assert_int_equal(count_metric(f, METRIC_CORE_MEMORY_CATEGORY), 12 * 11);
        read_at(f, T0);
        read_at(f, T0 + 5000);
        for (unsigned c = 0; c < 12; c++) {
                char dev[8], core[8];
                snprintf(dev, sizeof(dev), "%u", c / 2);
                snprintf(core, sizeof(core), "%u", c);
                static const char *const cats[] = {
                        "model_code",     "tensors",       "constants",    "model_shared_scratchpad",
                        "runtime_memory", "driver_memory", "collectives",  "nonshared_scratchpad",
                        "notifications",  "dma_rings",     "uncategorized"
                };
                double sum = 0;
                for (size_t k = 0; k < 11; k++) {
                        size_t i = find(f, METRIC_CORE_MEMORY_CATEGORY, dev, core, cats[k]);
                        assert_true(f->valid[i] && f->values[i] >= 0);
                        sum += f->values[i];
                }
                assert_true(sum == f->values[find(f, METRIC_CORE_MEMORY_USED, dev, core, NULL)]);
        }
        fixture_free(f);
}

/* Same seed and timestamps, same series; another seed, other series. */
static void model_read__same_seed__same_series(void **state) {
        static const char *const specs[] = {
                "model:trn2.48xlarge,scenario=training,seed=7",
                "model:trn2.48xlarge,scenario=training,seed=7",
                "model:trn2.48xlarge,scenario=training,seed=8",
        };
        struct fixture *f[3];
        for (int k = 0; k < 3; k++)
                f[k] = open_spec(specs[k]);
        bool differs = false;
        for (int64_t t = T0; t < T0 + 600000; t += 1000 + (t % 7) * 100) {
                for (int k = 0; k < 3; k++)
                        read_at(f[k], t);
                size_t n = f[0]->c->inv.n_series;
                assert_memory_equal(f[0]->values, f[1]->values, n * sizeof(double));
                assert_memory_equal(f[0]->valid, f[1]->valid, n);
                differs = differs || memcmp(f[0]->values, f[2]->values, n * sizeof(double)) != 0;
        }
        assert_true(differs);
        for (int k = 0; k < 3; k++)
                fixture_free(f[k]);
}

/* Training alternates compute near full utilization with all-reduce
 * phases that move the NeuronLink traffic; idle is idle. */
static void model_read__training_and_idle__look_like_their_workloads(void **state) {
        struct fixture *f = open_spec("model:trn1.32xlarge,scenario=training,seed=2");
        read_at(f, T0 - 1000);
        size_t u = find(f, METRIC_CORE_UTILIZATION, "0", "0", "training-0");
        size_t tx = find(f, METRIC_LINK_TX_BYTES, "0", "1", NULL);
        double busy = 0, quiet = 1, prev_tx = 0, max_rate = 0, min_rate = 1e30;
        for (int s = 0; s < 60; s++) {
                read_at(f, T0 + s * 1000);
                busy = f->values[u] > busy ? f->values[u] : busy;
                quiet = f->values[u] < quiet ? f->values[u] : quiet;
                if (s > 0) {
                        double rate = f->values[tx] - prev_tx;
                        max_rate = rate > max_rate ? rate : max_rate;
                        min_rate = rate < min_rate ? rate : min_rate;
                }
                prev_tx = f->values[tx];
        }
        assert_true(busy > 0.85 && quiet < 0.2);
        assert_true(max_rate > 10 * min_rate && max_rate > 1e10);
        fixture_free(f);

        f = open_spec("model:inf2.xlarge,scenario=idle");
        read_at(f, T0);
        read_at(f, T0 + 60000);
        assert_int_equal(f->c->inv.n_runtimes, 0);
        assert_true(f->values[find(f, METRIC_CORE_UTILIZATION, "0", "1", "")] == 0);
        assert_true(f->values[find(f, METRIC_DEVICE_DMA_BYTES, "0", "host_to_device", NULL)] == 0);
        fixture_free(f);
}

/* Mixed: a device that holds memory but runs nothing. */
static void model_read__mixed__has_allocated_but_idle_cores(void **state) {
        struct fixture *f = open_spec("model:trn2.48xlarge,scenario=mixed");
        read_at(f, T0);
        read_at(f, T0 + 30000);
        /* 16 devices of 4 logical cores: 8 train, 4 infer, then 2
         * allocated but idle, 2 free. */
        size_t u = find(f, METRIC_CORE_UTILIZATION, "12", "48", NULL);
        size_t mem = find(f, METRIC_CORE_MEMORY_USED, "12", "48", NULL);
        assert_true(f->values[u] == 0 && f->values[mem] > 0.5 * 96.0 * 1073741824.0 / 4);
        /* The idle core is held by a runtime known by its pid. */
        const struct runtime_info *holder = runtime_info_find_core(f->c->inv.runtimes, f->c->inv.n_runtimes, 48);
        assert_non_null(holder);
        char pid[16];
        snprintf(pid, sizeof(pid), "%u", holder->pid);
        assert_string_equal(holder->tag, pid);
        assert_string_equal(f->c->inv.series[u].label_values[2], pid);
        size_t free_mem = find(f, METRIC_CORE_MEMORY_USED, "15", "60", NULL);
        assert_true(f->values[free_mem] < 0.01 * 96.0 * 1073741824.0 / 4);
        assert_null(runtime_info_find_core(f->c->inv.runtimes, f->c->inv.n_runtimes, 60));
        assert_string_equal(f->c->inv.series[find(f, METRIC_CORE_UTILIZATION, "15", "60", NULL)].label_values[2], "");
        assert_true(f->values[find(f, METRIC_CORE_UTILIZATION, "0", "0", "training-0")] > 0);
        fixture_free(f);
}

static void model_read__device_down_fault__device_goes_and_returns(void **state) {
        struct fixture *f = open_spec("model:trn1.32xlarge,scenario=training,fault=device_down:2@10s+30s");
        read_at(f, T0);
        size_t up = find(f, METRIC_DEVICE_UP, "2", NULL, NULL);
        size_t util = find(f, METRIC_CORE_UTILIZATION, "2", "4", NULL);
        size_t dma = find(f, METRIC_DEVICE_DMA_BYTES, "2", "device_to_device", NULL);
        size_t tx_out = find(f, METRIC_LINK_TX_BYTES, "2", "3", NULL);
        size_t tx_in = find(f, METRIC_LINK_TX_BYTES, "3", "2", NULL);
        size_t other = find(f, METRIC_CORE_UTILIZATION, "3", "6", NULL);

        read_at(f, T0 + 5000);
        assert_true(f->valid[up] && f->values[up] == 1 && f->valid[util]);
        double dma_before = f->values[dma];
        read_at(f, T0 + 12000);
        double in_before = f->values[tx_in];
        read_at(f, T0 + 25000);
        assert_true(f->valid[up] && f->values[up] == 0);
        assert_false(f->valid[util] || f->valid[dma] || f->valid[tx_out]);
        /* The rest keeps reporting; nothing is sent to the missing device. */
        assert_true(f->valid[other] && f->valid[tx_in] && f->values[tx_in] == in_before);
        read_at(f, T0 + 45000);
        assert_true(f->valid[up] && f->values[up] == 1 && f->valid[util] && f->valid[dma]);
        assert_true(f->values[dma] >= dma_before);
        fixture_free(f);
}

static void model_read__injected_faults__show_in_the_series(void **state) {
        struct fixture *f = open_spec("model:trn1.32xlarge,scenario=training,seed=4");
        struct model_fault fault;
        char err[128];
        read_at(f, T0);
        size_t util = find(f, METRIC_CORE_UTILIZATION, "2", "5", NULL);
        size_t mem = find(f, METRIC_CORE_MEMORY_USED, "2", "5", NULL);
        size_t ecc = find(f, METRIC_DEVICE_ECC_EVENTS, "1", "sram_ecc_uncorrected", NULL);
        size_t ecc_other = find(f, METRIC_DEVICE_ECC_EVENTS, "1", "mem_ecc_uncorrected", NULL);
        size_t tx = find(f, METRIC_LINK_TX_BYTES, "0", "1", NULL);
        size_t rx_back = find(f, METRIC_LINK_RX_BYTES, "0", "1", NULL);
        /* Failed executions on core 3 count against the runtime holding it. */
        size_t errors = find4(f, METRIC_CORE_EXECUTION_ERRORS, "", "", "training-0", "generic");
        size_t with_err = find4(f, METRIC_CORE_EXECUTION_STATUS, "", "", "training-0", "completed_with_err");
        assert_true(model_is(f->c));
        const char *faults[] = { "core_stuck:5", "ecc:1:sram_ecc_uncorrected", "link_down:0:1",
                                 "exec_errors:3:50+10s" };
        for (size_t i = 0; i < 4; i++) {
                assert_int_equal(model_fault_parse(faults[i], &fault, err, sizeof(err)), 0);
                assert_int_equal(model_fault_inject(f->c, &fault, err, sizeof(err)), 0);
        }
        struct model_fault_status list[8];
        assert_int_equal(model_fault_list(f->c, list, 8), 4);
        assert_true(list[0].pending);
        read_at(f, T0 + 1000); /* faults take effect from the next whole second */
        assert_int_equal(model_fault_list(f->c, list, 8), 4);
        assert_false(list[0].pending);
        double held = 0, tx0 = 0, rx0 = 0;
        for (int s = 2; s < 30; s++) {
                read_at(f, T0 + s * 1000);
                assert_true(f->valid[util] && f->values[util] == 0);
                if (s == 2) {
                        held = f->values[mem];
                        tx0 = f->values[tx];
                        rx0 = f->values[rx_back];
                }
                assert_true(f->values[mem] > 0);
                assert_true(f->values[tx] == tx0 && f->values[rx_back] == rx0);
        }
        assert_true(held > 0);
        assert_true(f->values[ecc] == 1 && f->values[ecc_other] == 0);
        assert_true(f->values[errors] == 500 && f->values[with_err] == 500);

        model_fault_clear(f->c);
        read_at(f, T0 + 31000);
        read_at(f, T0 + 32000);
        read_at(f, T0 + 42000);
        assert_int_equal(model_fault_list(f->c, list, 8), 0);
        assert_true(f->values[tx] > tx0);
        fixture_free(f);

        /* A device's NeuronSwitch port. */
        f = open_spec("model:trn3-gen1-ultraserver,scenario=moe,fault=link_down:5:switch");
        read_at(f, T0 - 1000);
        size_t sw_tx = find(f, METRIC_LINK_TX_BYTES, "5", "switch", NULL);
        size_t sw_rx = find(f, METRIC_LINK_RX_BYTES, "5", "switch", NULL);
        size_t peer_tx = find(f, METRIC_LINK_TX_BYTES, "6", "switch", NULL);
        read_at(f, T0);
        read_at(f, T0 + 20000);
        assert_true(f->values[sw_tx] == 0 && f->values[sw_rx] == 0 && f->values[peer_tx] > 0);
        fixture_free(f);
}

/* Inference: one runtime per tensor-parallel pair of devices; the last is
 * redeployed every hour, so it exits (its series go, its cores are free)
 * and comes back as a new process (a new pid and tag, counters from 0). */
static void model_refresh__inference__a_runtime_exits_and_comes_back(void **state) {
        struct fixture *f = open_spec("model:trn1.32xlarge,scenario=inference,seed=5");
        uint32_t first_pid = 0, second_pid = 0;
        bool seen_down = false;
        int64_t t = T0;
        for (int step = 0; step < 150 && !second_pid; step++, t += 60000) {
                read_at(f, t);
                const struct runtime_info *rt = runtime_info_find_core(f->c->inv.runtimes, f->c->inv.n_runtimes, 28);
                /* Eight runtimes of four cores; the named ones never leave. */
                assert_non_null(runtime_info_find_core(f->c->inv.runtimes, f->c->inv.n_runtimes, 0));
                assert_string_equal(f->c->inv.runtimes[0].tag, "inference-0");
                assert_int_equal(f->c->inv.runtimes[0].n_cores, 4);
                if (!rt) {
                        /* Down: 7 runtimes, its cores free and idle, none of its series. */
                        assert_int_equal(f->c->inv.n_runtimes, 7);
                        size_t u = find(f, METRIC_CORE_UTILIZATION, "14", "28", "");
                        assert_true(f->valid[u] && f->values[u] == 0);
                        char gone[16];
                        snprintf(gone, sizeof(gone), "%u", first_pid);
                        for (size_t i = 0; first_pid && i < f->c->inv.n_series; i++)
                                for (int l = 0; l < METRIC_LABELS_MAX; l++)
                                        assert_string_not_equal(f->c->inv.series[i].label_values[l], gone);
                        seen_down = seen_down || first_pid != 0;
                        continue;
                }
                assert_int_equal(f->c->inv.n_runtimes, 8);
                char pid[16];
                snprintf(pid, sizeof(pid), "%u", rt->pid);
                assert_string_equal(rt->tag, pid);
                if (!first_pid)
                        first_pid = rt->pid;
                if (seen_down && rt->pid != first_pid) {
                        second_pid = rt->pid;
                        /* A new process counts from zero: at most a minute of requests. */
                        size_t ok = find4(f, METRIC_CORE_EXECUTION_STATUS, "", "", pid, "completed");
                        assert_true(f->valid[ok] && f->values[ok] <= 60 * 4 * 70);
                        assert_true(f->valid[find(f, METRIC_RUNTIME_INFO, pid, pid, NULL)]);
                }
        }
        assert_true(first_pid && second_pid && first_pid != second_pid);
        fixture_free(f);
}

/* Training: one runtime across every core; its executions are steps, its
 * latency a step's length, 70 % of it on the device. */
static void model_read__training__one_runtime_across_all_cores(void **state) {
        struct fixture *f = open_spec("model:trn1.32xlarge,scenario=training,seed=6");
        read_at(f, T0);
        read_at(f, T0 + 600000);
        assert_int_equal(f->c->inv.n_runtimes, 1);
        assert_string_equal(f->c->inv.runtimes[0].tag, "training-0");
        assert_int_equal(f->c->inv.runtimes[0].n_cores, 32);
        size_t ok = find4(f, METRIC_CORE_EXECUTION_STATUS, "", "", "training-0", "completed");
        /* 32 cores, one step each 8-15 s, over 600 s. */
        assert_true(f->values[ok] >= 32 * 600 / 16.0 && f->values[ok] <= 32 * 600 / 7.0);
        size_t p50 = find(f, METRIC_RUNTIME_LATENCY, "training-0", "p50", NULL);
        size_t d50 = find(f, METRIC_RUNTIME_DEVICE_LATENCY, "training-0", "p50", NULL);
        assert_true(f->valid[p50] && f->values[p50] >= 8 * 0.94 && f->values[p50] <= 15 * 1.06);
        assert_double_near(f->values[d50], 0.7 * f->values[p50], 1e-9 * f->values[p50]);
        for (int e = 0; e < EXEC_ERROR__COUNT; e++)
                assert_true(f->values[find4(f, METRIC_CORE_EXECUTION_ERRORS, "", "", "training-0",
                                            metric_exec_error_names[e])] == 0);
        size_t flops = find(f, METRIC_CORE_FLOPS, "3", "7", "training-0");
        /* 190 TFLOPS per chip, two cores: at most 95 TFLOP per core-second. */
        assert_true(f->values[flops] > 0 && f->values[flops] <= 95e12 * 600);
        size_t host = find(f, METRIC_RUNTIME_MEMORY_USED, "training-0", "host", NULL);
        assert_true(f->values[host] > 1.5 * 1073741824.0);
        fixture_free(f);
}

/* The model's instance is made up but well formed, as IMDS would say it. */
static void model_open__identity__well_formed(void **state) {
        struct fixture *f = open_spec("model:trn2.48xlarge,seed=9");
        const struct instance_identity *id = &f->c->inv.identity;
        assert_int_equal(strlen(id->instance_id), 19);
        assert_true(strncmp(id->instance_id, "i-", 2) == 0 && strspn(id->instance_id + 2, "0123456789abcdef") == 17);
        assert_true(strncmp(id->subnet_id, "subnet-", 7) == 0 && strspn(id->subnet_id + 7, "0123456789abcdef") == 17);
        assert_true(strncmp(id->ami_id, "ami-", 4) == 0 && strlen(id->ami_id) == 21);
        assert_string_equal(id->instance_type, "trn2.48xlarge");
        assert_true(strncmp(id->availability_zone, id->region, strlen(id->region)) == 0);
        assert_int_equal(strlen(id->availability_zone), strlen(id->region) + 1);
        assert_string_equal(id->error, "");
        char first[32];
        snprintf(first, sizeof(first), "%s", id->instance_id);
        fixture_free(f);
        /* Another seed, another instance. */
        f = open_spec("model:trn2.48xlarge,seed=10");
        assert_string_not_equal(f->c->inv.identity.instance_id, first);
        fixture_free(f);
}

struct poker {
        struct collector *c;
        int rounds;
};

static void *poke(void *arg) {
        struct poker *p = arg;
        struct model_fault f;
        struct model_fault_status list[4];
        char err[128];
        for (int i = 0; i < p->rounds; i++) {
                model_fault_parse(i % 2 ? "core_stuck:3+2s" : "device_down:1+1s", &f, err, sizeof(err));
                model_fault_inject(p->c, &f, err, sizeof(err));
                model_fault_list(p->c, list, 4);
                if (i % 7 == 0)
                        model_fault_clear(p->c);
        }
        return NULL;
}

/* Another thread injecting while the loop reads: no lost state, no crash
 * (run under the sanitizers and helgrind-clean by design: one lock). */
static void model_fault_inject__from_another_thread__is_safe(void **state) {
        struct fixture *f = open_spec("model:trn1.32xlarge,scenario=steady");
        struct poker p = { .c = f->c, .rounds = 2000 };
        pthread_t t;
        assert_int_equal(pthread_create(&t, NULL, poke, &p), 0);
        for (int s = 0; s < 2000; s++)
                read_at(f, T0 + s * 500);
        pthread_join(t, NULL);
        model_fault_clear(f->c);
        read_at(f, T0 + 2000 * 500);
        read_at(f, T0 + 2001 * 500);
        assert_int_equal(f->values[find(f, METRIC_DEVICE_UP, "1", NULL, NULL)], 1);
        fixture_free(f);
}

static void model_read__time_going_back__keeps_counters(void **state) {
        struct fixture *f = open_spec("model:inf2.48xlarge,scenario=inference");
        read_at(f, T0);
        size_t dma = find(f, METRIC_DEVICE_DMA_BYTES, "3", "host_to_device", NULL);
        read_at(f, T0 + 10000);
        double v = f->values[dma];
        assert_true(v > 0);
        read_at(f, T0 + 5000);
        assert_true(f->values[dma] == v);
        fixture_free(f);
}

/* Each read adds the utilization gauge times the interval it ends, to the
 * microsecond: the counter's increase over any run of reads is the
 * time-weighted sum of the gauge's samples in it, from 0 at the first. */
static void model_read__busy_seconds__sum_of_gauge_times_interval(void **state) {
        struct fixture *f = open_spec("model:trn1.32xlarge,scenario=training,seed=5");
        static const int64_t steps_ms[] = { 1000, 1000, 250, 15000, 1000, 3000, 1000, 60000, 1000 };
        read_at(f, T0);
        size_t util = find(f, METRIC_CORE_UTILIZATION, "3", "7", NULL);
        size_t busy = find(f, METRIC_CORE_BUSY_SECONDS, "3", "7", NULL);
        assert_true(f->valid[busy]);
        assert_true(f->values[busy] == 0);
        int64_t now = T0;
        double want_us = 0;
        for (size_t i = 0; i < sizeof(steps_ms) / sizeof(steps_ms[0]); i++) {
                double before = f->values[busy];
                now += steps_ms[i];
                /* A runtime that came back renames the core's series. */
                if (read_at(f, now)) {
                        util = find(f, METRIC_CORE_UTILIZATION, "3", "7", NULL);
                        busy = find(f, METRIC_CORE_BUSY_SECONDS, "3", "7", NULL);
                }
                assert_true(f->valid[util] && f->valid[busy]);
                want_us += (double) llround(f->values[util] * (double) steps_ms[i] * 1000.0);
                assert_true(f->values[busy] >= before);
                assert_double_near(f->values[busy], want_us / 1e6, 1e-12);
        }
        /* Training keeps the core busy most of the time: the sum is far from zero. */
        assert_true(f->values[busy] > 0.3 * (double) (now - T0) / 1000.0);
        /* Time going back adds nothing. */
        double v = f->values[busy];
        read_at(f, now - 5000);
        assert_true(f->values[busy] == v);
        fixture_free(f);
}

static void metric_busy_us__ratio_and_interval__whole_microseconds(void **state) {
        assert_int_equal(metric_busy_us(0.5, 1000), 500000);
        assert_int_equal(metric_busy_us(1.0 / 3.0, 1000), 333333);
        assert_int_equal(metric_busy_us(1, 15000), 15000000);
        assert_int_equal(metric_busy_us(0.25, 0), 0);
        assert_int_equal(metric_busy_us(0.25, -1000), 0);
        assert_int_equal(metric_busy_us(0, 1000), 0);
        assert_int_equal(metric_busy_us(-0.5, 1000), 0);
        assert_int_equal(metric_busy_us(NAN, 1000), 0);
}

struct reading {
        double *values;
        uint8_t *valid;
};

static struct collector *open_model(const char *spec) {
        struct collector *c = NULL;
        char err[256];
        assert_int_equal(collector_open_spec(spec, &c, err, sizeof(err)), 0);
        return c;
}

static void read_into(struct collector *c, int64_t ms, struct reading *out) {
        size_t n = c->inv.n_series;
        out->values = calloc(n, sizeof(double));
        out->valid = calloc(n, 1);
        struct sample_batch b = { .n = n, .values = out->values, .valid = out->valid };
        assert_int_equal(c->ops->read(c, ms, &b), 0);
}

static void reading_free(struct reading *r) {
        free(r->values);
        free(r->valid);
}

static void model_open__trn1_32xlarge__inventory(void **state) {
        struct collector *c = open_model("model:trn1.32xlarge");

        assert_string_equal(c->inv.instance_type, "trn1.32xlarge");
        assert_int_equal(c->inv.n_devices, 16);
        for (unsigned d = 0; d < 16; d++) {
                const struct device_info *dev = &c->inv.devices[d];
                assert_int_equal(dev->core_count, 2);
                assert_int_equal(dev->first_core, 2 * d);
                assert_int_equal(dev->memory_bytes, 34359738368ull);
                assert_string_equal(dev->name, "Trainium1");
                /* 4x4 torus: four distinct neighbours, and links go both ways. */
                assert_int_equal(dev->n_peers, 4);
                for (unsigned p = 0; p < dev->n_peers; p++) {
                        const struct device_info *peer = &c->inv.devices[dev->peers[p]];
                        bool back = false;
                        for (unsigned q = 0; q < peer->n_peers; q++)
                                back = back || peer->peers[q] == d;
                        assert_true(back);
                }
        }
        size_t util = 0;
        for (size_t i = 0; i < c->inv.n_series; i++)
                util += c->inv.series[i].metric == METRIC_CORE_UTILIZATION;
        assert_int_equal(util, 32);
        collector_close(c);
}

/* An hour of simulated ticks: every value within the hardware's limits. */
static void model_read__one_hour__within_physical_limits(void **state) {
        struct collector *c = open_model("model:trn1.32xlarge,seed=3");
        const struct catalog_instance *inst = catalog_find("trn1.32xlarge");
        const size_t n = c->inv.n_series;
        double *prev = calloc(n, sizeof(double));
        int64_t t0 = 1700000000000, step_ms = 10000;

        for (int tick = 0; tick <= 360; tick++) {
                struct reading r;
                read_into(c, t0 + tick * step_ms, &r);
                for (size_t i = 0; i < n; i++) {
                        const struct series_desc *s = &c->inv.series[i];
                        double v = r.values[i];
                        assert_true(r.valid[i]);
                        switch (s->metric) {
                        case METRIC_CORE_UTILIZATION:
                                assert_true(v >= 0 && v <= 1);
                                break;
                        case METRIC_CORE_MEMORY_USED:
                                assert_true(v >= 0 && v <= (double) inst->chip->memory_bytes / inst->chip->cores);
                                break;
                        case METRIC_DEVICE_MEMORY_USED:
                                assert_true(v >= 0 && v <= (double) inst->chip->memory_bytes);
                                break;
                        case METRIC_DEVICE_DMA_BYTES:
                        case METRIC_LINK_TX_BYTES:
                        case METRIC_LINK_RX_BYTES: {
                                double limit = s->metric == METRIC_DEVICE_DMA_BYTES ? inst->chip->dma_bandwidth
                                                                                    : inst->chip->link_bandwidth;
                                assert_true(v >= prev[i]);
                                if (tick > 0)
                                        assert_true((v - prev[i]) / (step_ms / 1000.0) <= limit);
                                break;
                        }
                        default:
                                break;
                        }
                }
                memcpy(prev, r.values, n * sizeof(double));
                reading_free(&r);
        }
        free(prev);
        collector_close(c);
}

/* Bytes a device sends to a peer are the bytes the peer receives from it. */
static void model_read__link__tx_equals_peer_rx(void **state) {
        struct collector *c = open_model("model:trn1.32xlarge");
        struct reading r;

        read_into(c, 1700000000000, &r);
        reading_free(&r);
        read_into(c, 1700000060000, &r);
        size_t checked = 0;
        for (size_t i = 0; i < c->inv.n_series; i++) {
                const struct series_desc *tx = &c->inv.series[i];
                if (tx->metric != METRIC_LINK_TX_BYTES)
                        continue;
                for (size_t j = 0; j < c->inv.n_series; j++) {
                        const struct series_desc *rx = &c->inv.series[j];
                        if (rx->metric == METRIC_LINK_RX_BYTES &&
                            strcmp(rx->label_values[0], tx->label_values[1]) == 0 &&
                            strcmp(rx->label_values[1], tx->label_values[0]) == 0) {
                                assert_true(r.values[i] > 0);
                                assert_true(r.values[i] == r.values[j]);
                                checked++;
                        }
                }
        }
        assert_int_equal(checked, 64);
        reading_free(&r);
        collector_close(c);
}

static void model_open__bad_spec__einval_with_reason(void **state) {
        static const struct {
                const char *spec, *needle;
        } cases[] = {
                { "model:trn9.huge", "trn9.huge" },
                { "model:trn1.32xlarge,seed=x", "seed" },
                { "model:trn1.32xlarge,speed=0", "speed" },
                { "model:trn1.32xlarge,colour=blue", "colour" },
                { "model:trn1.32xlarge,scenario=party", "party" },
                { "nosuchbackend", "nosuchbackend" },
        };
        for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
                struct collector *c = NULL;
                char err[256] = "";
                assert_int_equal(collector_open_spec(cases[i].spec, &c, err, sizeof(err)), -EINVAL);
                assert_null(c);
                if (!strstr(err, cases[i].needle))
                        fail_msg("error '%s' does not mention '%s'", err, cases[i].needle);
        }
}

/* A clock jump of a week is integrated in coarse steps, still within the
 * chip's limits. */
static void model_read__week_long_gap__stays_within_limits(void **state) {
        struct fixture *f = open_spec("model:trn2.48xlarge,scenario=training");
        const struct catalog_instance *inst = catalog_find("trn2.48xlarge");
        double week = 7 * 86400.0;
        read_at(f, T0);
        size_t dma[3] = {
                find(f, METRIC_DEVICE_DMA_BYTES, "4", "host_to_device", NULL),
                find(f, METRIC_DEVICE_DMA_BYTES, "4", "device_to_host", NULL),
                find(f, METRIC_DEVICE_DMA_BYTES, "4", "device_to_device", NULL),
        };
        size_t ok = find4(f, METRIC_CORE_EXECUTION_STATUS, "", "", "training-0", "completed");
        read_at(f, T0 + (int64_t) week * 1000);
        double sum = f->values[dma[0]] + f->values[dma[1]] + f->values[dma[2]];
        assert_true(sum > 0 && sum / week <= inst->chip->dma_bandwidth);
        /* One training step each 8-15 s on each of the 128 physical cores. */
        assert_true(f->values[ok] / 128 >= week / 16 && f->values[ok] / 128 <= week / 7);
        fixture_free(f);
}

/* Every link series of fixture a to node b has its counterpart on b's side
 * (the same bytes); returns how many were compared. */
static size_t compare_links(const struct fixture *a, const char *node_a, const struct fixture *b, const char *node_b) {
        size_t checked = 0;
        for (size_t i = 0; i < a->c->inv.n_series; i++) {
                const struct series_desc *s = &a->c->inv.series[i];
                if ((s->metric != METRIC_LINK_TX_BYTES && s->metric != METRIC_LINK_RX_BYTES) ||
                    strcmp(s->label_values[2], node_b) != 0)
                        continue;
                enum metric_id other = s->metric == METRIC_LINK_TX_BYTES ? METRIC_LINK_RX_BYTES : METRIC_LINK_TX_BYTES;
                size_t j = find(b, other, s->label_values[1], s->label_values[0], node_a);
                assert_true(a->valid[i] && b->valid[j]);
                if (a->values[i] != b->values[j])
                        fail_msg("%s{%s,%s,%s} = %.0f on node %s, its peer's side says %.0f",
                                 metric_table[s->metric].name, s->label_values[0], s->label_values[1], node_b,
                                 a->values[i], node_a, b->values[j]);
                checked++;
        }
        return checked;
}

/* Two daemons on two nodes of one UltraServer, same seed, read at the same
 * times: what one sends to the other is what the other receives. */
static void model_read__ultraserver_nodes__tx_equals_peer_node_rx(void **state) {
        static const struct {
                const char *spec_a, *spec_b, *node_a, *node_b;
                size_t links; /* link series of a towards b, both directions */
        } cases[] = {
                /* 4 devices each, all-to-all: 4 x 4 pairs, tx and rx. */
                { "model:trn3-gen2-ultraserver,node=2,seed=3", "model:trn3-gen2-ultraserver,node=35,seed=3", "2", "35",
                  32 },
                { "model:trn3-gen2-ultraserver,node=0,seed=9,scenario=moe",
                  "model:trn3-gen2-ultraserver,node=1,seed=9,scenario=moe", "0", "1", 32 },
                /* The ring between same-position chips: 16 links each way. */
                { "model:trn2-ultraserver,node=0,seed=3,scenario=training",
                  "model:trn2-ultraserver,node=1,seed=3,scenario=training", "0", "1", 32 },
        };
        for (size_t k = 0; k < sizeof(cases) / sizeof(cases[0]); k++) {
                struct fixture *a = open_spec(cases[k].spec_a), *b = open_spec(cases[k].spec_b);
                double sum = 0;
                for (int64_t t = 0; t <= 120; t += 15) {
                        read_at(a, T0 + t * 1000);
                        read_at(b, T0 + t * 1000);
                }
                assert_int_equal(compare_links(a, cases[k].node_a, b, cases[k].node_b), cases[k].links);
                assert_int_equal(compare_links(b, cases[k].node_b, a, cases[k].node_a), cases[k].links);
                for (size_t i = 0; i < a->c->inv.n_series; i++)
                        if (a->c->inv.series[i].metric == METRIC_LINK_TX_BYTES)
                                sum += a->values[i];
                assert_true(sum > 0);
                fixture_free(a);
                fixture_free(b);
        }
}

/* node=K serves one host of the UltraServer: its devices, its cores, its
 * runtimes, peers on every other node, and the UltraServer's identity. */
static void model_open__ultraserver_node__one_hosts_devices(void **state) {
        struct fixture *f = open_spec("model:trn3-gen2-ultraserver,node=35,seed=3");
        struct fixture *g = open_spec("model:trn3-gen2-ultraserver,node=0,seed=3");
        const struct inventory *inv = &f->c->inv;

        read_at(f, T0);
        read_at(g, T0);
        assert_int_equal(inv->n_devices, 4);
        assert_int_equal(count_metric(f, METRIC_DEVICE_UP), 4);
        assert_int_equal(count_metric(f, METRIC_CORE_UTILIZATION), 16);
        assert_int_equal(count_metric(f, METRIC_CORE_PHYSICAL_UTILIZATION), 32);
        assert_int_equal(count_metric(f, METRIC_LINK_TX_BYTES), 4 * 143);
        assert_int_equal(inv->devices[3].first_core, 12);
        assert_int_equal(inv->devices[3].n_peers, 143);
        assert_non_null(inv->devices[3].peer_nodes);
        /* Its own devices are peers on node 35, the others' by their index there. */
        assert_int_equal(inv->devices[3].peers[0], 0);
        assert_int_equal(inv->devices[3].peer_nodes[0], 0);
        assert_int_equal(inv->devices[3].peers[142], 2);
        assert_int_equal(inv->devices[3].peer_nodes[142], 35);
        /* One runtime per host, holding its 16 cores. */
        assert_int_equal(inv->n_runtimes, 1);
        assert_int_equal(inv->runtimes[0].n_cores, 16);
        assert_int_equal(inv->runtimes[0].cores[0], 0);
        assert_string_equal(inv->runtimes[0].tag, "steady-35");
        assert_int_equal(inv->ultraserver.nodes, 36);
        assert_int_equal(inv->ultraserver.node, 35);
        assert_int_equal(strlen(inv->ultraserver.id), 16);
        /* One UltraServer, two instances. */
        assert_string_equal(inv->ultraserver.id, g->c->inv.ultraserver.id);
        assert_int_equal(g->c->inv.ultraserver.node, 0);
        assert_string_not_equal(inv->identity.instance_id, g->c->inv.identity.instance_id);
        /* The whole UltraServer in one daemon is no node of one. */
        struct fixture *w = open_spec("model:trn3-gen2-ultraserver");
        assert_int_equal(w->c->inv.ultraserver.nodes, 0);
        assert_null(w->c->inv.devices[0].peer_nodes);
        fixture_free(w);
        fixture_free(f);
        fixture_free(g);
}

static void model_open__ultraserver_node__bad_nodes_and_faults_explain(void **state) {
        expect_open_error("model:trn3-gen2-ultraserver,node=36",
                          "node 36 does not exist on trn3-gen2-ultraserver (0-35)");
        expect_open_error("model:trn2-ultraserver,node=4", "(0-3)");
        expect_open_error("model:trn1.32xlarge,node=0", "trn1.32xlarge is one host");
        expect_open_error("model:trn3-gen1-ultraserver,node=0", "no source gives how many trn3-gen1-ultraserver has");
        expect_open_error("model:trn3-gen2-ultraserver,node=-1", "not a node number");
        expect_open_error("model:trn3-gen2-ultraserver,node=1,fault=device_down:0", "not modelled on one node");
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(model_open__bad_options__explain),
                cmocka_unit_test(model_fault_format__parsed_faults__round_trip),
                cmocka_unit_test(model_open__trn3_gen2__has_every_core_and_device),
                cmocka_unit_test(model_open__lnc__logical_cores_with_physical_breakdown),
                cmocka_unit_test(model_refresh__inference__a_runtime_exits_and_comes_back),
                cmocka_unit_test(model_read__training__one_runtime_across_all_cores),
                cmocka_unit_test(model_open__identity__well_formed),
                cmocka_unit_test(model_read__memory_categories__sum_to_core_memory),
                cmocka_unit_test(model_read__same_seed__same_series),
                cmocka_unit_test(model_read__training_and_idle__look_like_their_workloads),
                cmocka_unit_test(model_read__mixed__has_allocated_but_idle_cores),
                cmocka_unit_test(model_read__device_down_fault__device_goes_and_returns),
                cmocka_unit_test(model_read__injected_faults__show_in_the_series),
                cmocka_unit_test(model_read__ecc_storm_and_hbm_full__show_in_the_series),
                cmocka_unit_test(model_fault_inject__from_another_thread__is_safe),
                cmocka_unit_test(model_read__time_going_back__keeps_counters),
                cmocka_unit_test(model_read__busy_seconds__sum_of_gauge_times_interval),
                cmocka_unit_test(metric_busy_us__ratio_and_interval__whole_microseconds),
                cmocka_unit_test(model_read__week_long_gap__stays_within_limits),
                cmocka_unit_test(model_open__trn1_32xlarge__inventory),
                cmocka_unit_test(model_read__one_hour__within_physical_limits),
                cmocka_unit_test(model_read__link__tx_equals_peer_rx),
                cmocka_unit_test(model_open__bad_spec__einval_with_reason),
                cmocka_unit_test(model_read__ultraserver_nodes__tx_equals_peer_node_rx),
                cmocka_unit_test(model_open__ultraserver_node__one_hosts_devices),
                cmocka_unit_test(model_open__ultraserver_node__bad_nodes_and_faults_explain),
        };
        return cmocka_run_group_tests_name("model", tests, NULL, NULL);
}
