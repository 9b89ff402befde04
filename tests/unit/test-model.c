#include "config.h"

#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "collectors/collector.h"
#include "collectors/model.h"

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

static void read_at(struct collector *c, int64_t ms, struct reading *out) {
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

static void model_read__same_seed__same_series(void **state) {
        struct collector *a = open_model("model:trn1.32xlarge,seed=7");
        struct collector *b = open_model("model:trn1.32xlarge,seed=7");
        struct collector *other = open_model("model:trn1.32xlarge,seed=8");
        int64_t t0 = 1700000000000;

        for (int tick = 0; tick < 5; tick++) {
                struct reading ra, rb, ro;
                read_at(a, t0 + tick * 1000, &ra);
                read_at(b, t0 + tick * 1000, &rb);
                read_at(other, t0 + tick * 1000, &ro);
                assert_memory_equal(ra.values, rb.values, a->inv.n_series * sizeof(double));
                if (tick > 0)
                        assert_memory_not_equal(ra.values, ro.values, a->inv.n_series * sizeof(double));
                reading_free(&ra);
                reading_free(&rb);
                reading_free(&ro);
        }
        collector_close(a);
        collector_close(b);
        collector_close(other);
}

/* An hour of simulated ticks: every value within the hardware's limits. */
static void model_read__one_hour__within_physical_limits(void **state) {
        struct collector *c = open_model("model:trn1.32xlarge,seed=3");
        const struct model_instance *inst = model_catalog_find("trn1.32xlarge");
        const size_t n = c->inv.n_series;
        double *prev = calloc(n, sizeof(double));
        int64_t t0 = 1700000000000, step_ms = 10000;

        for (int tick = 0; tick <= 360; tick++) {
                struct reading r;
                read_at(c, t0 + tick * step_ms, &r);
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

        read_at(c, 1700000000000, &r);
        reading_free(&r);
        read_at(c, 1700000060000, &r);
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

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(model_open__trn1_32xlarge__inventory),
                cmocka_unit_test(model_read__same_seed__same_series),
                cmocka_unit_test(model_read__one_hour__within_physical_limits),
                cmocka_unit_test(model_read__link__tx_equals_peer_rx),
                cmocka_unit_test(model_open__bad_spec__einval_with_reason),
        };
        return cmocka_run_group_tests_name("model", tests, NULL, NULL);
}
