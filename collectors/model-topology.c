#include "config.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "collectors/model-internal.h"

void model_assign_jobs(struct model *m) {
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
                /* One device: jobs per logical core. The first serves
                 * requests, the last holds a model it does not run; any
                 * between train or stay free. */
                for (unsigned c = 0; c < m->lcores; c++)
                        memset(&m->job[c * m->lnc],
                               c == 0               ? JOB_INFERENCE
                               : c == m->lcores - 1 ? JOB_ALLOCATED_IDLE
                               : c % 2              ? JOB_FREE
                                                    : JOB_TRAINING,
                               m->lnc);
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
int model_build_topology(struct model *m) {
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
