#include "config.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "collectors/model-internal.h"

/* A restarting runtime lives 50 minutes of every hour; the cores it holds
 * are free for the other 10, and it comes back as a new process. */
#define LIFE_PERIOD_S 3600
#define LIFE_DOWN_S 600

#define MiB 1048576.0
#define GiB 1073741824.0

/* Uniform in [0, 1) for quantity q of runtime r in second s. */
static double noise(const struct model *m, size_t r, int64_t s, unsigned q) {
        return model_noise(m, E_RUNTIME(q, r), s);
}

static const char *const job_names[JOB__COUNT] = {
        [JOB_ALLOCATED_IDLE] = "idle", [JOB_STEADY] = "steady", [JOB_TRAINING] = "training",
        [JOB_INFERENCE] = "inference", [JOB_MOE] = "moe",
};

/* Cores with the same job and key belong to one runtime: one process
 * trains (or runs the MoE model, or the steady job) on every core that
 * does, inference runs one process per tensor-parallel pair of devices (per
 * core on a single device), and a process holds each idle device. */
static unsigned runtime_key(const struct model *m, unsigned lc, enum job job) {
        unsigned d = lc / m->lcores;
        switch (job) {
        case JOB_TRAINING:
        case JOB_MOE:
        case JOB_STEADY:
                /* A process runs on one host: on one node of an UltraServer,
                 * a job's cores are one process per node. */
                return m->node >= 0 ? d / m->dev_count : 0;
        case JOB_INFERENCE:
                return m->n_dev > 1 ? m->group[d] : lc;
        default:
                return d;
        }
}

int model_place_runtimes(struct model *m) {
        unsigned per_job[JOB__COUNT] = { 0 };
        size_t last_inference = SIZE_MAX;

        m->runtimes = calloc(m->n_lcores ? m->n_lcores : 1, sizeof(*m->runtimes));
        if (!m->runtimes)
                return -ENOMEM;
        for (unsigned lc = 0; lc < m->n_lcores; lc++) {
                enum job job = (enum job) m->job[lc * m->lnc];
                struct model_runtime *cur = m->n_runtimes ? &m->runtimes[m->n_runtimes - 1] : NULL;
                m->owner[lc] = -1;
                if (job == JOB_FREE)
                        continue;
                /* A runtime holds a run of neighbouring cores. */
                bool extends = cur && cur->job == job && cur->first_core + cur->n_cores == lc &&
                               runtime_key(m, cur->first_core, job) == runtime_key(m, lc, job);
                if (!extends) {
                        cur = &m->runtimes[m->n_runtimes++];
                        *cur = (struct model_runtime){ .job = job, .first_core = lc };
                        /* Named runtimes set NEURON_PROCESS_TAG; idle ones are known by pid. */
                        if (job != JOB_ALLOCATED_IDLE)
                                snprintf(cur->name, sizeof(cur->name), "%s-%u", job_names[job], per_job[job]++);
                        if (job == JOB_INFERENCE)
                                last_inference = m->n_runtimes - 1;
                }
                cur->n_cores++;
                m->owner[lc] = (int) (m->n_runtimes - 1);
        }
        /* The last inference server is redeployed every hour: it exits, its
         * series go, and a new process (a new pid, its tag) takes its cores. */
        if (last_inference != SIZE_MAX) {
                struct model_runtime *r = &m->runtimes[last_inference];
                r->restarts = true;
                r->name[0] = '\0';
                r->phase = (unsigned) (model_mix(m->seed ^ 0x4c494645) % LIFE_PERIOD_S);
        }
        return 0;
}

uint64_t model_runtime_life(const struct model *m, size_t r, int64_t s) {
        const struct model_runtime *rt = &m->runtimes[r];
        if (!rt->restarts)
                return 0;
        int64_t t = s + rt->phase;
        int64_t life = t >= 0 ? t / LIFE_PERIOD_S : -((-t + LIFE_PERIOD_S - 1) / LIFE_PERIOD_S);
        return t - life * LIFE_PERIOD_S < LIFE_PERIOD_S - LIFE_DOWN_S ? (uint64_t) life : RUNTIME_DOWN;
}

/* Distinct for the runtimes alive at one time: only a restarting runtime
 * has lives other than 0, and n_runtimes * (life % 16) moves it past every
 * other runtime's number. */
uint32_t model_runtime_pid(const struct model *m, size_t r, uint64_t life) {
        uint64_t k = model_mix(m->seed) % 1000 + r + m->n_runtimes * (life % 16);
        return (uint32_t) (1000 + 97 * k);
}

void model_runtime_tag(const struct model *m, size_t r, uint64_t life, char *out, size_t size) {
        if (m->runtimes[r].name[0])
                snprintf(out, size, "%s", m->runtimes[r].name);
        else
                snprintf(out, size, "%u", model_runtime_pid(m, r, life));
}

/* Latency of one execution: the device time and the spread of a job's
 * executions. Inference requests take 15 ms of a core and wait longer the
 * busier it is; a training step computes for 70 % of its period; MoE
 * layers take 4 s, half of it on the experts. */
static void job_latency(const struct model *m, size_t r, int64_t s, double u, double ok_per_core, double *ret_total,
                        double *ret_device, double *ret_sigma) {
        const struct model_runtime *rt = &m->runtimes[r];
        double jitter = 0.95 + 0.1 * noise(m, r, s, 1);
        double device = 0, total = 0, sigma = 0.1;
        switch (rt->job) {
        case JOB_STEADY:
                device = u > 0 && ok_per_core > 0 ? u / ok_per_core : 0.05;
                total = device * (1 + u);
                sigma = 0.15;
                break;
        case JOB_TRAINING:
                device = ok_per_core > 0 ? 0.7 / ok_per_core : 0;
                total = ok_per_core > 0 ? 1 / ok_per_core : 0;
                sigma = 0.02;
                break;
        case JOB_INFERENCE:
                device = 0.015;
                total = 0.015 / (1 - (u < 0.9 ? u : 0.9)) + 0.002;
                sigma = 0.25;
                break;
        case JOB_MOE:
                device = 2;
                total = 4;
                break;
        default:
                break;
        }
        *ret_total = total * jitter;
        *ret_device = device * jitter;
        *ret_sigma = sigma;
}

void model_runtimes_second(struct model *m, int64_t s) {
        struct model_state *st = &m->st;
        /* One node of an UltraServer has its share of the host vCPUs. */
        double vcpus = m->instance->host_vcpus ? m->instance->host_vcpus : 1;
        if (m->node >= 0)
                vcpus /= m->instance->servers;

        for (size_t r = 0; r < m->n_runtimes; r++) {
                const struct model_runtime *rt = &m->runtimes[r];
                double *status = &st->rt_status[r * EXEC_STATUS__COUNT];
                double *errors = &st->rt_errors[r * EXEC_ERROR__COUNT];
                double *host = &st->rt_host_mem[r * HOST_MEM__COUNT];
                memset(status, 0, EXEC_STATUS__COUNT * sizeof(double));
                memset(errors, 0, EXEC_ERROR__COUNT * sizeof(double));
                memset(host, 0, HOST_MEM__COUNT * sizeof(double));
                st->rt_latency[r * 2] = st->rt_latency[r * 2 + 1] = 0;
                st->rt_vcpu[r * 2] = st->rt_vcpu[r * 2 + 1] = 0;
                if (st->rt_life[r] == RUNTIME_DOWN)
                        continue;
                unsigned phys = rt->n_cores * m->lnc, first = rt->first_core * m->lnc;
                double ok = 0, fail = 0, drop = 0, u = 0;
                for (unsigned k = 0; k < phys; k++) {
                        ok += st->ok_rate[first + k];
                        fail += st->fail_rate[first + k];
                        drop += st->drop_rate[first + k];
                        u += st->util[first + k];
                }
                u /= phys;
                /* A failed execution completes with an error of the generic
                 * kind; a refused request fails to queue. */
                status[EXEC_COMPLETED] = ok;
                status[EXEC_COMPLETED_WITH_ERR] = fail;
                status[EXEC_FAILED_TO_QUEUE] = drop;
                errors[EXEC_ERROR_GENERIC] = fail;
                /* Latency exists only for executions that happened. */
                if (ok > 0)
                        job_latency(m, r, s, u, ok / phys, &st->rt_latency[r * 2], &st->rt_latency[r * 2 + 1],
                                    &st->rt_sigma[r]);

                /* Host side: each request costs 2 ms of a vCPU (a fifth of
                 * it in the kernel); a training core keeps a data loader
                 * busy; an idle process barely runs. */
                double busy_vcpus = 0.01 + ok * 0.002;
                if (rt->job == JOB_TRAINING || rt->job == JOB_MOE)
                        busy_vcpus += phys * (0.2 + 0.6 * u);
                else if (rt->job == JOB_STEADY)
                        busy_vcpus += phys * 0.2 * u;
                busy_vcpus *= 0.9 + 0.2 * noise(m, r, s, 2);
                double user = 0.8 * busy_vcpus / vcpus, system = 0.2 * busy_vcpus / vcpus;
                st->rt_vcpu[r * 2] = user < 1 ? user : 1;
                st->rt_vcpu[r * 2 + 1] = system < 1 - st->rt_vcpu[r * 2] ? system : 1 - st->rt_vcpu[r * 2];

                /* Host memory: the process and its framework, weights staged
                 * for loading, DMA buffers per core, tensors in flight. */
                host[HOST_MEM_APPLICATION] = 1.5 * GiB + 256 * MiB * rt->n_cores + floor(64 * noise(m, r, s, 3)) * MiB;
                host[HOST_MEM_CONSTANTS] = rt->job == JOB_INFERENCE                        ? 512 * MiB
                                           : rt->job == JOB_TRAINING || rt->job == JOB_MOE ? 128 * MiB * rt->n_cores
                                                                                           : 0;
                host[HOST_MEM_DMA_BUFFERS] = 16 * MiB * rt->n_cores;
                host[HOST_MEM_TENSORS] = rt->job == JOB_INFERENCE  ? 4 * MiB * ceil(ok * st->rt_latency[r * 2])
                                         : rt->job == JOB_TRAINING ? 64 * MiB * rt->n_cores * (u > 0.5)
                                                                   : 0;
        }
}

void model_identity(const struct model *m, struct instance_identity *ret) {
        /* Regions with Trainium and Inferentia, and one of their zones. */
        static const struct {
                const char *region, *zone, *zone_id;
        } places[] = {
                { "us-east-1", "us-east-1d", "use1-az6" },
                { "us-east-2", "us-east-2c", "use2-az3" },
                { "us-west-2", "us-west-2d", "usw2-az4" },
        };
        uint64_t h = model_mix(m->seed ^ 0x4944);
        for (const char *p = m->instance->name; *p; p++)
                h = model_mix(h ^ (unsigned char) *p);
        /* Each node of an UltraServer is an instance of its own. */
        if (m->node >= 0)
                h = model_mix(h ^ (uint64_t) m->node << 32);
        size_t place = h % (sizeof(places) / sizeof(places[0]));
        struct instance_identity id = { 0 };
        /* Ids are 17 hex digits, as EC2 writes them (a 0 and 64 bits here). */
        snprintf(id.instance_id, sizeof(id.instance_id), "i-%017llx", (unsigned long long) h);
        snprintf(id.instance_type, sizeof(id.instance_type), "%s", m->instance->name);
        if (m->node >= 0)
                snprintf(id.instance_name, sizeof(id.instance_name), "neurond-model-%s-node%d", m->instance->name,
                         m->node);
        else
                snprintf(id.instance_name, sizeof(id.instance_name), "neurond-model-%s", m->instance->name);
        snprintf(id.availability_zone, sizeof(id.availability_zone), "%s", places[place].zone);
        snprintf(id.availability_zone_id, sizeof(id.availability_zone_id), "%s", places[place].zone_id);
        snprintf(id.region, sizeof(id.region), "%s", places[place].region);
        snprintf(id.subnet_id, sizeof(id.subnet_id), "subnet-%017llx", (unsigned long long) model_mix(h));
        snprintf(id.ami_id, sizeof(id.ami_id), "ami-%017llx", (unsigned long long) model_mix(h ^ 1));
        *ret = id;
}

void model_ultraserver(const struct model *m, struct ultraserver_identity *ret) {
        struct ultraserver_identity us = { 0 };
        if (m->node >= 0) {
                /* The serial every node of one UltraServer shares: 16 hex
                 * digits, as the driver's server_id_N gives it. */
                uint64_t h = model_mix(m->seed ^ 0x5553);
                for (const char *p = m->instance->name; *p; p++)
                        h = model_mix(h ^ (unsigned char) *p);
                snprintf(us.id, sizeof(us.id), "%016llx", (unsigned long long) h);
                us.node = (unsigned) m->node;
                us.nodes = m->instance->servers;
        }
        *ret = us;
}
