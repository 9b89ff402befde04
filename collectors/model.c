#include "config.h"

#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "collectors/model-internal.h"

static const char *const dma_direction_names[DMA__COUNT] = {
        [DMA_HOST_TO_DEVICE] = "host_to_device",
        [DMA_DEVICE_TO_HOST] = "device_to_host",
        [DMA_DEVICE_TO_DEVICE] = "device_to_device",
};

/* ---- the series --------------------------------------------------------- */

static int add_core_family(struct model *m, enum metric_id metric, const char *extra, size_t *ret_off) {
        char dev[16], core[16];
        size_t off = m->base.inv.n_series;
        for (unsigned c = 0; c < m->n_cores; c++) {
                snprintf(dev, sizeof(dev), "%u", c / m->cores);
                snprintf(core, sizeof(core), "%u", c);
                int r = inventory_add_series(&m->base.inv, metric, (const char *[]){ dev, core, extra });
                if (r < 0)
                        return r;
        }
        *ret_off = off;
        return 0;
}

static int add_device_family(struct model *m, enum metric_id metric, const char *const *extra, size_t n_extra,
                             size_t *ret_off) {
        char dev[16];
        size_t off = m->base.inv.n_series;
        for (unsigned d = 0; d < m->n_dev; d++)
                for (size_t i = 0; i < (n_extra ? n_extra : 1); i++) {
                        snprintf(dev, sizeof(dev), "%u", d);
                        int r = inventory_add_series(&m->base.inv, metric,
                                                     (const char *[]){ dev, n_extra ? extra[i] : NULL });
                        if (r < 0)
                                return r;
                }
        *ret_off = off;
        return 0;
}

static int build_series(struct model *m) {
        struct inventory *inv = &m->base.inv;
        static const char *const hbm_dirs[] = { "read", "write" };
        char dev[16], core[16], peer[16];
        int r;

        /* Four series per core by default: failed executions are counted
         * once, in execution_errors_total, to keep a 144-device UltraServer
         * near 6,600 series; the 11 memory categories are opt-in. */
        if ((r = add_core_family(m, METRIC_CORE_UTILIZATION, NULL, &m->off_util)) < 0 ||
            (r = add_core_family(m, METRIC_CORE_MEMORY_USED, NULL, &m->off_core_mem)) < 0)
                return r;
        m->off_cat = inv->n_series;
        for (unsigned c = 0; m->categories && c < m->n_cores; c++)
                for (int k = 0; k < DRIVER_MEMORY_CATEGORIES; k++) {
                        snprintf(dev, sizeof(dev), "%u", c / m->cores);
                        snprintf(core, sizeof(core), "%u", c);
                        r = inventory_add_series(inv, METRIC_CORE_MEMORY_CATEGORY,
                                                 (const char *[]){ dev, core, driver_memory_categories[k] });
                        if (r < 0)
                                return r;
                }
        if ((r = add_core_family(m, METRIC_CORE_EXECUTION_STATUS, driver_status_names[0], &m->off_ok)) < 0 ||
            (r = add_core_family(m, METRIC_CORE_EXECUTION_ERRORS, "generic", &m->off_err)) < 0 ||
            (r = add_device_family(m, METRIC_DEVICE_UP, NULL, 0, &m->off_up)) < 0 ||
            (r = add_device_family(m, METRIC_DEVICE_MEMORY_USED, NULL, 0, &m->off_dev_mem)) < 0 ||
            (r = add_device_family(m, METRIC_DEVICE_MEMORY_TOTAL, NULL, 0, &m->off_dev_total)) < 0 ||
            (r = add_device_family(m, METRIC_DEVICE_HBM_BYTES, hbm_dirs, 2, &m->off_hbm)) < 0 ||
            (r = add_device_family(m, METRIC_DEVICE_DMA_BYTES, dma_direction_names, DMA__COUNT, &m->off_dma)) < 0 ||
            (r = add_device_family(m, METRIC_DEVICE_POWER_UTILIZATION, NULL, 0, &m->off_power)) < 0 ||
            (r = add_device_family(m, METRIC_DEVICE_ECC_EVENTS, driver_ecc_names, DRIVER_ECC__COUNT, &m->off_ecc)) < 0)
                return r;
        for (int pass = 0; pass < 2; pass++) {
                *(pass ? &m->off_rx : &m->off_tx) = inv->n_series;
                for (size_t l = 0; l < m->n_links; l++) {
                        snprintf(dev, sizeof(dev), "%u", m->links[l].from);
                        if (m->links[l].to == MODEL_PEER_SWITCH)
                                snprintf(peer, sizeof(peer), "switch");
                        else
                                snprintf(peer, sizeof(peer), "%u", m->links[l].to);
                        r = inventory_add_series(inv, pass ? METRIC_LINK_RX_BYTES : METRIC_LINK_TX_BYTES,
                                                 (const char *[]){ dev, peer });
                        if (r < 0)
                                return r;
                }
        }
        return 0;
}

/* ---- state ------------------------------------------------------------ */

#define DOUBLE_ARRAYS 27

struct double_array {
        double **p;
        size_t n;
};

/* The model's arrays of doubles with their lengths: the one list that
 * allocating and freeing both go through. */
static void double_arrays(struct model *m, struct double_array out[DOUBLE_ARRAYS]) {
        struct model_state *st = &m->st;
        size_t nc = m->n_cores, nd = m->n_dev, nl = m->n_links ? m->n_links : 1;
        const struct double_array list[DOUBLE_ARRAYS] = {
                { &st->util, nc },
                { &st->mem, nc },
                { &st->ok_rate, nc },
                { &st->fail_rate, nc },
                { &st->hbm_rate, nd * 2 },
                { &st->dma_rate, nd * DMA__COUNT },
                { &st->power, nd },
                { &st->ecc_rate, nd * DRIVER_ECC__COUNT },
                { &st->tx_rate, nl },
                { &st->rx_rate, nl },
                { &st->demand, nd },
                { &st->u_dev, nd },
                { &st->rx_dev, nd },
                { &st->host_in, nd },
                { &st->host_out, nd },
                { &st->group_sum, nd },
                { &m->exec_ok, nc },
                { &m->exec_fail, nc },
                { &m->hbm_bytes, nd * 2 },
                { &m->dma_bytes, nd * DMA__COUNT },
                { &m->ecc_events, nd * DRIVER_ECC__COUNT },
                { &m->tx_bytes, nl },
                { &m->rx_bytes, nl },
                { &m->power_avg, nd },
                { &m->phase, nc },
                { &m->weight, nc },
                { &m->dev_weight, nd },
        };
        memcpy(out, list, sizeof(list));
}

static int alloc_state(struct model *m) {
        struct model_state *st = &m->st;
        struct double_array arrays[DOUBLE_ARRAYS];
        size_t nc = m->n_cores, nd = m->n_dev;

        double_arrays(m, arrays);
        for (size_t i = 0; i < DOUBLE_ARRAYS; i++) {
                *arrays[i].p = calloc(arrays[i].n, sizeof(double));
                if (!*arrays[i].p)
                        return -ENOMEM;
        }
        st->group_n = calloc(nd, sizeof(unsigned));
        st->down = calloc(nd, 1);
        st->off_switch = calloc(nd, 1);
        st->stuck = calloc(nc, 1);
        if (!st->group_n || !st->down || !st->off_switch || !st->stuck)
                return -ENOMEM;
        st->second = INT64_MIN;
        return 0;
}

static void model_close(struct collector *c) {
        struct model *m = (struct model *) c;
        struct double_array arrays[DOUBLE_ARRAYS];
        if (!m)
                return;
        inventory_free(&m->base.inv);
        pthread_mutex_destroy(&m->lock);
        free(m->links);
        free(m->job);
        free(m->group);
        double_arrays(m, arrays);
        for (size_t i = 0; i < DOUBLE_ARRAYS; i++)
                free(*arrays[i].p);
        free(m->st.group_n);
        free(m->st.down);
        free(m->st.off_switch);
        free(m->st.stuck);
        free(m);
}

/* ---- opening ------------------------------------------------------------ */

static int model_open(const struct collector_args *args, struct collector **ret) {
        struct model_options *o = calloc(1, sizeof(*o));
        struct model *m = NULL;
        int r;

        if (!o)
                return -ENOMEM;
        r = model_options_parse(args, o);
        if (r < 0)
                goto out;
        const struct catalog_instance *instance = o->instance;
        m = calloc(1, sizeof(*m));
        if (!m) {
                r = -ENOMEM;
                goto out;
        }
        pthread_mutex_init(&m->lock, NULL);
        m->base.ops = &model_collector_ops;
        m->base.time_scale = o->speed;
        m->instance = instance;
        m->scenario = o->scenario;
        m->seed = o->seed;
        m->categories = o->categories;
        m->last_ms = -1;
        m->n_dev = instance->devices;
        m->cores = instance->chip->cores;
        m->n_cores = instance->devices * instance->chip->cores;

        struct inventory *inv = &m->base.inv;
        snprintf(inv->instance_type, sizeof(inv->instance_type), "%s", instance->name);
        snprintf(inv->backend, sizeof(inv->backend), "model:%s", instance->name);
        inv->n_devices = instance->devices;
        inv->devices = calloc(instance->devices, sizeof(*inv->devices));
        m->job = calloc(m->n_cores, 1);
        m->group = calloc(m->n_dev, sizeof(unsigned));
        if (!inv->devices || !m->job || !m->group) {
                r = -ENOMEM;
                goto out;
        }
        for (unsigned d = 0; d < instance->devices; d++) {
                struct device_info *dev = &inv->devices[d];
                dev->index = d;
                snprintf(dev->name, sizeof(dev->name), "%s", instance->chip->device_name);
                snprintf(dev->arch, sizeof(dev->arch), "%s", instance->chip->arch);
                snprintf(dev->core_arch, sizeof(dev->core_arch), "%s", instance->chip->core_arch);
                dev->core_count = instance->chip->cores;
                dev->first_core = d * instance->chip->cores;
                dev->memory_bytes = instance->chip->memory_bytes;
        }
        if ((r = model_build_topology(m)) < 0 || (r = alloc_state(m)) < 0 || (r = build_series(m)) < 0)
                goto out;
        model_assign_jobs(m);
        model_physics_init(m);
        for (size_t i = 0; i < o->n_faults; i++) {
                r = model_fault_inject(&m->base, &o->faults[i], args->err, args->errlen);
                if (r < 0)
                        goto out;
        }
        *ret = &m->base;
        m = NULL;
        r = 0;
out:
        model_close(m ? &m->base : NULL);
        free(o);
        return r;
}

/* ---- reading ------------------------------------------------------------ */

/* Counters are whole numbers; the epsilon absorbs the float error of adding
 * a rate over split seconds (1 event/s over 0.3 s + 0.7 s is 1 event). */
static double whole(double v) {
        return floor(v + 1e-6);
}

static int model_read(struct collector *c, int64_t now_ms, struct sample_batch *out) {
        struct model *m = (struct model *) c;
        struct model_state *st = &m->st;
        unsigned cores = m->cores;

        if (m->last_ms < 0) {
                m->last_ms = now_ms;
                model_faults_update(m, now_ms);
                model_state_compute(m, now_ms / 1000);
                for (unsigned d = 0; d < m->n_dev; d++)
                        m->power_avg[d] = st->power[d];
        } else {
                model_faults_update(m, now_ms > m->last_ms ? now_ms : m->last_ms);
        }
        /* Time that goes backwards adds nothing: counters never decrease. */
        if (now_ms > m->last_ms) {
                model_advance(m, m->last_ms, now_ms);
                m->last_ms = now_ms;
        }
        model_state_compute(m, m->last_ms / 1000);

        memset(out->valid, 0, out->n);
        for (unsigned d = 0; d < m->n_dev; d++) {
                out->values[m->off_up + d] = st->down[d] ? 0 : 1;
                out->valid[m->off_up + d] = 1;
                if (st->down[d])
                        continue;
                double used = 0;
                for (unsigned k = 0; k < cores; k++) {
                        unsigned core = d * cores + k;
                        used += st->mem[core];
                        out->values[m->off_util + core] = st->util[core];
                        out->values[m->off_core_mem + core] = st->mem[core];
                        out->values[m->off_ok + core] = whole(m->exec_ok[core]);
                        out->values[m->off_err + core] = whole(m->exec_fail[core]);
                        out->valid[m->off_util + core] = out->valid[m->off_core_mem + core] = 1;
                        out->valid[m->off_ok + core] = out->valid[m->off_err + core] = 1;
                        if (m->categories) {
                                model_split_categories(
                                        m, core, st->mem[core],
                                        &out->values[m->off_cat + (size_t) core * DRIVER_MEMORY_CATEGORIES]);
                                memset(&out->valid[m->off_cat + (size_t) core * DRIVER_MEMORY_CATEGORIES], 1,
                                       DRIVER_MEMORY_CATEGORIES);
                        }
                }
                out->values[m->off_dev_mem + d] = used;
                out->values[m->off_dev_total + d] = (double) m->instance->chip->memory_bytes;
                out->values[m->off_power + d] = m->power_avg[d];
                out->valid[m->off_dev_mem + d] = out->valid[m->off_dev_total + d] = out->valid[m->off_power + d] = 1;
                for (int i = 0; i < 2; i++) {
                        out->values[m->off_hbm + d * 2 + i] = whole(m->hbm_bytes[d * 2 + i]);
                        out->valid[m->off_hbm + d * 2 + i] = 1;
                }
                for (int i = 0; i < DMA__COUNT; i++) {
                        out->values[m->off_dma + d * DMA__COUNT + i] = whole(m->dma_bytes[d * DMA__COUNT + i]);
                        out->valid[m->off_dma + d * DMA__COUNT + i] = 1;
                }
                for (int i = 0; i < DRIVER_ECC__COUNT; i++) {
                        out->values[m->off_ecc + d * DRIVER_ECC__COUNT + i] =
                                whole(m->ecc_events[d * DRIVER_ECC__COUNT + i]);
                        out->valid[m->off_ecc + d * DRIVER_ECC__COUNT + i] = 1;
                }
        }
        /* A link's series belong to its device: they go with it. */
        for (size_t l = 0; l < m->n_links; l++) {
                if (st->down[m->links[l].from])
                        continue;
                out->values[m->off_tx + l] = whole(m->tx_bytes[l]);
                out->values[m->off_rx + l] = whole(m->rx_bytes[l]);
                out->valid[m->off_tx + l] = out->valid[m->off_rx + l] = 1;
        }
        return 0;
}

bool model_is(const struct collector *c) {
        return c && c->ops == &model_collector_ops;
}

static int model_probe(const struct collector_args *args) {
        return 0;
}

const struct collector_ops model_collector_ops = {
        .name = "model",
        .probe = model_probe,
        .open = model_open,
        .read = model_read,
        .close = model_close,
};
