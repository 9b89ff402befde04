#include "config.h"

#include <math.h>
#include <string.h>

#include "collectors/model-internal.h"

#define PAGE 4096.0

/* How each job's allocation splits into the categories, in thousandths;
 * the last category takes the rounding rest. */
static const unsigned category_share[JOB__COUNT][DRIVER_MEMORY_CATEGORIES] = {
        [JOB_FREE] = { 0, 0, 0, 0, 0, 700, 0, 0, 50, 250, 0 },
        [JOB_ALLOCATED_IDLE] = { 20, 620, 150, 100, 40, 10, 0, 40, 5, 10, 5 },
        [JOB_STEADY] = { 20, 560, 120, 130, 40, 10, 30, 70, 5, 10, 5 },
        [JOB_TRAINING] = { 10, 640, 30, 100, 30, 5, 120, 50, 5, 5, 5 },
        [JOB_INFERENCE] = { 30, 520, 250, 110, 40, 10, 0, 25, 5, 5, 5 },
        [JOB_MOE] = { 15, 610, 60, 90, 30, 5, 140, 35, 5, 5, 5 },
};

/* sysfs power utilization averages over the last minute. */
#define POWER_WINDOW_S 60.0

static double clamp(double v, double lo, double hi) {
        return v < lo ? lo : v > hi ? hi : v;
}

static double pages(double bytes) {
        return floor(bytes / PAGE) * PAGE;
}

/* ---- workloads -------------------------------------------------------- */

void model_physics_init(struct model *m) {
        for (unsigned c = 0; c < m->n_cores; c++) {
                m->phase[c] = 2 * M_PI * model_noise(m, E_CORE(2, c), 0);
                /* A few popular experts, a long tail of quiet ones. */
                double w = model_noise(m, E_CORE(3, c), 0);
                m->weight[c] = 0.15 + 0.85 * w * w;
                m->dev_weight[c / m->cores] += m->weight[c] / m->cores;
        }
}

/* Training: a data-parallel step of 8-15 seconds per job, compute first,
 * then an all-reduce over NeuronLink for the last 30 %. */
static unsigned training_period(const struct model *m, unsigned group) {
        return 8 + (unsigned) (model_mix(m->seed ^ E_GROUP(1, group)) % 8);
}

static bool training_allreduce(const struct model *m, unsigned group, int64_t s) {
        unsigned period = training_period(m, group);
        unsigned offset = (unsigned) (model_mix(m->seed ^ E_GROUP(2, group)) % period);
        unsigned in_step = (unsigned) (((s + offset) % period + period) % period);
        return in_step * 10 >= period * 7;
}

/* MoE: 4-second layers, dispatch all-to-all, two seconds of experts, combine. */
static bool moe_all_to_all(int64_t s) {
        int64_t p = ((s % 4) + 4) % 4;
        return p == 0 || p == 3;
}

/* Requests a core can serve per second: 15 ms each. */
#define INFERENCE_CAPACITY (1 / 0.015)

/* Fills util, mem, executions and host traffic of one physical core for
 * second s; the runtimes' liveness (st->rt_life) is known. */
static void core_second(struct model *m, unsigned core, int64_t s) {
        struct model_state *st = &m->st;
        const struct catalog_chip *chip = m->instance->chip;
        double share = (double) chip->memory_bytes / chip->cores;
        unsigned d = core / m->cores, g = m->group[d];
        double u = 0, mem = 0, ok = 0, drop = 0, in = 0, out = 0;
        int owner = m->owner[core / m->lnc];
        enum job job = owner >= 0 && st->rt_life[owner] != RUNTIME_DOWN ? (enum job) m->job[core] : JOB_FREE;

        st->eff_job[core] = (uint8_t) job;
        switch (job) {
        case JOB_FREE:
                /* No runtime: the driver's own rings and notifications only. */
                mem = 0.002 * share;
                break;
        case JOB_ALLOCATED_IDLE:
                /* A process holds its model in memory and runs nothing. */
                mem = (0.6 + 0.2 * model_noise(m, E_GROUP(3, g), 0)) * share;
                break;
        case JOB_STEADY: {
                double swing = 0.3 * sin(2 * M_PI * (double) s / 600.0 + m->phase[core]);
                u = clamp(0.55 + swing + 0.1 * (model_noise(m, E_CORE(0, core), s) - 0.5), 0, 1);
                mem = share * (0.6 + 0.05 * sin(2 * M_PI * (double) s / 3600.0 + m->phase[core]));
                ok = 20 * u;
                in = 0.002 * chip->dma_bandwidth * u / chip->cores;
                out = 0.001 * chip->dma_bandwidth * u / chip->cores;
                break;
        }
        case JOB_TRAINING: {
                bool reduce = training_allreduce(m, g, s);
                double n = model_noise(m, E_CORE(0, core), s);
                u = reduce ? 0.08 + 0.1 * n : 0.86 + 0.12 * n;
                /* Weights, optimizer state and activations: a steady fraction
                 * chosen per job, breathing by 1 % over a step. */
                mem = share * (0.75 + 0.15 * model_noise(m, E_GROUP(4, g), 0) + (reduce ? 0.01 : 0));
                ok = 1.0 / training_period(m, g);
                /* The input pipeline feeds batches during compute; every
                 * 30 minutes a 20-second checkpoint goes to the host. */
                in = reduce ? 0 : 0.004 * chip->dma_bandwidth / chip->cores;
                int64_t ck = ((s % 1800) + 1800) % 1800;
                out = ck < 20 ? 0.015 * chip->dma_bandwidth / chip->cores : 0;
                break;
        }
        case JOB_INFERENCE: {
                double rate = 40 * (0.75 + 0.25 * sin(2 * M_PI * (double) s / 1800.0 + m->phase[core]));
                double req = rate * (0.2 + 1.6 * model_noise(m, E_CORE(0, core), s));
                if (model_noise(m, E_CORE(1, core), s) > 0.97)
                        req *= 2.5; /* a burst */
                u = clamp(req / INFERENCE_CAPACITY, 0, 1);
                /* What a burst brings beyond the core's capacity is refused. */
                ok = floor(req < INFERENCE_CAPACITY ? req : INFERENCE_CAPACITY);
                drop = floor(req) - ok;
                /* Weights plus a KV cache that fills and drains. */
                mem = share * (0.42 + 0.06 * (0.5 + 0.5 * sin(2 * M_PI * (double) s / 600.0 + m->phase[core])));
                in = ok * 4 * 1048576.0;
                out = ok * 1048576.0;
                break;
        }
        case JOB_MOE: {
                double n = model_noise(m, E_CORE(0, core), s);
                u = moe_all_to_all(s) ? 0.1 + 0.05 * n : clamp(m->weight[core] * (0.9 + 0.1 * n), 0, 1);
                mem = share * (0.82 + 0.1 * m->weight[core]);
                ok = 0.25;
                in = 0.001 * chip->dma_bandwidth / chip->cores;
                out = 0.0005 * chip->dma_bandwidth / chip->cores;
                break;
        }
        default:
                break;
        }
        /* A leak: the memory fills up to the fault's share, whatever runs. */
        if (st->hbm_full[d] * share > mem)
                mem = st->hbm_full[d] * share;
        if (st->stuck[core]) {
                /* Hung: nothing runs, nothing moves, the memory stays held;
                 * requests sent to it time out in the runtime's queue. */
                u = ok = drop = in = out = 0;
        }
        st->util[core] = u;
        st->mem[core] = pages(clamp(mem, 0, share));
        st->ok_rate[core] = ok;
        st->fail_rate[core] = 0;
        st->drop_rate[core] = drop;
        st->host_in[d] += in;
        st->host_out[d] += out;
}

/* NeuronLink demand of a device (0-1) for second s, from its first core's job. */
static double device_demand(const struct model *m, unsigned d, double u_dev, int64_t s) {
        unsigned core = d * m->cores;
        switch ((enum job) m->st.eff_job[core]) {
        case JOB_STEADY:
                return 0.4 * u_dev;
        case JOB_TRAINING:
                return training_allreduce(m, m->group[d], s) ? 0.85 + 0.1 * model_noise(m, E_DEV(0, d), s) : 0.04;
        case JOB_INFERENCE:
                /* Tensor-parallel pairs exchange activations. */
                return 0.05 * u_dev;
        case JOB_MOE:
                /* Token routing is uneven: busy experts' devices send more. */
                return moe_all_to_all(s) ? 0.5 + 0.45 * m->dev_weight[d] : 0.05;
        default:
                return 0;
        }
}

static bool fault_in_force(const struct model_fault_status *f, int64_t s) {
        return s >= f->start_ms / 1000 && (f->end_ms == INT64_MAX || s < f->end_ms / 1000);
}

static bool link_cut(const struct model *m, const struct model_link *l, int64_t s) {
        for (size_t i = 0; i < m->n_active; i++) {
                const struct model_fault_status *f = &m->active[i];
                if (f->fault.kind != FAULT_LINK_DOWN || !fault_in_force(f, s))
                        continue;
                if ((f->fault.target == l->from && f->fault.peer == l->to) ||
                    (f->fault.target == l->to && f->fault.peer == l->from))
                        return true;
        }
        return false;
}

void model_state_compute(struct model *m, int64_t s) {
        struct model_state *st = &m->st;
        const struct catalog_chip *chip = m->instance->chip;
        unsigned n_dev = m->n_dev;

        if (st->second == s)
                return;
        st->second = s;
        memset(st->down, 0, n_dev);
        memset(st->off_switch, 0, n_dev);
        memset(st->stuck, 0, m->n_cores);
        memset(st->ecc_rate, 0, (size_t) n_dev * MODEL_ECC_TYPES * sizeof(double));
        memset(st->hbm_full, 0, n_dev * sizeof(double));
        memset(st->host_in, 0, n_dev * sizeof(double));
        memset(st->host_out, 0, n_dev * sizeof(double));
        for (size_t r = 0; r < m->n_runtimes; r++)
                st->rt_life[r] = model_runtime_life(m, r, s);
        for (size_t i = 0; i < m->n_active; i++) {
                const struct model_fault_status *f = &m->active[i];
                if (!fault_in_force(f, s))
                        continue;
                if (f->fault.kind == FAULT_DEVICE_DOWN)
                        st->down[f->fault.target] = 1;
                else if (f->fault.kind == FAULT_CORE_STUCK)
                        /* A logical core: all its physical cores hang. */
                        memset(&st->stuck[f->fault.target * m->lnc], 1, m->lnc);
                else if (f->fault.kind == FAULT_LINK_DOWN && f->fault.peer == MODEL_PEER_SWITCH)
                        st->off_switch[f->fault.target] = 1;
                else if (f->fault.kind == FAULT_ECC)
                        st->ecc_rate[f->fault.target * MODEL_ECC_TYPES + f->fault.ecc] += f->fault.rate;
                else if (f->fault.kind == FAULT_HBM_FULL && f->fault.rate > st->hbm_full[f->fault.target])
                        st->hbm_full[f->fault.target] = f->fault.rate;
        }

        for (unsigned c = 0; c < m->n_cores; c++)
                core_second(m, c, s);
        for (size_t i = 0; i < m->n_active; i++) {
                const struct model_fault_status *f = &m->active[i];
                if (f->fault.kind != FAULT_EXEC_ERRORS || !fault_in_force(f, s))
                        continue;
                /* A logical core: its physical cores share the failures, and
                 * only a core that runs something can fail. */
                for (unsigned k = 0; k < m->lnc; k++) {
                        unsigned c = f->fault.target * m->lnc + k;
                        if (st->eff_job[c] == JOB_FREE)
                                continue;
                        double rate = f->fault.rate / m->lnc;
                        st->fail_rate[c] += rate;
                        st->ok_rate[c] = st->ok_rate[c] > rate ? st->ok_rate[c] - rate : 0;
                }
        }

        /* A device that is gone does nothing at all. */
        for (unsigned d = 0; d < n_dev; d++) {
                double u = 0;
                for (unsigned k = 0; k < m->cores; k++)
                        u += st->util[d * m->cores + k];
                u /= m->cores;
                st->demand[d] = st->down[d] ? 0 : clamp(device_demand(m, d, u, s), 0, 1);
                st->u_dev[d] = st->down[d] ? 0 : u;
                if (st->down[d]) {
                        for (unsigned k = 0; k < m->cores; k++) {
                                unsigned c = d * m->cores + k;
                                st->util[c] = st->ok_rate[c] = st->fail_rate[c] = st->drop_rate[c] = 0;
                        }
                        st->host_in[d] = st->host_out[d] = 0;
                        for (int e = 0; e < MODEL_ECC_TYPES; e++)
                                st->ecc_rate[d * MODEL_ECC_TYPES + e] = 0;
                }
        }

        /* NeuronLink: each link carries its sender's demand times its
         * capacity, between devices of one group only. */
        if (m->instance->topology == TOPOLOGY_SWITCH) {
                double port = m->instance->link_bandwidth * m->link_budget / 2;
                memset(st->group_sum, 0, n_dev * sizeof(double));
                memset(st->group_n, 0, n_dev * sizeof(unsigned));
                for (unsigned d = 0; d < n_dev; d++)
                        if (!st->down[d] && !st->off_switch[d]) {
                                st->group_sum[m->group[d]] += port * st->demand[d];
                                st->group_n[m->group[d]]++;
                        }
                /* All-to-all: a device spreads what it sends evenly over the
                 * other reachable devices of its group, so it receives the
                 * mean of what they send; a pair's link carries that share
                 * each way. */
                for (size_t l = 0; l < m->n_links; l++) {
                        unsigned d = m->links[l].from, p = m->links[l].to, g = m->group[d], n = st->group_n[g];
                        bool on = !st->down[d] && !st->off_switch[d] && n > 1;
                        double tx = on ? port * st->demand[d] : 0;
                        if (p == MODEL_PEER_SWITCH) {
                                st->tx_rate[l] = tx;
                                st->rx_rate[l] = on ? clamp((st->group_sum[g] - tx) / (n - 1), 0, port) : 0;
                                continue;
                        }
                        on = on && !st->down[p] && !st->off_switch[p] && m->group[p] == g;
                        st->tx_rate[l] = on ? tx / (n - 1) : 0;
                        st->rx_rate[l] = on ? port * st->demand[p] / (n - 1) : 0;
                }
        } else {
                /* A link's capacity is the same both ways: what it receives
                 * is what the peer's link to this device sends. */
                for (size_t l = 0; l < m->n_links; l++) {
                        const struct model_link *lk = &m->links[l];
                        bool on = !st->down[lk->from] && !st->down[lk->to] && m->group[lk->from] == m->group[lk->to] &&
                                  !link_cut(m, lk, s);
                        st->tx_rate[l] = on ? lk->cap * st->demand[lk->from] : 0;
                        st->rx_rate[l] = on ? lk->cap * st->demand[lk->to] : 0;
                }
        }

        /* Device totals: DMA by direction, HBM traffic, power. */
        double host_max = HOST_DMA_SHARE * chip->dma_bandwidth;
        for (unsigned d = 0; d < n_dev; d++) {
                double *dma = &st->dma_rate[d * DMA__COUNT];
                dma[DMA_HOST_TO_DEVICE] = clamp(st->host_in[d], 0, host_max);
                dma[DMA_DEVICE_TO_HOST] = clamp(st->host_out[d], 0, host_max);
                dma[DMA_DEVICE_TO_DEVICE] = 0;
        }
        double *rx_dev = st->rx_dev;
        memset(rx_dev, 0, n_dev * sizeof(double));
        for (size_t l = 0; l < m->n_links; l++) {
                st->dma_rate[m->links[l].from * DMA__COUNT + DMA_DEVICE_TO_DEVICE] += st->tx_rate[l];
                rx_dev[m->links[l].from] += st->rx_rate[l];
        }
        for (unsigned d = 0; d < n_dev; d++) {
                const double *dma = &st->dma_rate[d * DMA__COUNT];
                double u = st->u_dev[d];
                double link = dma[DMA_DEVICE_TO_DEVICE] + rx_dev[d];
                /* DMA reads what it sends and writes what it receives. */
                double dma_read = dma[DMA_DEVICE_TO_HOST] + dma[DMA_DEVICE_TO_DEVICE];
                double dma_write = dma[DMA_HOST_TO_DEVICE] + rx_dev[d];
                double room = HBM_CEILING * chip->memory_bandwidth - dma_read - dma_write;
                double compute = room > 0 ? room * 0.85 * u : 0;
                st->hbm_rate[d * 2] = dma_read + 0.6 * compute;
                st->hbm_rate[d * 2 + 1] = dma_write + 0.4 * compute;
                double link_cap = m->instance->link_bandwidth + m->instance->cross_link_bandwidth;
                double link_frac = link_cap > 0 ? link / link_cap : 0;
                st->power[d] = st->down[d] ? 0 : clamp(0.12 + 0.65 * u + 0.15 * link_frac, 0, 1);
        }
        model_runtimes_second(m, s);
}

/* Adds dt seconds of the current second's rates to the runtimes' counters
 * and their cores' operations; a runtime that came back as a new process
 * counts from zero. */
void model_runtimes_restart(struct model *m) {
        for (size_t r = 0; r < m->n_runtimes; r++) {
                const struct model_runtime *rt = &m->runtimes[r];
                uint64_t life = m->st.rt_life[r];
                if (life == RUNTIME_DOWN || m->counted_life[r] == life)
                        continue;
                memset(&m->rt_exec[r * EXEC_STATUS__COUNT], 0, EXEC_STATUS__COUNT * sizeof(double));
                memset(&m->rt_err[r * EXEC_ERROR__COUNT], 0, EXEC_ERROR__COUNT * sizeof(double));
                memset(&m->flops[rt->first_core], 0, rt->n_cores * sizeof(double));
                m->counted_life[r] = life;
        }
}

static void count_runtimes(struct model *m, double dt) {
        struct model_state *st = &m->st;
        double peak = m->instance->chip->fp16_tflops * 1e12 / m->cores;

        model_runtimes_restart(m);
        for (size_t r = 0; r < m->n_runtimes; r++) {
                const struct model_runtime *rt = &m->runtimes[r];
                if (st->rt_life[r] == RUNTIME_DOWN)
                        continue;
                for (int k = 0; k < EXEC_STATUS__COUNT; k++)
                        m->rt_exec[r * EXEC_STATUS__COUNT + k] += st->rt_status[r * EXEC_STATUS__COUNT + k] * dt;
                for (int k = 0; k < EXEC_ERROR__COUNT; k++)
                        m->rt_err[r * EXEC_ERROR__COUNT + k] += st->rt_errors[r * EXEC_ERROR__COUNT + k] * dt;
                for (unsigned lc = rt->first_core; lc < rt->first_core + rt->n_cores; lc++)
                        for (unsigned k = 0; k < m->lnc; k++)
                                m->flops[lc] += st->util[lc * m->lnc + k] * peak * dt;
        }
}

/* Adds what happened during [from_ms, to_ms), one simulated second at a
 * time, so that rates are piecewise constant and within the chip's limits.
 * A gap longer than STEPS_PER_READ_MAX seconds (a clock jump, a stalled
 * loop at high speed) is integrated in as many longer steps, each at the
 * rates of its first second: still within the limits, and bounded in time. */
#define STEPS_PER_READ_MAX 3600
void model_advance(struct model *m, int64_t from_ms, int64_t to_ms) {
        struct model_state *st = &m->st;
        int64_t stride_s = (to_ms - from_ms) / 1000 / STEPS_PER_READ_MAX + 1;
        for (int64_t cur = from_ms; cur < to_ms;) {
                int64_t second = cur / 1000;
                int64_t end = (second + stride_s) * 1000 < to_ms ? (second + stride_s) * 1000 : to_ms;
                double dt = (double) (end - cur) / 1000.0;
                double keep = exp(-dt / POWER_WINDOW_S);
                model_state_compute(m, second);
                count_runtimes(m, dt);
                for (unsigned d = 0; d < m->n_dev; d++) {
                        for (int i = 0; i < 2; i++)
                                m->hbm_bytes[d * 2 + i] += st->hbm_rate[d * 2 + i] * dt;
                        for (int i = 0; i < DMA__COUNT; i++)
                                m->dma_bytes[d * DMA__COUNT + i] += st->dma_rate[d * DMA__COUNT + i] * dt;
                        for (int i = 0; i < MODEL_ECC_TYPES; i++)
                                m->ecc_events[d * MODEL_ECC_TYPES + i] += st->ecc_rate[d * MODEL_ECC_TYPES + i] * dt;
                        if (!st->down[d])
                                m->power_avg[d] = st->power[d] + (m->power_avg[d] - st->power[d]) * keep;
                }
                for (size_t l = 0; l < m->n_links; l++) {
                        m->tx_bytes[l] += st->tx_rate[l] * dt;
                        m->rx_bytes[l] += st->rx_rate[l] * dt;
                }
                cur = end;
        }
}

void model_split_categories(const struct model *m, unsigned core, double total, double *out) {
        const unsigned *share = category_share[m->st.eff_job[core]];
        double rest = total;
        for (int i = 0; i < DRIVER_MEMORY_CATEGORIES - 1; i++) {
                out[i] = pages(total * share[i] / 1000.0);
                rest -= out[i];
        }
        out[DRIVER_MEMORY_CATEGORIES - 1] = rest;
}
