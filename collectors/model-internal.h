/* What the device model's files share; not part of its interface.
 *
 *   model.c           the collector: open, read, close, the series it reports
 *   model-options.c   the backend spec's options
 *   model-topology.c  jobs per core, NeuronLink links and their capacities
 *   model-physics.c   the simulation: rates per simulated second, counters
 *   model-fault.c     faults: their text form, the queue other threads fill
 *
 * Everything here runs on the tick loop's thread, except what model.h
 * says may be called from others (those take the model's lock). */
#pragma once

#include <pthread.h>

#include "collectors/model.h"

#define FAULTS_MAX 64

enum dma_direction { DMA_HOST_TO_DEVICE, DMA_DEVICE_TO_HOST, DMA_DEVICE_TO_DEVICE, DMA__COUNT };

enum scenario { SCENARIO_IDLE, SCENARIO_STEADY, SCENARIO_TRAINING, SCENARIO_INFERENCE, SCENARIO_MOE, SCENARIO_MIXED };

/* What a NeuronCore runs. A scenario is an assignment of jobs to cores. */
enum job { JOB_FREE, JOB_ALLOCATED_IDLE, JOB_STEADY, JOB_TRAINING, JOB_INFERENCE, JOB_MOE, JOB__COUNT };

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

/* ---- model-options.c ---- */

struct model_options {
        const struct catalog_instance *instance;
        enum scenario scenario;
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

/* Fills each device's peers and m->links from the instance's topology. */
int model_build_topology(struct model *m);

/* ---- model-physics.c ---- */

/* Sets each core's fixed random phase and MoE weight. */
void model_physics_init(struct model *m);

/* Computes every rate in force during simulated second s into m->st
 * (nothing when s is the second already computed). */
void model_state_compute(struct model *m, int64_t s);

/* Adds to the counters what happened during [from_ms, to_ms). */
void model_advance(struct model *m, int64_t from_ms, int64_t to_ms);

/* Splits a core's memory in use into the driver's categories (out has
 * DRIVER_MEMORY_CATEGORIES entries), as its job would use it. */
void model_split_categories(const struct model *m, unsigned core, double total, double *out);

/* ---- model-fault.c ---- */

/* Moves queued faults into force at now_ms and drops the ones that ended. */
void model_faults_update(struct model *m, int64_t now_ms);
