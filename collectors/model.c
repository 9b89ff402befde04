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

/* The driver's category index of each of neuron-monitor's five kinds
 * (lib/metric.h's order). */
static const unsigned kind_category[METRIC_CORE_MEMORY_KINDS] = { 2, 0, 3, 4, 1 };

static void fmt_u(char *out, size_t size, unsigned v) {
        snprintf(out, size, "%u", v);
}

/* The tag a listed runtime has in the inventory. */
static void listed_tag(const struct model *m, size_t r, char *out, size_t size) {
        model_runtime_tag(m, r, m->listed[r], out, size);
}

/* The runtime holding logical core lc as the inventory lists it, or -1. */
static int listed_owner(const struct model *m, unsigned lc) {
        int r = m->owner[lc];
        return r >= 0 && m->listed[r] != RUNTIME_DOWN ? r : -1;
}

static int add_core_family(struct model *m, enum metric_id metric, bool held_only, size_t *ret_off) {
        char dev[16], core[16], tag[SERIES_LABEL_VALUE_MAX];
        size_t off = m->base.inv.n_series;
        for (unsigned c = m->lc_first; c < m->lc_first + m->dev_count * m->lcores; c++) {
                int r = listed_owner(m, c);
                if (held_only && r < 0)
                        continue;
                fmt_u(dev, sizeof(dev), c / m->lcores - m->dev_first);
                fmt_u(core, sizeof(core), c - m->lc_first);
                tag[0] = '\0';
                if (r >= 0)
                        listed_tag(m, (size_t) r, tag, sizeof(tag));
                int e = inventory_add_series(&m->base.inv, metric, (const char *[]){ dev, core, tag });
                if (e < 0)
                        return e;
        }
        *ret_off = off;
        return 0;
}

static int add_device_family(struct model *m, enum metric_id metric, const char *const *extra, size_t n_extra,
                             size_t *ret_off) {
        char dev[16];
        size_t off = m->base.inv.n_series;
        for (unsigned d = 0; d < m->dev_count; d++)
                for (size_t i = 0; i < (n_extra ? n_extra : 1); i++) {
                        fmt_u(dev, sizeof(dev), d);
                        int r = inventory_add_series(&m->base.inv, metric,
                                                     (const char *[]){ dev, n_extra ? extra[i] : NULL });
                        if (r < 0)
                                return r;
                }
        *ret_off = off;
        return 0;
}

/* A family with a series per listed runtime and value of its second label. */
static int add_runtime_family(struct model *m, enum metric_id metric, const char *const *values, size_t n_values,
                              size_t *ret_off) {
        char tag[SERIES_LABEL_VALUE_MAX], pid[16];
        size_t off = m->base.inv.n_series;
        for (size_t r = 0; r < m->n_runtimes; r++) {
                if (m->listed[r] == RUNTIME_DOWN)
                        continue;
                listed_tag(m, r, tag, sizeof(tag));
                fmt_u(pid, sizeof(pid), model_runtime_pid(m, r, m->listed[r]));
                for (size_t i = 0; i < (values ? n_values : 1); i++) {
                        const char *labels[METRIC_LABELS_MAX] = { tag, values ? values[i] : pid };
                        /* execution_*_total: a runtime's series have no core. */
                        if (metric_label_count(&metric_table[metric]) == 4) {
                                labels[0] = labels[1] = NULL;
                                labels[2] = tag;
                                labels[3] = values[i];
                        }
                        int e = inventory_add_series(&m->base.inv, metric, labels);
                        if (e < 0)
                                return e;
                }
        }
        *ret_off = off;
        return 0;
}

/* The series list for the runtimes m->listed names: per logical core (the
 * runtime holding it in runtime_tag), per held core, per runtime, per
 * device, per link. */
static int build_series(struct model *m) {
        struct inventory *inv = &m->base.inv;
        static const char *const hbm_dirs[] = { "read", "write" };
        static const char *const locations[] = { "host", "neuron_device" };
        static const char *const usage[] = { "user", "system" };
        char dev[16], core[16], phys[16], peer[16], peer_node[16];
        unsigned n_lc = m->dev_count * m->lcores, per_node = m->n_dev / (m->node >= 0 ? m->instance->servers : 1);
        int r;

        inventory_clear_series(inv);
        for (unsigned c = 0, n = 0; c < m->n_lcores; c++)
                m->held_pos[c] = c >= m->lc_first && c < m->lc_first + n_lc && listed_owner(m, c) >= 0 ? (int) n++ : -1;
        for (size_t k = 0, n = 0; k < m->n_runtimes; k++)
                m->rt_pos[k] = m->listed[k] != RUNTIME_DOWN ? (int) n++ : -1;

        if ((r = add_core_family(m, METRIC_CORE_UTILIZATION, false, &m->off_util)) < 0 ||
            (r = add_core_family(m, METRIC_CORE_BUSY_SECONDS, false, &m->off_busy)) < 0)
                return r;
        /* The physical breakdown, as neuron-monitor's v3d object gives it. */
        m->off_phys = inv->n_series;
        for (unsigned c = 0; m->lnc > 1 && c < n_lc; c++)
                for (unsigned k = 0; k < m->lnc; k++) {
                        fmt_u(dev, sizeof(dev), c / m->lcores);
                        fmt_u(core, sizeof(core), c);
                        fmt_u(phys, sizeof(phys), c * m->lnc + k);
                        if ((r = inventory_add_series(inv, METRIC_CORE_PHYSICAL_UTILIZATION,
                                                      (const char *[]){ dev, core, phys })) < 0)
                                return r;
                }
        if ((r = add_core_family(m, METRIC_CORE_MEMORY_USED, false, &m->off_core_mem)) < 0)
                return r;
        /* The driver's 11 categories are opt-in: 11 series per core. */
        m->off_cat = inv->n_series;
        for (unsigned c = 0; m->categories && c < n_lc; c++)
                for (int k = 0; k < DRIVER_MEMORY_CATEGORIES; k++) {
                        fmt_u(dev, sizeof(dev), c / m->lcores);
                        fmt_u(core, sizeof(core), c);
                        r = inventory_add_series(inv, METRIC_CORE_MEMORY_CATEGORY,
                                                 (const char *[]){ dev, core, driver_memory_categories[k] });
                        if (r < 0)
                                return r;
                }
        for (int k = 0; k < METRIC_CORE_MEMORY_KINDS; k++)
                if ((r = add_core_family(m, METRIC_CORE_MEMORY_CONSTANTS + k, true, &m->off_kind[k])) < 0)
                        return r;
        if ((r = add_core_family(m, METRIC_CORE_FLOPS, true, &m->off_flops)) < 0 ||
            (r = add_runtime_family(m, METRIC_CORE_EXECUTION_STATUS, metric_exec_status_names, EXEC_STATUS__COUNT,
                                    &m->off_rt_status)) < 0 ||
            (r = add_runtime_family(m, METRIC_CORE_EXECUTION_ERRORS, metric_exec_error_names, EXEC_ERROR__COUNT,
                                    &m->off_rt_err)) < 0 ||
            (r = add_runtime_family(m, METRIC_RUNTIME_INFO, NULL, 0, &m->off_rt_info)) < 0 ||
            (r = add_runtime_family(m, METRIC_RUNTIME_LATENCY, metric_percentile_names, METRIC_PERCENTILES,
                                    &m->off_rt_lat)) < 0 ||
            (r = add_runtime_family(m, METRIC_RUNTIME_DEVICE_LATENCY, metric_percentile_names, METRIC_PERCENTILES,
                                    &m->off_rt_dlat)) < 0 ||
            (r = add_runtime_family(m, METRIC_RUNTIME_MEMORY_USED, locations, 2, &m->off_rt_mem)) < 0 ||
            (r = add_runtime_family(m, METRIC_RUNTIME_HOST_MEMORY, metric_host_memory_names, HOST_MEM__COUNT,
                                    &m->off_rt_host)) < 0 ||
            (r = add_runtime_family(m, METRIC_RUNTIME_VCPU_USAGE, usage, 2, &m->off_rt_vcpu)) < 0 ||
            (r = add_device_family(m, METRIC_DEVICE_UP, NULL, 0, &m->off_up)) < 0 ||
            (r = add_device_family(m, METRIC_DEVICE_MEMORY_USED, NULL, 0, &m->off_dev_mem)) < 0 ||
            (r = add_device_family(m, METRIC_DEVICE_MEMORY_TOTAL, NULL, 0, &m->off_dev_total)) < 0 ||
            (r = add_device_family(m, METRIC_DEVICE_HBM_BYTES, hbm_dirs, 2, &m->off_hbm)) < 0 ||
            (r = add_device_family(m, METRIC_DEVICE_DMA_BYTES, dma_direction_names, DMA__COUNT, &m->off_dma)) < 0 ||
            (r = add_device_family(m, METRIC_DEVICE_POWER_UTILIZATION, NULL, 0, &m->off_power)) < 0 ||
            (r = add_device_family(m, METRIC_DEVICE_ECC_EVENTS, model_ecc_names, MODEL_ECC_TYPES, &m->off_ecc)) < 0)
                return r;
        for (int pass = 0; pass < 2; pass++) {
                *(pass ? &m->off_rx : &m->off_tx) = inv->n_series;
                for (size_t l = 0; l < m->n_links; l++) {
                        unsigned to = m->links[l].to;
                        fmt_u(dev, sizeof(dev), m->links[l].from - m->dev_first);
                        peer_node[0] = '\0';
                        if (to == MODEL_PEER_SWITCH)
                                snprintf(peer, sizeof(peer), "switch");
                        else
                                fmt_u(peer, sizeof(peer), to % per_node);
                        /* One node of an UltraServer: the peer's device on its own host. */
                        if (m->node >= 0)
                                fmt_u(peer_node, sizeof(peer_node), to / per_node);
                        r = inventory_add_series(inv, pass ? METRIC_LINK_RX_BYTES : METRIC_LINK_TX_BYTES,
                                                 (const char *[]){ dev, peer, peer_node });
                        if (r < 0)
                                return r;
                }
        }
        return 0;
}

/* The inventory's runtimes for m->listed. */
static int list_runtimes(struct model *m) {
        struct inventory *inv = &m->base.inv;
        char tag[SERIES_LABEL_VALUE_MAX];

        inventory_clear_runtimes(inv);
        for (size_t r = 0; r < m->n_runtimes; r++) {
                const struct model_runtime *rt = &m->runtimes[r];
                unsigned cores[rt->n_cores ? rt->n_cores : 1];
                if (m->listed[r] == RUNTIME_DOWN)
                        continue;
                for (unsigned k = 0; k < rt->n_cores; k++)
                        cores[k] = rt->first_core - m->lc_first + k;
                listed_tag(m, r, tag, sizeof(tag));
                int e = inventory_add_runtime(inv, model_runtime_pid(m, r, m->listed[r]), tag, cores, rt->n_cores);
                if (e < 0)
                        return e;
        }
        return 0;
}

/* ---- state ------------------------------------------------------------ */

#define DOUBLE_ARRAYS 36

struct double_array {
        double **p;
        size_t n;
};

/* The model's arrays of doubles with their lengths: the one list that
 * allocating and freeing both go through. */
static void double_arrays(struct model *m, struct double_array out[DOUBLE_ARRAYS]) {
        struct model_state *st = &m->st;
        size_t nc = m->n_cores, nd = m->n_dev, nl = m->n_links ? m->n_links : 1;
        size_t nr = m->n_runtimes ? m->n_runtimes : 1, nlc = m->n_lcores;
        const struct double_array list[DOUBLE_ARRAYS] = {
                { &st->util, nc },
                { &st->mem, nc },
                { &st->ok_rate, nc },
                { &st->fail_rate, nc },
                { &st->drop_rate, nc },
                { &st->rt_status, nr * EXEC_STATUS__COUNT },
                { &st->rt_errors, nr * EXEC_ERROR__COUNT },
                { &st->rt_latency, nr * 2 },
                { &st->rt_sigma, nr },
                { &st->rt_vcpu, nr * 2 },
                { &st->rt_host_mem, nr * HOST_MEM__COUNT },
                { &st->hbm_rate, nd * 2 },
                { &st->dma_rate, nd * DMA__COUNT },
                { &st->power, nd },
                { &st->ecc_rate, nd * MODEL_ECC_TYPES },
                { &st->hbm_full, nd },
                { &st->tx_rate, nl },
                { &st->rx_rate, nl },
                { &st->demand, nd },
                { &st->u_dev, nd },
                { &st->rx_dev, nd },
                { &st->host_in, nd },
                { &st->host_out, nd },
                { &st->group_sum, nd },
                { &m->rt_exec, nr * EXEC_STATUS__COUNT },
                { &m->rt_err, nr * EXEC_ERROR__COUNT },
                { &m->flops, nlc },
                { &m->hbm_bytes, nd * 2 },
                { &m->dma_bytes, nd * DMA__COUNT },
                { &m->ecc_events, nd * MODEL_ECC_TYPES },
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
        size_t nr = m->n_runtimes ? m->n_runtimes : 1;
        st->group_n = calloc(nd, sizeof(unsigned));
        st->down = calloc(nd, 1);
        st->off_switch = calloc(nd, 1);
        st->stuck = calloc(nc, 1);
        st->eff_job = calloc(nc, 1);
        st->rt_life = malloc(nr * sizeof(uint64_t));
        m->listed = malloc(nr * sizeof(uint64_t));
        m->counted_life = malloc(nr * sizeof(uint64_t));
        m->held_pos = calloc(m->n_lcores, sizeof(int));
        m->busy_us = calloc(m->n_lcores, sizeof(uint64_t));
        m->rt_pos = calloc(nr, sizeof(int));
        if (!st->group_n || !st->down || !st->off_switch || !st->stuck || !st->eff_job || !st->rt_life || !m->listed ||
            !m->counted_life || !m->held_pos || !m->busy_us || !m->rt_pos)
                return -ENOMEM;
        for (size_t r = 0; r < nr; r++)
                st->rt_life[r] = m->listed[r] = m->counted_life[r] = RUNTIME_DOWN;
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
        /* The double arrays' sizes depend on n_runtimes: free them first. */
        double_arrays(m, arrays);
        for (size_t i = 0; i < DOUBLE_ARRAYS; i++)
                free(*arrays[i].p);
        free(m->st.group_n);
        free(m->st.down);
        free(m->st.off_switch);
        free(m->st.stuck);
        free(m->st.eff_job);
        free(m->st.rt_life);
        free(m->listed);
        free(m->counted_life);
        free(m->held_pos);
        free(m->busy_us);
        free(m->rt_pos);
        free(m->runtimes);
        free(m->owner);
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
        m->lnc = o->lnc ? o->lnc : catalog_default_lnc(instance->chip);
        m->lcores = m->cores / m->lnc;
        m->n_lcores = m->n_dev * m->lcores;
        m->node = o->node;
        m->dev_count = o->node >= 0 ? m->n_dev / instance->servers : m->n_dev;
        m->dev_first = o->node >= 0 ? (unsigned) o->node * m->dev_count : 0;
        m->lc_first = m->dev_first * m->lcores;

        struct inventory *inv = &m->base.inv;
        snprintf(inv->instance_type, sizeof(inv->instance_type), "%s", instance->name);
        if (o->node >= 0)
                snprintf(inv->backend, sizeof(inv->backend), "model:%s,node=%d", instance->name, o->node);
        else
                snprintf(inv->backend, sizeof(inv->backend), "model:%s", instance->name);
        inv->lnc = m->lnc;
        inv->n_devices = m->dev_count;
        inv->devices = calloc(m->dev_count, sizeof(*inv->devices));
        m->job = calloc(m->n_cores, 1);
        m->group = calloc(m->n_dev, sizeof(unsigned));
        m->owner = calloc(m->n_lcores, sizeof(int));
        if (!inv->devices || !m->job || !m->group || !m->owner) {
                r = -ENOMEM;
                goto out;
        }
        for (unsigned d = 0; d < m->dev_count; d++) {
                struct device_info *dev = &inv->devices[d];
                dev->index = d;
                snprintf(dev->name, sizeof(dev->name), "%s", instance->chip->device_name);
                snprintf(dev->arch, sizeof(dev->arch), "%s", instance->chip->arch);
                snprintf(dev->core_arch, sizeof(dev->core_arch), "%s", instance->chip->core_arch);
                dev->core_count = m->lcores;
                dev->physical_core_count = m->cores;
                dev->first_core = d * m->lcores;
                dev->memory_bytes = instance->chip->memory_bytes;
        }
        model_identity(m, &inv->identity);
        model_ultraserver(m, &inv->ultraserver);
        if ((r = model_build_topology(m)) < 0)
                goto out;
        model_assign_jobs(m);
        /* No runtime is listed until the first refresh says which run. */
        if ((r = model_place_runtimes(m)) < 0 || (r = alloc_state(m)) < 0 || (r = build_series(m)) < 0)
                goto out;
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

/* A runtime's life as this daemon lists it: the runtimes on another node
 * of the UltraServer run on another host. */
static uint64_t runtime_life_here(const struct model *m, size_t r, int64_t s) {
        unsigned first = m->runtimes[r].first_core;
        bool here = first >= m->lc_first && first < m->lc_first + m->dev_count * m->lcores;
        return here ? model_runtime_life(m, r, s) : RUNTIME_DOWN;
}

/* Lists the runtimes alive during the simulated second of now_ms (or of
 * the latest read, when time went back). */
static int model_refresh(struct collector *c, int64_t now_ms) {
        struct model *m = (struct model *) c;
        int64_t s = (m->last_ms >= 0 && now_ms < m->last_ms ? m->last_ms : now_ms) / 1000;
        uint64_t *was = NULL;
        bool changed = false;
        int r;

        for (size_t k = 0; k < m->n_runtimes && !changed; k++)
                changed = runtime_life_here(m, k, s) != m->listed[k];
        if (!changed)
                return 0;
        was = malloc(m->n_runtimes * sizeof(*was));
        if (!was)
                return -ENOMEM;
        memcpy(was, m->listed, m->n_runtimes * sizeof(*was));
        for (size_t k = 0; k < m->n_runtimes; k++)
                m->listed[k] = runtime_life_here(m, k, s);
        r = list_runtimes(m);
        if (r == 0)
                r = build_series(m);
        if (r < 0) {
                /* As before: the old list, built again from what it listed. */
                memcpy(m->listed, was, m->n_runtimes * sizeof(*was));
                if (list_runtimes(m) < 0 || build_series(m) < 0) {
                        inventory_clear_runtimes(&m->base.inv);
                        inventory_clear_series(&m->base.inv);
                }
        }
        free(was);
        return r < 0 ? r : 1;
}

/* Sets out[i] = v, valid. */
static void put(struct sample_batch *out, size_t i, double v) {
        out->values[i] = v;
        out->valid[i] = 1;
}

/* A value at percentile q of a log-normal spread around the median. */
static double percentile(double median, double sigma, size_t q) {
        /* The standard normal's quantiles at 0.1 % (for p0: the smallest of a
         * period's executions), 1, 25, 50, 75, 99 and 99.9 % (p100). */
        static const double z[METRIC_PERCENTILES] = { -3.09, -2.326, -0.674, 0, 0.674, 2.326, 3.09 };
        return median * exp(sigma * z[q]);
}

/* The series of each listed runtime that is alive as listed. */
static void read_runtimes(const struct model *m, struct sample_batch *out) {
        const struct model_state *st = &m->st;
        const unsigned *cat = kind_category;
        for (size_t r = 0; r < m->n_runtimes; r++) {
                int pos = m->rt_pos[r];
                const struct model_runtime *rt = &m->runtimes[r];
                if (pos < 0 || st->rt_life[r] != m->listed[r] || m->counted_life[r] != m->listed[r])
                        continue;
                put(out, m->off_rt_info + (size_t) pos, 1);
                for (int k = 0; k < EXEC_STATUS__COUNT; k++)
                        put(out, m->off_rt_status + (size_t) pos * EXEC_STATUS__COUNT + k,
                            whole(m->rt_exec[r * EXEC_STATUS__COUNT + k]));
                for (int k = 0; k < EXEC_ERROR__COUNT; k++)
                        put(out, m->off_rt_err + (size_t) pos * EXEC_ERROR__COUNT + k,
                            whole(m->rt_err[r * EXEC_ERROR__COUNT + k]));
                /* No execution this second: no latency, as neuron-monitor says null. */
                if (st->rt_latency[r * 2] > 0)
                        for (size_t q = 0; q < METRIC_PERCENTILES; q++) {
                                put(out, m->off_rt_lat + (size_t) pos * METRIC_PERCENTILES + q,
                                    percentile(st->rt_latency[r * 2], st->rt_sigma[r], q));
                                put(out, m->off_rt_dlat + (size_t) pos * METRIC_PERCENTILES + q,
                                    percentile(st->rt_latency[r * 2 + 1], st->rt_sigma[r], q));
                        }
                double host = 0, device = 0;
                for (int k = 0; k < HOST_MEM__COUNT; k++) {
                        host += st->rt_host_mem[r * HOST_MEM__COUNT + k];
                        put(out, m->off_rt_host + (size_t) pos * HOST_MEM__COUNT + k,
                            st->rt_host_mem[r * HOST_MEM__COUNT + k]);
                }
                /* Its device memory: the runtime's five kinds on its cores. */
                for (unsigned k = 0; k < rt->n_cores * m->lnc; k++) {
                        double split[DRIVER_MEMORY_CATEGORIES];
                        unsigned core = rt->first_core * m->lnc + k;
                        model_split_categories(m, core, st->mem[core], split);
                        for (int j = 0; j < METRIC_CORE_MEMORY_KINDS; j++)
                                device += split[cat[j]];
                }
                put(out, m->off_rt_mem + (size_t) pos * 2, host);
                put(out, m->off_rt_mem + (size_t) pos * 2 + 1, device);
                put(out, m->off_rt_vcpu + (size_t) pos * 2, st->rt_vcpu[r * 2]);
                put(out, m->off_rt_vcpu + (size_t) pos * 2 + 1, st->rt_vcpu[r * 2 + 1]);
        }
}

/* The series of logical core lc on a device that answers, elapsed_ms
 * after the previous read. */
static void read_core(struct model *m, unsigned lc, int64_t elapsed_ms, struct sample_batch *out) {
        const struct model_state *st = &m->st;
        double util = 0, mem = 0, cats[DRIVER_MEMORY_CATEGORIES] = { 0 };
        size_t here = lc - m->lc_first; /* its index among the reported cores */
        for (unsigned k = 0; k < m->lnc; k++) {
                unsigned core = lc * m->lnc + k;
                double split[DRIVER_MEMORY_CATEGORIES];
                util += st->util[core] / m->lnc;
                mem += st->mem[core];
                model_split_categories(m, core, st->mem[core], split);
                for (int j = 0; j < DRIVER_MEMORY_CATEGORIES; j++)
                        cats[j] += split[j];
                if (m->lnc > 1)
                        put(out, m->off_phys + here * m->lnc + k, st->util[core]);
        }
        put(out, m->off_util + here, util);
        /* The gauge stands for the interval that ends now: the counter adds
         * just that, so the two tell one story at any scrape interval. */
        m->busy_us[lc] += metric_busy_us(util, elapsed_ms);
        put(out, m->off_busy + here, (double) m->busy_us[lc] / 1e6);
        put(out, m->off_core_mem + here, mem);
        for (int j = 0; m->categories && j < DRIVER_MEMORY_CATEGORIES; j++)
                put(out, m->off_cat + here * DRIVER_MEMORY_CATEGORIES + j, cats[j]);
        int pos = m->held_pos[lc], owner = m->owner[lc];
        /* A held core's runtime figures, while that runtime lives as listed. */
        if (pos < 0 || st->rt_life[owner] != m->listed[owner] || m->counted_life[owner] != m->listed[owner])
                return;
        for (int j = 0; j < METRIC_CORE_MEMORY_KINDS; j++)
                put(out, m->off_kind[j] + (size_t) pos, cats[kind_category[j]]);
        put(out, m->off_flops + (size_t) pos, whole(m->flops[lc]));
}

static int model_read(struct collector *c, int64_t now_ms, struct sample_batch *out) {
        struct model *m = (struct model *) c;
        struct model_state *st = &m->st;
        int64_t elapsed_ms = 0;

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
                elapsed_ms = now_ms - m->last_ms;
                m->last_ms = now_ms;
        }
        model_state_compute(m, m->last_ms / 1000);
        /* A runtime that started this second has counted nothing yet. */
        model_runtimes_restart(m);

        memset(out->valid, 0, out->n);
        read_runtimes(m, out);
        for (unsigned i = 0; i < m->dev_count; i++) {
                unsigned d = m->dev_first + i;
                put(out, m->off_up + i, st->down[d] ? 0 : 1);
                if (st->down[d])
                        continue;
                double used = 0;
                for (unsigned k = 0; k < m->cores; k++)
                        used += st->mem[d * m->cores + k];
                for (unsigned k = 0; k < m->lcores; k++)
                        read_core(m, d * m->lcores + k, elapsed_ms, out);
                put(out, m->off_dev_mem + i, used);
                put(out, m->off_dev_total + i, (double) m->instance->chip->memory_bytes);
                put(out, m->off_power + i, m->power_avg[d]);
                for (int k = 0; k < 2; k++)
                        put(out, m->off_hbm + i * 2 + k, whole(m->hbm_bytes[d * 2 + k]));
                for (int k = 0; k < DMA__COUNT; k++)
                        put(out, m->off_dma + i * DMA__COUNT + k, whole(m->dma_bytes[d * DMA__COUNT + k]));
                for (int k = 0; k < MODEL_ECC_TYPES; k++)
                        put(out, m->off_ecc + i * MODEL_ECC_TYPES + k, whole(m->ecc_events[d * MODEL_ECC_TYPES + k]));
        }
        /* A link's series belong to its device: they go with it. */
        for (size_t l = 0; l < m->n_links; l++) {
                if (st->down[m->links[l].from])
                        continue;
                put(out, m->off_tx + l, whole(m->tx_bytes[l]));
                put(out, m->off_rx + l, whole(m->rx_bytes[l]));
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
        .refresh = model_refresh,
        .read = model_read,
        .close = model_close,
};
