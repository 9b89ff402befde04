/* What the device model's files share; not part of its interface.
 *
 *   model.c           the collector: open, read, close, the series it reports
 *   model-options.c   the backend spec's options
 *   model-topology.c  jobs per core, NeuronLink links and their capacities
 *   model-noise.c     the hash every varying value derives from
 *   model-physics.c   the simulation: rates per simulated second, counters
 *   model-runtime.c   the Neuron runtimes a scenario places, their lives and
 *                     figures, and the made-up instance identity
 *   model-fault.c     faults: their text form, the queue other threads fill
 *
 * Everything here runs on the tick loop's thread, except what model.h
 * says may be called from others (those take the model's lock). */
#pragma once

#include <pthread.h>

#include "collectors/model.h"

#define FAULTS_MAX 64

/* The ECC counters the model keeps: the driver's three uncorrected ones,
 * then the corrected ones neuron-monitor's neuron_hw_counters reports
 * (sysfs has none). model_ecc_names[] spells them. */
#define MODEL_ECC_TYPES (DRIVER_ECC__COUNT + 2)
extern const char *const model_ecc_names[MODEL_ECC_TYPES];

enum dma_direction { DMA_HOST_TO_DEVICE, DMA_DEVICE_TO_HOST, DMA_DEVICE_TO_DEVICE, DMA__COUNT };

enum scenario { SCENARIO_IDLE, SCENARIO_STEADY, SCENARIO_TRAINING, SCENARIO_INFERENCE, SCENARIO_MOE, SCENARIO_MIXED };

/* What a NeuronCore runs. A scenario is an assignment of jobs to logical
 * cores; the runtime holding a core runs its job while it lives, and the
 * core is free while it does not. */
enum job { JOB_FREE, JOB_ALLOCATED_IDLE, JOB_STEADY, JOB_TRAINING, JOB_INFERENCE, JOB_MOE, JOB__COUNT };

/* A Neuron runtime the scenario places: a process holding the logical
 * cores [first_core, first_core + n_cores). */
struct model_runtime {
        enum job job;
        unsigned first_core, n_cores;
        char name[24];  /* its NEURON_PROCESS_TAG, or "" when its tag is its pid */
        bool restarts;  /* exits every hour and comes back as a new process */
        unsigned phase; /* seconds into its hour at Unix time 0 */
};

/* A runtime's incarnation when it is not running. */
#define RUNTIME_DOWN UINT64_MAX

/* Host DMA per direction is capped at this share of the chip's DMA
 * bandwidth: the PCIe link to the host is far narrower than the engines. */
#define HOST_DMA_SHARE 0.02
/* NeuronLink and host DMA together stay under this share of the memory
 * bandwidth, since every byte they move is read from or written to HBM;
 * compute traffic takes what is left, up to HBM_CEILING. */
#define LINK_HBM_SHARE 0.9
#define HBM_CEILING 0.97

struct model_link {
        unsigned from, to; /* to is MODEL_PEER_SWITCH for a device's port on a NeuronSwitch */
        double cap;        /* bytes per second one way at full intensity; the same for to->from */
};

/* Rates in force during one simulated second. */
struct model_state {
        int64_t second;      /* INT64_MIN when nothing is computed */
        double *util;        /* [core] 0-1 */
        double *mem;         /* [core] bytes, whole pages */
        double *ok_rate;     /* [core] successful executions per second */
        double *fail_rate;   /* [core] failed executions per second */
        double *drop_rate;   /* [core] requests refused per second: more than the core can take */
        uint8_t *eff_job;    /* [core] the job the core runs this second (JOB_FREE when its runtime is down) */
        uint64_t *rt_life;   /* [runtime] its incarnation this second, or RUNTIME_DOWN */
        double *rt_status;   /* [runtime * EXEC_STATUS__COUNT] executions per second by outcome */
        double *rt_errors;   /* [runtime * EXEC_ERROR__COUNT] errors per second by type */
        double *rt_latency;  /* [runtime * 2] median total, device latency (s); 0 without executions */
        double *rt_sigma;    /* [runtime] spread of its latencies (log-normal sigma) */
        double *rt_vcpu;     /* [runtime * 2] user, system share of the host's vCPUs */
        double *rt_host_mem; /* [runtime * HOST_MEM__COUNT] bytes */
        double *hbm_rate;    /* [device * 2] read, write bytes per second */
        double *dma_rate;    /* [device * DMA__COUNT] bytes per second */
        double *power;       /* [device] 0-1, instantaneous */
        double *ecc_rate;    /* [device * MODEL_ECC_TYPES] events per second */
        double *hbm_full;    /* [device] share of each core's memory a leak holds, or 0 */
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
        /* Physical cores: n_cores host-wide, cores per device; logical:
         * n_lcores host-wide, lcores per device, lnc physical cores each
         * (logical core L is physical cores L * lnc ... L * lnc + lnc - 1). */
        unsigned n_dev, n_cores, cores;
        unsigned lnc, n_lcores, lcores;
        /* The devices this daemon reports, [dev_first, dev_first + dev_count),
         * and their first logical core: every device, or one node's (node >= 0)
         * of an UltraServer. The whole UltraServer is simulated either way, so
         * that every node's daemon computes the same traffic between nodes;
         * links, series and counters are the reported devices' only. */
        int node;
        unsigned dev_first, dev_count, lc_first;
        size_t n_links;
        struct model_link *links;
        uint8_t *job;       /* [core] the scenario's job, while its runtime runs */
        unsigned *group;    /* [device] devices of one group exchange NeuronLink traffic */
        double *phase;      /* [core] a fixed random phase in [0, 2 pi) */
        double *weight;     /* [core] MoE expert popularity, 0.15-1 */
        double *dev_weight; /* [device] mean weight of its cores */
        double link_budget; /* share of link capacity usable under the HBM limit, 0-1 */
        /* Runtimes: the scenario's, the one holding each logical core (-1:
         * none), and the incarnation of each the inventory lists. */
        size_t n_runtimes;
        struct model_runtime *runtimes;
        int *owner;       /* [logical core] */
        uint64_t *listed; /* [runtime] RUNTIME_DOWN when not listed */
        struct model_state st;
        /* Counters of each runtime's current incarnation (counted_life). */
        uint64_t *counted_life; /* [runtime] */
        double *rt_exec;        /* [runtime * EXEC_STATUS__COUNT] */
        double *rt_err;         /* [runtime * EXEC_ERROR__COUNT] */
        double *flops;          /* [logical core] by its runtime's current incarnation */
        /* Counters since the model started. */
        double *hbm_bytes;           /* [device * 2] */
        double *dma_bytes;           /* [device * DMA__COUNT] */
        double *ecc_events;          /* [device * MODEL_ECC_TYPES] */
        double *tx_bytes, *rx_bytes; /* [link] */
        double *power_avg;           /* [device] gauge, a one-minute moving average */
        uint64_t *busy_us;           /* [logical core] its utilization gauge times each interval */
        int64_t last_ms;             /* simulated time integrated so far; -1 before the first read */
        /* Faults: queued by any thread under lock, moved to active by read(). */
        pthread_mutex_t lock;
        struct model_fault pending[FAULTS_MAX];
        size_t n_pending;
        bool clear_requested;
        struct model_fault_status active[FAULTS_MAX];
        size_t n_active;
        int64_t fault_clock_ms; /* the latest read's time, for listing; under lock */
        /* Where each family's first series is in the inventory: per logical
         * core; per held core (held_pos: position among the cores a listed
         * runtime holds, -1 for others); per listed runtime (rt_pos,
         * likewise); per device; per link. */
        size_t off_util, off_busy, off_phys, off_core_mem, off_cat, off_kind[METRIC_CORE_MEMORY_KINDS], off_flops;
        size_t off_rt_info, off_rt_status, off_rt_err, off_rt_lat, off_rt_dlat, off_rt_mem, off_rt_host, off_rt_vcpu;
        size_t off_up, off_dev_mem, off_dev_total, off_hbm, off_dma, off_power, off_ecc, off_tx, off_rx;
        int *held_pos; /* [logical core] */
        int *rt_pos;   /* [runtime] */
};

/* ---- model-options.c ---- */

struct model_options {
        const struct catalog_instance *instance;
        enum scenario scenario;
        unsigned lnc; /* 0: the chip's default */
        int node;     /* -1: the whole instance */
        uint64_t seed;
        double speed;
        bool categories;
        struct model_fault faults[FAULTS_MAX];
        size_t n_faults;
};

/* Parses args->options (model.h's spec options, after "model:"). Returns
 * 0, or -EINVAL with a reason in args->err. */
int model_options_parse(const struct collector_args *args, struct model_options *ret);

/* ---- model-topology.c ---- */

/* Sets which job each core runs and which devices work together. */
void model_assign_jobs(struct model *m);

/* ---- model-runtime.c ---- */

/* Places the scenario's runtimes on the cores jobs were assigned to; fills
 * m->runtimes and m->owner. */
int model_place_runtimes(struct model *m);

/* The incarnation of runtime r during simulated second s, or RUNTIME_DOWN. */
uint64_t model_runtime_life(const struct model *m, size_t r, int64_t s);

/* The pid and tag of runtime r's incarnation `life`. */
uint32_t model_runtime_pid(const struct model *m, size_t r, uint64_t life);
void model_runtime_tag(const struct model *m, size_t r, uint64_t life, char *out, size_t size);

/* Fills the per-runtime rates of m->st for second s from its cores'
 * (after their rates are computed). */
void model_runtimes_second(struct model *m, int64_t s);

/* A made-up but well-formed EC2 identity for the instance, node and seed. */
void model_identity(const struct model *m, struct instance_identity *ret);

/* The UltraServer identity of node= (the same serial on every node for a
 * seed); none for a whole instance. */
void model_ultraserver(const struct model *m, struct ultraserver_identity *ret);

/* Fills each reported device's peers and m->links from the instance's
 * topology. */
int model_build_topology(struct model *m);

/* ---- model-noise.c ---- */

/* splitmix64: a tiny, well-mixed hash so that every value is a pure function
 * of (seed, entity, simulated second): the same seed gives the same series. */
uint64_t model_mix(uint64_t x);

/* Uniform in [0, 1) for an entity and a simulated second. Entities: E_CORE,
 * E_DEV, E_GROUP and E_RUNTIME of a quantity q (the top bits). */
double model_noise(const struct model *m, uint64_t entity, int64_t second);
#define E_CORE(q, c) ((uint64_t) (q) << 40 | 1u << 28 | (c))
#define E_DEV(q, d) ((uint64_t) (q) << 40 | 2u << 28 | (d))
#define E_GROUP(q, g) ((uint64_t) (q) << 40 | 3u << 28 | (g))
#define E_RUNTIME(q, r) ((uint64_t) (q) << 40 | 4u << 28 | (r))

/* ---- model-physics.c ---- */

/* Sets each core's fixed random phase and MoE weight. */
void model_physics_init(struct model *m);

/* Computes every rate in force during simulated second s into m->st
 * (nothing when s is the second already computed). */
void model_state_compute(struct model *m, int64_t s);

/* Adds to the counters what happened during [from_ms, to_ms). */
void model_advance(struct model *m, int64_t from_ms, int64_t to_ms);

/* Starts the counters of each runtime that lives as a new process during
 * the second m->st was computed for (it counts from zero). */
void model_runtimes_restart(struct model *m);

/* Splits a core's memory in use into the driver's categories (out has
 * DRIVER_MEMORY_CATEGORIES entries), as its job would use it. */
void model_split_categories(const struct model *m, unsigned core, double total, double *out);

/* ---- model-fault.c ---- */

/* Moves queued faults into force at now_ms and drops the ones that ended. */
void model_faults_update(struct model *m, int64_t now_ms);
