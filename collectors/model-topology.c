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

/* A reported device's peers in the inventory: indexes on their own host,
 * with that host's node when this daemon is one node of an UltraServer. */
static int list_peers(struct model *m, struct device_info *dev, const unsigned *peers, unsigned n) {
        unsigned per_node = m->n_dev / (m->instance->servers ? m->instance->servers : 1);
        dev->peers = calloc(n ? n : 1, sizeof(unsigned));
        if (!dev->peers)
                return -ENOMEM;
        if (m->node >= 0) {
                dev->peer_nodes = calloc(n ? n : 1, sizeof(unsigned));
                if (!dev->peer_nodes)
                        return -ENOMEM;
        }
        for (unsigned j = 0; j < n; j++) {
                dev->peers[j] = m->node >= 0 ? peers[j] % per_node : peers[j];
                if (m->node >= 0)
                        dev->peer_nodes[j] = peers[j] / per_node;
        }
        dev->n_peers = n;
        return 0;
}

/* Links from the topology, each with its one-way capacity. Every byte a link
 * moves also goes through HBM, so capacities are scaled down where NeuronLink
 * plus host DMA would exceed LINK_HBM_SHARE of the memory bandwidth. Through
 * a NeuronSwitch a whole instance has one link per device, its port; one node
 * of an UltraServer has one per pair of its device and another device, so
 * that each direction between two nodes has a counter on either side. */
int model_build_topology(struct model *m) {
        const struct catalog_instance *inst = m->instance;
        const struct catalog_chip *chip = inst->chip;
        struct inventory *inv = &m->base.inv;
        unsigned per = inst->torus_width * inst->torus_height;
        bool ports = inst->topology == TOPOLOGY_SWITCH && m->node < 0;
        unsigned *peers = NULL;
        int r = 0;

        double total = inst->link_bandwidth + inst->cross_link_bandwidth;
        double limit = LINK_HBM_SHARE * chip->memory_bandwidth - 2 * HOST_DMA_SHARE * chip->dma_bandwidth;
        m->link_budget = total > limit ? limit / total : 1;

        peers = calloc(m->n_dev, sizeof(unsigned));
        m->links = calloc(ports ? m->n_dev : (size_t) m->dev_count * m->n_dev, sizeof(*m->links));
        if (!peers || !m->links) {
                r = -ENOMEM;
                goto out;
        }
        for (unsigned i = 0; i < m->dev_count; i++) {
                unsigned d = m->dev_first + i;
                unsigned n = catalog_topology_peers(inst, d, peers);
                if ((r = list_peers(m, &inv->devices[i], peers, n)) < 0)
                        goto out;
                if (inst->topology == TOPOLOGY_SWITCH) {
                        /* One port per device: half the bandwidth each way. */
                        double cap = inst->link_bandwidth * m->link_budget / 2;
                        if (ports)
                                m->links[m->n_links++] =
                                        (struct model_link){ .from = d, .to = MODEL_PEER_SWITCH, .cap = cap };
                        for (unsigned j = 0; !ports && j < n; j++)
                                m->links[m->n_links++] = (struct model_link){ .from = d, .to = peers[j], .cap = cap };
                        continue;
                }
                unsigned in_server = 0, cross = 0;
                for (unsigned j = 0; j < n; j++) {
                        bool x = per && inst->servers > 1 && peers[j] / per != d / per;
                        cross += x;
                        in_server += !x;
                }
                for (unsigned j = 0; j < n; j++) {
                        bool x = per && inst->servers > 1 && peers[j] / per != d / per;
                        /* Both directions share the device's bandwidth; every
                         * device has as many peers of each kind, so a link's
                         * capacity is the same both ways. */
                        double cap = x ? inst->cross_link_bandwidth / (2.0 * cross)
                                       : inst->link_bandwidth / (2.0 * in_server);
                        m->links[m->n_links++] =
                                (struct model_link){ .from = d, .to = peers[j], .cap = cap * m->link_budget };
                }
        }
out:
        free(peers);
        return r;
}
