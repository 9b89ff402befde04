#include "config.h"

#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "collectors/model.h"

#define DEFAULT_INSTANCE "trn1.32xlarge"
#define FAULTS_MAX 64
#define PAGE 4096.0

enum dma_direction { DMA_HOST_TO_DEVICE, DMA_DEVICE_TO_HOST, DMA_DEVICE_TO_DEVICE, DMA__COUNT };

static const char *const dma_direction_names[DMA__COUNT] = {
        [DMA_HOST_TO_DEVICE] = "host_to_device",
        [DMA_DEVICE_TO_HOST] = "device_to_host",
        [DMA_DEVICE_TO_DEVICE] = "device_to_device",
};

enum scenario { SCENARIO_IDLE, SCENARIO_STEADY, SCENARIO_TRAINING, SCENARIO_INFERENCE, SCENARIO_MOE, SCENARIO_MIXED };

static const char *const scenario_names[] = {
        [SCENARIO_IDLE] = "idle",           [SCENARIO_STEADY] = "steady", [SCENARIO_TRAINING] = "training",
        [SCENARIO_INFERENCE] = "inference", [SCENARIO_MOE] = "moe",       [SCENARIO_MIXED] = "mixed",
};
#define SCENARIO__COUNT (sizeof(scenario_names) / sizeof(scenario_names[0]))

/* What a NeuronCore runs. A scenario is an assignment of jobs to cores. */
enum job { JOB_FREE, JOB_ALLOCATED_IDLE, JOB_STEADY, JOB_TRAINING, JOB_INFERENCE, JOB_MOE, JOB__COUNT };

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

/* Host DMA per direction is capped at this share of the chip's DMA
 * bandwidth: the PCIe link to the host is far narrower than the engines. */
#define HOST_DMA_SHARE 0.02
/* NeuronLink and host DMA together stay under this share of the memory
 * bandwidth, since every byte they move is read from or written to HBM;
 * compute traffic takes what is left, up to HBM_CEILING. */
#define LINK_HBM_SHARE 0.9
#define HBM_CEILING 0.97
/* sysfs power utilization averages over the last minute. */
#define POWER_WINDOW_S 60.0

struct model_link {
        unsigned from, to; /* to is MODEL_PEER_SWITCH for a device's port on a NeuronSwitch */
        size_t reverse;    /* point to point: index of the to->from link */
        double cap;        /* bytes per second one way at full intensity */
};

/* Rates in force during one simulated second. */
struct model_state {
        int64_t second;      /* INT64_MIN when nothing is computed */
        double *util;        /* [core] 0-1 */
        double *mem;         /* [core] bytes, whole pages */
        double *ok_rate;     /* [core] successful executions per second */
        double *fail_rate;   /* [core] failed executions per second */
        double *hbm_rate;    /* [device * 2] read, write bytes per second */
        double *dma_rate;    /* [device * DMA__COUNT] bytes per second */
        double *power;       /* [device] 0-1, instantaneous */
        double *ecc_rate;    /* [device * DRIVER_ECC__COUNT] events per second */
        double *tx_rate;     /* [link] bytes per second */
        double *rx_rate;     /* [link] bytes per second */
        double *demand;      /* [device] NeuronLink demand 0-1 */
        double *u_dev;       /* [device] mean utilization of its cores */
        double *rx_dev;      /* [device] bytes per second received over NeuronLink */
        double *host_in;     /* [device] host to device demand, bytes per second */
        double *host_out;    /* [device] device to host demand, bytes per second */
        double *group_sum;   /* [device] switch traffic sent per group */
        unsigned *group_n;   /* [device] devices on the switch per group */
        uint8_t *down;       /* [device] */
        uint8_t *off_switch; /* [device] port to the switch down */
        uint8_t *stuck;      /* [core] */
};

struct model {
        struct collector base;
        const struct catalog_instance *instance;
        enum scenario scenario;
        uint64_t seed;
        bool categories;
        unsigned n_dev, n_cores, cores;
        size_t n_links;
        struct model_link *links;
        uint8_t *job;       /* [core] */
        unsigned *group;    /* [device] devices of one group exchange NeuronLink traffic */
        double *phase;      /* [core] a fixed random phase in [0, 2 pi) */
        double *weight;     /* [core] MoE expert popularity, 0.15-1 */
        double *dev_weight; /* [device] mean weight of its cores */
        double link_budget; /* share of link capacity usable under the HBM limit, 0-1 */
        struct model_state st;
        /* Counters since the model started. */
        double *exec_ok, *exec_fail; /* [core] */
        double *hbm_bytes;           /* [device * 2] */
        double *dma_bytes;           /* [device * DMA__COUNT] */
        double *ecc_events;          /* [device * DRIVER_ECC__COUNT] */
        double *tx_bytes, *rx_bytes; /* [link] */
        double *power_avg;           /* [device] gauge, a one-minute moving average */
        int64_t last_ms;             /* simulated time integrated so far; -1 before the first read */
        /* Faults: queued by any thread under lock, moved to active by read(). */
        pthread_mutex_t lock;
        struct model_fault pending[FAULTS_MAX];
        size_t n_pending;
        bool clear_requested;
        struct model_fault_status active[FAULTS_MAX];
        size_t n_active;
        int64_t fault_clock_ms; /* the latest read's time, for listing; under lock */
        /* Offsets of each family's first series in the inventory. */
        size_t off_util, off_core_mem, off_cat, off_ok, off_err;
        size_t off_up, off_dev_mem, off_dev_total, off_hbm, off_dma, off_power, off_ecc, off_tx, off_rx;
};

/* splitmix64: a tiny, well-mixed hash so that every value is a pure function
 * of (seed, entity, simulated second): the same seed gives the same series. */
static uint64_t mix(uint64_t x) {
        x += 0x9e3779b97f4a7c15ull;
        x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
        x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
        return x ^ (x >> 31);
}

/* Uniform in [0, 1). Entities: 0x1xxxxxxx cores, 0x2xxxxxxx devices,
 * 0x3xxxxxxx groups; the top bits pick the quantity. */
static double noise(const struct model *m, uint64_t entity, int64_t second) {
        return (double) (mix(m->seed ^ mix(entity ^ mix((uint64_t) second))) >> 11) / 9007199254740992.0;
}

static double clamp(double v, double lo, double hi) {
        return v < lo ? lo : v > hi ? hi : v;
}

static double pages(double bytes) {
        return floor(bytes / PAGE) * PAGE;
}

/* ---- workloads -------------------------------------------------------- */

#define E_CORE(q, c) ((uint64_t) (q) << 40 | 1u << 28 | (c))
#define E_DEV(q, d) ((uint64_t) (q) << 40 | 2u << 28 | (d))
#define E_GROUP(q, g) ((uint64_t) (q) << 40 | 3u << 28 | (g))

/* Training: a data-parallel step of 8-15 seconds per job, compute first,
 * then an all-reduce over NeuronLink for the last 30 %. */
static unsigned training_period(const struct model *m, unsigned group) {
        return 8 + (unsigned) (mix(m->seed ^ E_GROUP(1, group)) % 8);
}

static bool training_allreduce(const struct model *m, unsigned group, int64_t s) {
        unsigned period = training_period(m, group);
        unsigned offset = (unsigned) (mix(m->seed ^ E_GROUP(2, group)) % period);
        unsigned in_step = (unsigned) (((s + offset) % period + period) % period);
        return in_step * 10 >= period * 7;
}

/* MoE: 4-second layers, dispatch all-to-all, two seconds of experts, combine. */
static bool moe_all_to_all(int64_t s) {
        int64_t p = ((s % 4) + 4) % 4;
        return p == 0 || p == 3;
}

/* Fills util, mem, executions and host traffic of one core for second s. */
static void core_second(struct model *m, unsigned core, int64_t s) {
        struct model_state *st = &m->st;
        const struct catalog_chip *chip = m->instance->chip;
        double share = (double) chip->memory_bytes / chip->cores;
        unsigned d = core / m->cores, g = m->group[d];
        double u = 0, mem = 0, ok = 0, in = 0, out = 0;

        switch ((enum job) m->job[core]) {
        case JOB_FREE:
                /* No runtime: the driver's own rings and notifications only. */
                mem = 0.002 * share;
                break;
        case JOB_ALLOCATED_IDLE:
                /* A process holds its model in memory and runs nothing. */
                mem = (0.6 + 0.2 * noise(m, E_GROUP(3, g), 0)) * share;
                break;
        case JOB_STEADY: {
                double swing = 0.3 * sin(2 * M_PI * (double) s / 600.0 + m->phase[core]);
                u = clamp(0.55 + swing + 0.1 * (noise(m, E_CORE(0, core), s) - 0.5), 0, 1);
                mem = share * (0.6 + 0.05 * sin(2 * M_PI * (double) s / 3600.0 + m->phase[core]));
                ok = 20 * u;
                in = 0.002 * chip->dma_bandwidth * u / chip->cores;
                out = 0.001 * chip->dma_bandwidth * u / chip->cores;
                break;
        }
        case JOB_TRAINING: {
                bool reduce = training_allreduce(m, g, s);
                double n = noise(m, E_CORE(0, core), s);
                u = reduce ? 0.08 + 0.1 * n : 0.86 + 0.12 * n;
                /* Weights, optimizer state and activations: a steady fraction
                 * chosen per job, breathing by 1 % over a step. */
                mem = share * (0.75 + 0.15 * noise(m, E_GROUP(4, g), 0) + (reduce ? 0.01 : 0));
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
                double req = rate * (0.2 + 1.6 * noise(m, E_CORE(0, core), s));
                if (noise(m, E_CORE(1, core), s) > 0.97)
                        req *= 2.5; /* a burst */
                u = clamp(req * 0.015, 0, 1);
                ok = floor(req);
                /* Weights plus a KV cache that fills and drains. */
                mem = share * (0.42 + 0.06 * (0.5 + 0.5 * sin(2 * M_PI * (double) s / 600.0 + m->phase[core])));
                in = ok * 4 * 1048576.0;
                out = ok * 1048576.0;
                break;
        }
        case JOB_MOE: {
                double n = noise(m, E_CORE(0, core), s);
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
        if (st->stuck[core]) {
                /* Hung: nothing runs, nothing moves, the memory stays held. */
                u = ok = in = out = 0;
        }
        st->util[core] = u;
        st->mem[core] = pages(clamp(mem, 0, share));
        st->ok_rate[core] = ok;
        st->fail_rate[core] = 0;
        st->host_in[d] += in;
        st->host_out[d] += out;
}

/* NeuronLink demand of a device (0-1) for second s, from its first core's job. */
static double device_demand(const struct model *m, unsigned d, double u_dev, int64_t s) {
        unsigned core = d * m->cores;
        switch ((enum job) m->job[core]) {
        case JOB_STEADY:
                return 0.4 * u_dev;
        case JOB_TRAINING:
                return training_allreduce(m, m->group[d], s) ? 0.85 + 0.1 * noise(m, E_DEV(0, d), s) : 0.04;
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

/* Computes every rate in force during simulated second s. */
static void state_compute(struct model *m, int64_t s) {
        struct model_state *st = &m->st;
        const struct catalog_chip *chip = m->instance->chip;
        unsigned n_dev = m->n_dev;

        if (st->second == s)
                return;
        st->second = s;
        memset(st->down, 0, n_dev);
        memset(st->off_switch, 0, n_dev);
        memset(st->stuck, 0, m->n_cores);
        memset(st->ecc_rate, 0, (size_t) n_dev * DRIVER_ECC__COUNT * sizeof(double));
        memset(st->host_in, 0, n_dev * sizeof(double));
        memset(st->host_out, 0, n_dev * sizeof(double));
        for (size_t i = 0; i < m->n_active; i++) {
                const struct model_fault_status *f = &m->active[i];
                if (!fault_in_force(f, s))
                        continue;
                if (f->fault.kind == FAULT_DEVICE_DOWN)
                        st->down[f->fault.target] = 1;
                else if (f->fault.kind == FAULT_CORE_STUCK)
                        st->stuck[f->fault.target] = 1;
                else if (f->fault.kind == FAULT_LINK_DOWN && f->fault.peer == MODEL_PEER_SWITCH)
                        st->off_switch[f->fault.target] = 1;
                else if (f->fault.kind == FAULT_ECC)
                        st->ecc_rate[f->fault.target * DRIVER_ECC__COUNT + f->fault.ecc] += 1;
        }

        for (unsigned c = 0; c < m->n_cores; c++)
                core_second(m, c, s);
        for (size_t i = 0; i < m->n_active; i++) {
                const struct model_fault_status *f = &m->active[i];
                if (f->fault.kind != FAULT_EXEC_ERRORS || !fault_in_force(f, s))
                        continue;
                unsigned c = f->fault.target;
                st->fail_rate[c] += f->fault.rate;
                st->ok_rate[c] = st->ok_rate[c] > f->fault.rate ? st->ok_rate[c] - f->fault.rate : 0;
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
                                st->util[c] = st->ok_rate[c] = st->fail_rate[c] = 0;
                        }
                        st->host_in[d] = st->host_out[d] = 0;
                        for (int e = 0; e < DRIVER_ECC__COUNT; e++)
                                st->ecc_rate[d * DRIVER_ECC__COUNT + e] = 0;
                }
        }

        /* NeuronLink: each link carries its sender's demand times its
         * capacity, between devices of one group only. */
        if (m->instance->topology == TOPOLOGY_SWITCH) {
                memset(st->group_sum, 0, n_dev * sizeof(double));
                memset(st->group_n, 0, n_dev * sizeof(unsigned));
                for (unsigned d = 0; d < n_dev; d++)
                        if (!st->down[d] && !st->off_switch[d]) {
                                st->group_sum[m->group[d]] += m->links[d].cap * st->demand[d];
                                st->group_n[m->group[d]]++;
                        }
                /* All-to-all: a device spreads what it sends evenly over the
                 * other reachable devices of its group, so it receives the
                 * mean of what they send. */
                for (unsigned d = 0; d < n_dev; d++) {
                        unsigned g = m->group[d], n = st->group_n[g];
                        bool on = !st->down[d] && !st->off_switch[d] && n > 1;
                        double tx = on ? m->links[d].cap * st->demand[d] : 0;
                        st->tx_rate[d] = tx;
                        st->rx_rate[d] = on ? clamp((st->group_sum[g] - tx) / (n - 1), 0, m->links[d].cap) : 0;
                }
        } else {
                for (size_t l = 0; l < m->n_links; l++) {
                        const struct model_link *lk = &m->links[l];
                        bool on = !st->down[lk->from] && !st->down[lk->to] && m->group[lk->from] == m->group[lk->to] &&
                                  !link_cut(m, lk, s);
                        st->tx_rate[l] = on ? lk->cap * st->demand[lk->from] : 0;
                }
                for (size_t l = 0; l < m->n_links; l++)
                        st->rx_rate[l] = st->tx_rate[m->links[l].reverse];
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
}

/* ---- reading ---------------------------------------------------------- */

/* Moves queued faults into force at now_ms and drops the ones that ended. */
static void faults_update(struct model *m, int64_t now_ms) {
        pthread_mutex_lock(&m->lock);
        if (m->clear_requested) {
                m->n_active = 0;
                m->clear_requested = false;
        }
        /* Keep what the integration from last_ms on may still need. */
        size_t kept = 0;
        for (size_t i = 0; i < m->n_active; i++) {
                const struct model_fault_status *f = &m->active[i];
                if (f->end_ms == INT64_MAX || f->end_ms / 1000 >= m->last_ms / 1000)
                        m->active[kept++] = *f;
        }
        m->n_active = kept;
        for (size_t i = 0; i < m->n_pending && m->n_active < FAULTS_MAX; i++) {
                const struct model_fault *f = &m->pending[i];
                /* Faults begin on a whole simulated second, so that the
                 * second they begin in is entirely theirs. */
                int64_t start = (now_ms + f->start_ms + 999) / 1000 * 1000;
                m->active[m->n_active++] = (struct model_fault_status){
                        .fault = *f,
                        .start_ms = start,
                        /* At least the whole second: an instant ECC fault is one event. */
                        .end_ms = f->duration_ms == MODEL_FAULT_FOREVER
                                          ? INT64_MAX
                                          : start + (f->duration_ms > 1000 ? f->duration_ms : 1000),
                };
        }
        m->n_pending = 0;
        m->fault_clock_ms = now_ms;
        pthread_mutex_unlock(&m->lock);
        /* The cached second may predate a fault that starts in it. */
        m->st.second = INT64_MIN;
}

/* Adds what happened during [from_ms, to_ms), one simulated second at a
 * time, so that rates are piecewise constant and within the chip's limits.
 * A gap longer than STEPS_PER_READ_MAX seconds (a clock jump, a stalled
 * loop at high speed) is integrated in as many longer steps, each at the
 * rates of its first second: still within the limits, and bounded in time. */
#define STEPS_PER_READ_MAX 3600
static void model_advance(struct model *m, int64_t from_ms, int64_t to_ms) {
        struct model_state *st = &m->st;
        int64_t stride_s = (to_ms - from_ms) / 1000 / STEPS_PER_READ_MAX + 1;
        for (int64_t cur = from_ms; cur < to_ms;) {
                int64_t second = cur / 1000;
                int64_t end = (second + stride_s) * 1000 < to_ms ? (second + stride_s) * 1000 : to_ms;
                double dt = (double) (end - cur) / 1000.0;
                double keep = exp(-dt / POWER_WINDOW_S);
                state_compute(m, second);
                for (unsigned c = 0; c < m->n_cores; c++) {
                        m->exec_ok[c] += st->ok_rate[c] * dt;
                        m->exec_fail[c] += st->fail_rate[c] * dt;
                }
                for (unsigned d = 0; d < m->n_dev; d++) {
                        for (int i = 0; i < 2; i++)
                                m->hbm_bytes[d * 2 + i] += st->hbm_rate[d * 2 + i] * dt;
                        for (int i = 0; i < DMA__COUNT; i++)
                                m->dma_bytes[d * DMA__COUNT + i] += st->dma_rate[d * DMA__COUNT + i] * dt;
                        for (int i = 0; i < DRIVER_ECC__COUNT; i++)
                                m->ecc_events[d * DRIVER_ECC__COUNT + i] +=
                                        st->ecc_rate[d * DRIVER_ECC__COUNT + i] * dt;
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

/* Counters are whole numbers; the epsilon absorbs the float error of adding
 * a rate over split seconds (1 event/s over 0.3 s + 0.7 s is 1 event). */
static double whole(double v) {
        return floor(v + 1e-6);
}

static void split_categories(const struct model *m, unsigned core, double total, double *out) {
        const unsigned *share = category_share[m->job[core]];
        double rest = total;
        for (int i = 0; i < DRIVER_MEMORY_CATEGORIES - 1; i++) {
                out[i] = pages(total * share[i] / 1000.0);
                rest -= out[i];
        }
        out[DRIVER_MEMORY_CATEGORIES - 1] = rest;
}

static int model_read(struct collector *c, int64_t now_ms, struct sample_batch *out) {
        struct model *m = (struct model *) c;
        struct model_state *st = &m->st;
        unsigned cores = m->cores;

        if (m->last_ms < 0) {
                m->last_ms = now_ms;
                faults_update(m, now_ms);
                state_compute(m, now_ms / 1000);
                for (unsigned d = 0; d < m->n_dev; d++)
                        m->power_avg[d] = st->power[d];
        } else {
                faults_update(m, now_ms > m->last_ms ? now_ms : m->last_ms);
        }
        /* Time that goes backwards adds nothing: counters never decrease. */
        if (now_ms > m->last_ms) {
                model_advance(m, m->last_ms, now_ms);
                m->last_ms = now_ms;
        }
        state_compute(m, m->last_ms / 1000);

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
                                split_categories(m, core, st->mem[core],
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

/* ---- faults from other threads ------------------------------------------ */

bool model_is(const struct collector *c) {
        return c && c->ops == &model_collector_ops;
}

static int fault_check(const struct model *m, const struct model_fault *f, char *err, size_t errlen) {
        bool core = f->kind == FAULT_CORE_STUCK || f->kind == FAULT_EXEC_ERRORS;
        unsigned limit = core ? m->n_cores : m->n_dev;
        if (f->target >= limit) {
                snprintf(err, errlen, "%s %u does not exist on %s (0-%u)", core ? "core" : "device", f->target,
                         m->instance->name, limit - 1);
                return -EINVAL;
        }
        if (f->kind != FAULT_LINK_DOWN)
                return 0;
        for (size_t l = 0; l < m->n_links; l++)
                if (m->links[l].from == f->target && m->links[l].to == f->peer)
                        return 0;
        if (f->peer == MODEL_PEER_SWITCH)
                snprintf(err, errlen, "device %u has no NeuronSwitch port on %s", f->target, m->instance->name);
        else
                snprintf(err, errlen, "device %u has no NeuronLink to device %u on %s", f->target, f->peer,
                         m->instance->name);
        return -EINVAL;
}

int model_fault_inject(struct collector *c, const struct model_fault *f, char *err, size_t errlen) {
        struct model *m = (struct model *) c;
        int r = fault_check(m, f, err, errlen);
        if (r < 0)
                return r;
        pthread_mutex_lock(&m->lock);
        if (m->n_pending + m->n_active >= FAULTS_MAX) {
                snprintf(err, errlen, "too many faults at once (at most %d)", FAULTS_MAX);
                r = -ENOSPC;
        } else {
                m->pending[m->n_pending++] = *f;
        }
        pthread_mutex_unlock(&m->lock);
        return r;
}

void model_fault_clear(struct collector *c) {
        struct model *m = (struct model *) c;
        pthread_mutex_lock(&m->lock);
        m->n_pending = 0;
        m->clear_requested = true;
        pthread_mutex_unlock(&m->lock);
}

size_t model_fault_list(struct collector *c, struct model_fault_status *out, size_t max) {
        struct model *m = (struct model *) c;
        size_t n = 0;
        pthread_mutex_lock(&m->lock);
        for (size_t i = 0; i < m->n_pending; i++, n++)
                if (n < max)
                        out[n] = (struct model_fault_status){ .fault = m->pending[i], .pending = true };
        for (size_t i = 0; !m->clear_requested && i < m->n_active; i++) {
                if (m->active[i].end_ms != INT64_MAX && m->active[i].end_ms <= m->fault_clock_ms)
                        continue;
                if (n < max)
                        out[n] = m->active[i];
                n++;
        }
        pthread_mutex_unlock(&m->lock);
        return n;
}

/* ---- opening ------------------------------------------------------------ */

static void model_close(struct collector *c) {
        struct model *m = (struct model *) c;
        if (!m)
                return;
        inventory_free(&m->base.inv);
        pthread_mutex_destroy(&m->lock);
        free(m->links);
        free(m->job);
        free(m->group);
        free(m->phase);
        free(m->weight);
        free(m->dev_weight);
        struct model_state *st = &m->st;
        double *arrays[] = { st->util,     st->mem,      st->ok_rate,   st->fail_rate, st->hbm_rate, st->dma_rate,
                             st->power,    st->ecc_rate, st->tx_rate,   st->rx_rate,   st->demand,   st->u_dev,
                             st->rx_dev,   st->host_in,  st->host_out,  st->group_sum, m->exec_ok,   m->exec_fail,
                             m->hbm_bytes, m->dma_bytes, m->ecc_events, m->tx_bytes,   m->rx_bytes,  m->power_avg };
        for (size_t i = 0; i < sizeof(arrays) / sizeof(arrays[0]); i++)
                free(arrays[i]);
        free(st->group_n);
        free(st->down);
        free(st->off_switch);
        free(st->stuck);
        free(m);
}

struct options {
        const struct catalog_instance *instance;
        enum scenario scenario;
        uint64_t seed;
        double speed;
        bool categories;
        struct model_fault faults[FAULTS_MAX];
        size_t n_faults;
};

static int parse_options(const struct collector_args *args, struct options *ret) {
        struct options o = {
                .instance = catalog_find(DEFAULT_INSTANCE), .scenario = SCENARIO_STEADY, .seed = 1, .speed = 1
        };
        char buf[1024];

        if (!args->options || !args->options[0])
                goto done;
        if (strlen(args->options) >= sizeof(buf)) {
                snprintf(args->err, args->errlen, "model options too long");
                return -EINVAL;
        }
        snprintf(buf, sizeof(buf), "%s", args->options);
        for (char *tok = buf, *next; tok; tok = next) {
                next = strchr(tok, ',');
                if (next)
                        *next++ = '\0';
                char *eq = strchr(tok, '=');
                char *end;
                if (!eq) {
                        if (tok != buf) {
                                snprintf(args->err, args->errlen, "model: option '%s' needs a value", tok);
                                return -EINVAL;
                        }
                        o.instance = catalog_find(tok);
                        if (!o.instance) {
                                snprintf(args->err, args->errlen,
                                         "model: unknown instance type '%s' (see --list-instances)", tok);
                                return -EINVAL;
                        }
                        continue;
                }
                *eq = '\0';
                const char *val = eq + 1;
                errno = 0;
                if (strcmp(tok, "seed") == 0) {
                        unsigned long long v = strtoull(val, &end, 10);
                        if (errno || end == val || *end || val[0] == '-') {
                                snprintf(args->err, args->errlen, "model: seed '%s' is not a non-negative integer",
                                         val);
                                return -EINVAL;
                        }
                        o.seed = v;
                } else if (strcmp(tok, "speed") == 0) {
                        double v = strtod(val, &end);
                        if (errno || end == val || *end || !(v >= 0.001 && v <= 1e6)) {
                                snprintf(args->err, args->errlen,
                                         "model: speed '%s' is not a number in [0.001, 1000000]", val);
                                return -EINVAL;
                        }
                        o.speed = v;
                } else if (strcmp(tok, "scenario") == 0) {
                        size_t i = 0;
                        while (i < SCENARIO__COUNT && strcmp(val, scenario_names[i]) != 0)
                                i++;
                        if (i == SCENARIO__COUNT) {
                                snprintf(
                                        args->err, args->errlen,
                                        "model: unknown scenario '%s' (expected idle, steady, training, inference, moe or mixed)",
                                        val);
                                return -EINVAL;
                        }
                        o.scenario = (enum scenario) i;
                } else if (strcmp(tok, "memory_categories") == 0) {
                        if (strcmp(val, "on") != 0 && strcmp(val, "off") != 0) {
                                snprintf(args->err, args->errlen, "model: memory_categories '%s' is not on or off",
                                         val);
                                return -EINVAL;
                        }
                        o.categories = strcmp(val, "on") == 0;
                } else if (strcmp(tok, "fault") == 0) {
                        char why[256];
                        if (o.n_faults == FAULTS_MAX) {
                                snprintf(args->err, args->errlen, "model: more than %d faults", FAULTS_MAX);
                                return -EINVAL;
                        }
                        if (model_fault_parse(val, &o.faults[o.n_faults], why, sizeof(why)) < 0) {
                                snprintf(args->err, args->errlen, "model: %s", why);
                                return -EINVAL;
                        }
                        o.n_faults++;
                } else {
                        snprintf(args->err, args->errlen, "model: unknown option '%s'", tok);
                        return -EINVAL;
                }
        }
done:
        *ret = o;
        return 0;
}

/* Which job each core runs and which devices work together. */
static void assign_jobs(struct model *m) {
        static const uint8_t scenario_job[] = {
                [SCENARIO_IDLE] = JOB_FREE,         [SCENARIO_STEADY] = JOB_STEADY,
                [SCENARIO_TRAINING] = JOB_TRAINING, [SCENARIO_INFERENCE] = JOB_INFERENCE,
                [SCENARIO_MOE] = JOB_MOE,
        };
        unsigned n = m->n_dev;

        for (unsigned d = 0; d < n; d++)
                m->group[d] = m->scenario == SCENARIO_INFERENCE ? d / 2 : 0;
        if (m->scenario != SCENARIO_MIXED) {
                memset(m->job, scenario_job[m->scenario], m->n_cores);
                return;
        }
        if (n == 1) {
                /* One device: jobs per core. The first serves requests, the
                 * last holds a model it does not run; any between train or
                 * stay free. */
                for (unsigned c = 0; c < m->cores; c++)
                        m->job[c] = c == 0              ? JOB_INFERENCE
                                    : c == m->cores - 1 ? JOB_ALLOCATED_IDLE
                                    : c % 2             ? JOB_FREE
                                                        : JOB_TRAINING;
                return;
        }
        /* Half the devices train together, an eighth (at least one) hold
         * memory without running, an eighth are free, the rest serve
         * inference in tensor-parallel pairs. */
        unsigned n_train = n / 2, n_alloc = n / 8 ? n / 8 : 1, n_free = n / 8;
        unsigned n_inf = n - n_train - n_alloc - n_free;
        for (unsigned d = 0; d < n; d++) {
                uint8_t job;
                if (d < n_train) {
                        job = JOB_TRAINING;
                        m->group[d] = 0;
                } else if (d < n_train + n_inf) {
                        job = JOB_INFERENCE;
                        m->group[d] = 1 + (d - n_train) / 2;
                } else {
                        job = d < n_train + n_inf + n_alloc ? JOB_ALLOCATED_IDLE : JOB_FREE;
                        m->group[d] = d;
                }
                memset(&m->job[d * m->cores], job, m->cores);
        }
}

/* Links from the topology, each with its one-way capacity. Every byte a link
 * moves also goes through HBM, so capacities are scaled down where NeuronLink
 * plus host DMA would exceed LINK_HBM_SHARE of the memory bandwidth. */
static int build_topology(struct model *m) {
        const struct catalog_instance *inst = m->instance;
        const struct catalog_chip *chip = inst->chip;
        struct inventory *inv = &m->base.inv;
        unsigned per = inst->torus_width * inst->torus_height;

        double total = inst->link_bandwidth + inst->cross_link_bandwidth;
        double limit = LINK_HBM_SHARE * chip->memory_bandwidth - 2 * HOST_DMA_SHARE * chip->dma_bandwidth;
        m->link_budget = total > limit ? limit / total : 1;

        for (unsigned d = 0; d < m->n_dev; d++) {
                struct device_info *dev = &inv->devices[d];
                dev->peers = calloc(m->n_dev, sizeof(unsigned));
                if (!dev->peers)
                        return -ENOMEM;
                dev->n_peers = catalog_topology_peers(inst, d, dev->peers);
        }
        if (inst->topology == TOPOLOGY_SWITCH)
                m->n_links = m->n_dev;
        else
                for (unsigned d = 0; d < m->n_dev; d++)
                        m->n_links += inv->devices[d].n_peers;
        m->links = calloc(m->n_links ? m->n_links : 1, sizeof(*m->links));
        if (!m->links)
                return -ENOMEM;
        if (inst->topology == TOPOLOGY_SWITCH) {
                /* One port per device: half the bandwidth each way. */
                for (unsigned d = 0; d < m->n_dev; d++)
                        m->links[d] = (struct model_link){ .from = d,
                                                           .to = MODEL_PEER_SWITCH,
                                                           .reverse = d,
                                                           .cap = inst->link_bandwidth * m->link_budget / 2 };
                return 0;
        }
        size_t l = 0;
        for (unsigned d = 0; d < m->n_dev; d++) {
                const struct device_info *dev = &inv->devices[d];
                unsigned in_server = 0, cross = 0;
                for (unsigned j = 0; j < dev->n_peers; j++) {
                        bool x = per && inst->servers > 1 && dev->peers[j] / per != d / per;
                        cross += x;
                        in_server += !x;
                }
                for (unsigned j = 0; j < dev->n_peers; j++) {
                        bool x = per && inst->servers > 1 && dev->peers[j] / per != d / per;
                        /* Both directions share the device's bandwidth. */
                        double cap = x ? inst->cross_link_bandwidth / (2.0 * cross)
                                       : inst->link_bandwidth / (2.0 * in_server);
                        m->links[l++] =
                                (struct model_link){ .from = d, .to = dev->peers[j], .cap = cap * m->link_budget };
                }
        }
        /* Peers are few per device: finding each reverse link is linear per device. */
        size_t *first = calloc(m->n_dev + 1, sizeof(size_t));
        if (!first)
                return -ENOMEM;
        for (size_t i = 0; i < m->n_links; i++)
                first[m->links[i].from + 1] = i + 1;
        for (unsigned d = 1; d <= m->n_dev; d++)
                if (first[d] < first[d - 1])
                        first[d] = first[d - 1];
        for (size_t a = 0; a < m->n_links; a++) {
                unsigned to = m->links[a].to;
                for (size_t b = first[to]; b < first[to + 1]; b++)
                        if (m->links[b].to == m->links[a].from)
                                m->links[a].reverse = b;
        }
        free(first);
        return 0;
}

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
        if ((r = add_core_family(m, METRIC_CORE_EXECUTION_STATUS, "success", &m->off_ok)) < 0 ||
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

static int alloc_state(struct model *m) {
        struct model_state *st = &m->st;
        size_t nc = m->n_cores, nd = m->n_dev, nl = m->n_links ? m->n_links : 1;
        struct {
                double **p;
                size_t n;
        } arrays[] = {
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
        for (size_t i = 0; i < sizeof(arrays) / sizeof(arrays[0]); i++) {
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

static int model_open(const struct collector_args *args, struct collector **ret) {
        struct options *o = calloc(1, sizeof(*o));
        struct model *m = NULL;
        int r;

        if (!o)
                return -ENOMEM;
        r = parse_options(args, o);
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
        if ((r = build_topology(m)) < 0 || (r = alloc_state(m)) < 0 || (r = build_series(m)) < 0)
                goto out;
        assign_jobs(m);
        for (unsigned c = 0; c < m->n_cores; c++) {
                m->phase[c] = 2 * M_PI * noise(m, E_CORE(2, c), 0);
                /* A few popular experts, a long tail of quiet ones. */
                double w = noise(m, E_CORE(3, c), 0);
                m->weight[c] = 0.15 + 0.85 * w * w;
                m->dev_weight[c / m->cores] += m->weight[c] / m->cores;
        }
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
