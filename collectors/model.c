#include "config.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "collectors/model.h"

#define DEFAULT_INSTANCE "trn1.32xlarge"

enum dma_direction { DMA_HOST_TO_DEVICE, DMA_DEVICE_TO_HOST, DMA_DEVICE_TO_DEVICE, DMA__COUNT };

static const char *const dma_direction_names[DMA__COUNT] = {
        [DMA_HOST_TO_DEVICE] = "host_to_device",
        [DMA_DEVICE_TO_HOST] = "device_to_host",
        [DMA_DEVICE_TO_DEVICE] = "device_to_device",
};

struct model_link {
        unsigned from, to;
        size_t reverse; /* index of the to->from link */
};

struct model {
        struct collector base;
        const struct model_instance *instance;
        uint64_t seed;
        unsigned n_cores;
        size_t n_links;
        struct model_link *links;
        /* Counters in bytes since the model started. */
        double *dma_bytes;  /* [device * DMA__COUNT + direction] */
        double *link_bytes; /* [link], bytes sent from links[i].from to links[i].to */
        int64_t last_ms;    /* simulated time already integrated; -1 before the first read */
        /* Offsets of each family's first series in the inventory. */
        size_t off_util, off_core_mem, off_dev_mem, off_dev_total, off_dma, off_tx, off_rx;
};

/* splitmix64: a tiny, well-mixed hash so that every value is a pure function
 * of (seed, entity, simulated second): the same seed gives the same series. */
static uint64_t mix(uint64_t x) {
        x += 0x9e3779b97f4a7c15ull;
        x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
        x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
        return x ^ (x >> 31);
}

static double noise(const struct model *m, uint64_t entity, int64_t second) {
        return (double) (mix(m->seed ^ mix(entity ^ mix((uint64_t) second))) >> 11) / 9007199254740992.0;
}

static double clamp01(double v) {
        return v < 0 ? 0 : v > 1 ? 1 : v;
}

/* The steady workload: every core busy around 55 % with a slow ten-minute
 * swing and per-second jitter. */
static double core_utilization(const struct model *m, unsigned core, int64_t second) {
        double phase = 2 * M_PI * noise(m, 1000000 + core, 0);
        double swing = 0.3 * sin(2 * M_PI * (double) second / 600.0 + phase);
        return clamp01(0.55 + swing + 0.1 * (noise(m, core, second) - 0.5));
}

static double device_utilization(const struct model *m, unsigned device, int64_t second) {
        unsigned cores = m->instance->chip->cores;
        double sum = 0;
        for (unsigned c = 0; c < cores; c++)
                sum += core_utilization(m, device * cores + c, second);
        return sum / cores;
}

/* Each core holds about 60 % of its share of HBM, drifting by +-5 % over an hour. */
static double core_memory(const struct model *m, unsigned core, int64_t second) {
        const struct model_chip *chip = m->instance->chip;
        double share = (double) chip->memory_bytes / chip->cores;
        double phase = 2 * M_PI * noise(m, 2000000 + core, 0);
        double bytes = share * (0.6 + 0.05 * sin(2 * M_PI * (double) second / 3600.0 + phase));
        /* Allocations come in 4 KiB pages. */
        return floor(bytes / 4096.0) * 4096.0;
}

/* Fractions of the chip's DMA bandwidth per direction at full utilization. */
static const double dma_share[DMA__COUNT] = { 0.05, 0.03, 0.20 };
/* Fraction of a device's NeuronLink bandwidth in use at full utilization. */
#define LINK_SHARE 0.4

/* Adds the bytes moved during [from_ms, to_ms), one simulated second at a
 * time so that rates stay piecewise constant and within the chip's limits. */
static void model_advance(struct model *m, int64_t from_ms, int64_t to_ms) {
        const struct model_chip *chip = m->instance->chip;
        unsigned n_dev = m->instance->devices;
        for (int64_t cur = from_ms; cur < to_ms;) {
                int64_t second = cur / 1000;
                int64_t end = (second + 1) * 1000 < to_ms ? (second + 1) * 1000 : to_ms;
                double dt = (double) (end - cur) / 1000.0;
                for (unsigned d = 0; d < n_dev; d++) {
                        double u = device_utilization(m, d, second);
                        for (int dir = 0; dir < DMA__COUNT; dir++)
                                m->dma_bytes[d * DMA__COUNT + dir] += chip->dma_bandwidth * dma_share[dir] * u * dt;
                }
                for (size_t l = 0; l < m->n_links; l++) {
                        unsigned d = m->links[l].from;
                        double u = device_utilization(m, d, second);
                        unsigned peers = m->base.inv.devices[d].n_peers;
                        m->link_bytes[l] += chip->link_bandwidth * LINK_SHARE / peers * u * dt;
                }
                cur = end;
        }
}

static int model_read(struct collector *c, int64_t now_ms, struct sample_batch *out) {
        struct model *m = (struct model *) c;
        const struct model_instance *inst = m->instance;
        unsigned cores = inst->chip->cores;

        if (m->last_ms < 0)
                m->last_ms = now_ms;
        /* Time that goes backwards adds nothing: counters never decrease. */
        if (now_ms > m->last_ms) {
                model_advance(m, m->last_ms, now_ms);
                m->last_ms = now_ms;
        }
        int64_t second = m->last_ms / 1000;

        for (unsigned d = 0; d < inst->devices; d++) {
                double used = 0;
                for (unsigned k = 0; k < cores; k++) {
                        unsigned core = d * cores + k;
                        double mem = core_memory(m, core, second);
                        out->values[m->off_util + core] = core_utilization(m, core, second);
                        out->values[m->off_core_mem + core] = mem;
                        used += mem;
                }
                out->values[m->off_dev_mem + d] = used;
                out->values[m->off_dev_total + d] = (double) inst->chip->memory_bytes;
                for (int dir = 0; dir < DMA__COUNT; dir++)
                        out->values[m->off_dma + d * DMA__COUNT + dir] = floor(m->dma_bytes[d * DMA__COUNT + dir]);
        }
        for (size_t l = 0; l < m->n_links; l++) {
                out->values[m->off_tx + l] = floor(m->link_bytes[l]);
                out->values[m->off_rx + l] = floor(m->link_bytes[m->links[l].reverse]);
        }
        memset(out->valid, 1, out->n);
        return 0;
}

static void model_close(struct collector *c) {
        struct model *m = (struct model *) c;
        if (!m)
                return;
        inventory_free(&m->base.inv);
        free(m->links);
        free(m->dma_bytes);
        free(m->link_bytes);
        free(m);
}

static int parse_options(const struct collector_args *args, const struct model_instance **ret_instance,
                         uint64_t *ret_seed, double *ret_speed) {
        const struct model_instance *instance = model_catalog_find(DEFAULT_INSTANCE);
        uint64_t seed = 1;
        double speed = 1;
        char buf[256];

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
                        instance = model_catalog_find(tok);
                        if (!instance) {
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
                                snprintf(args->err, args->errlen, "model: seed '%s' is not a non-negative integer", val);
                                return -EINVAL;
                        }
                        seed = v;
                } else if (strcmp(tok, "speed") == 0) {
                        double v = strtod(val, &end);
                        if (errno || end == val || *end || !(v >= 0.001 && v <= 1e6)) {
                                snprintf(args->err, args->errlen, "model: speed '%s' is not a number in [0.001, 1000000]", val);
                                return -EINVAL;
                        }
                        speed = v;
                } else if (strcmp(tok, "scenario") == 0) {
                        if (strcmp(val, "steady") != 0) {
                                snprintf(args->err, args->errlen, "model: unknown scenario '%s' (expected steady)", val);
                                return -EINVAL;
                        }
                } else {
                        snprintf(args->err, args->errlen, "model: unknown option '%s'", tok);
                        return -EINVAL;
                }
        }
done:
        *ret_instance = instance;
        *ret_seed = seed;
        *ret_speed = speed;
        return 0;
}

/* Fills each device's peer list from the instance's topology. */
static int build_topology(struct model *m) {
        const struct model_instance *inst = m->instance;
        struct inventory *inv = &m->base.inv;

        for (unsigned d = 0; d < inst->devices; d++) {
                struct device_info *dev = &inv->devices[d];
                if (inst->topology != TOPOLOGY_TORUS_2D)
                        continue;
                unsigned w = inst->torus_width, h = inst->torus_height;
                unsigned x = d % w, y = d / w;
                unsigned cand[4] = {
                        y * w + (x + 1) % w, y * w + (x + w - 1) % w,
                        ((y + 1) % h) * w + x, ((y + h - 1) % h) * w + x,
                };
                dev->peers = calloc(4, sizeof(unsigned));
                if (!dev->peers)
                        return -ENOMEM;
                for (int i = 0; i < 4; i++) {
                        bool seen = cand[i] == d;
                        for (unsigned j = 0; j < dev->n_peers; j++)
                                seen = seen || dev->peers[j] == cand[i];
                        if (!seen)
                                dev->peers[dev->n_peers++] = cand[i];
                }
                m->n_links += dev->n_peers;
        }
        m->links = calloc(m->n_links ? m->n_links : 1, sizeof(*m->links));
        if (!m->links)
                return -ENOMEM;
        size_t l = 0;
        for (unsigned d = 0; d < inst->devices; d++)
                for (unsigned j = 0; j < inv->devices[d].n_peers; j++)
                        m->links[l++] = (struct model_link){ .from = d, .to = inv->devices[d].peers[j] };
        for (size_t a = 0; a < m->n_links; a++)
                for (size_t b = 0; b < m->n_links; b++)
                        if (m->links[b].from == m->links[a].to && m->links[b].to == m->links[a].from)
                                m->links[a].reverse = b;
        return 0;
}

static int build_series(struct model *m) {
        struct inventory *inv = &m->base.inv;
        const struct model_instance *inst = m->instance;
        unsigned cores = inst->chip->cores;
        char dev[16], core[16], peer[16];
        int r = 0;

        m->off_util = inv->n_series;
        for (unsigned c = 0; c < m->n_cores && r == 0; c++) {
                snprintf(dev, sizeof(dev), "%u", c / cores);
                snprintf(core, sizeof(core), "%u", c);
                r = inventory_add_series(inv, METRIC_CORE_UTILIZATION, (const char *[]){ dev, core });
        }
        m->off_core_mem = inv->n_series;
        for (unsigned c = 0; c < m->n_cores && r == 0; c++) {
                snprintf(dev, sizeof(dev), "%u", c / cores);
                snprintf(core, sizeof(core), "%u", c);
                r = inventory_add_series(inv, METRIC_CORE_MEMORY_USED, (const char *[]){ dev, core });
        }
        m->off_dev_mem = inv->n_series;
        for (unsigned d = 0; d < inst->devices && r == 0; d++) {
                snprintf(dev, sizeof(dev), "%u", d);
                r = inventory_add_series(inv, METRIC_DEVICE_MEMORY_USED, (const char *[]){ dev });
        }
        m->off_dev_total = inv->n_series;
        for (unsigned d = 0; d < inst->devices && r == 0; d++) {
                snprintf(dev, sizeof(dev), "%u", d);
                r = inventory_add_series(inv, METRIC_DEVICE_MEMORY_TOTAL, (const char *[]){ dev });
        }
        m->off_dma = inv->n_series;
        for (unsigned d = 0; d < inst->devices && r == 0; d++)
                for (int dir = 0; dir < DMA__COUNT && r == 0; dir++) {
                        snprintf(dev, sizeof(dev), "%u", d);
                        r = inventory_add_series(inv, METRIC_DEVICE_DMA_BYTES,
                                                 (const char *[]){ dev, dma_direction_names[dir] });
                }
        m->off_tx = inv->n_series;
        for (size_t l = 0; l < m->n_links && r == 0; l++) {
                snprintf(dev, sizeof(dev), "%u", m->links[l].from);
                snprintf(peer, sizeof(peer), "%u", m->links[l].to);
                r = inventory_add_series(inv, METRIC_LINK_TX_BYTES, (const char *[]){ dev, peer });
        }
        m->off_rx = inv->n_series;
        for (size_t l = 0; l < m->n_links && r == 0; l++) {
                snprintf(dev, sizeof(dev), "%u", m->links[l].from);
                snprintf(peer, sizeof(peer), "%u", m->links[l].to);
                r = inventory_add_series(inv, METRIC_LINK_RX_BYTES, (const char *[]){ dev, peer });
        }
        return r;
}

static int model_open(const struct collector_args *args, struct collector **ret) {
        const struct model_instance *instance;
        uint64_t seed;
        double speed;
        int r = parse_options(args, &instance, &seed, &speed);
        if (r < 0)
                return r;

        struct model *m = calloc(1, sizeof(*m));
        if (!m)
                return -ENOMEM;
        m->base.ops = &model_collector_ops;
        m->base.time_scale = speed;
        m->instance = instance;
        m->seed = seed;
        m->last_ms = -1;
        m->n_cores = instance->devices * instance->chip->cores;

        struct inventory *inv = &m->base.inv;
        snprintf(inv->instance_type, sizeof(inv->instance_type), "%s", instance->name);
        snprintf(inv->backend, sizeof(inv->backend), "model:%s", instance->name);
        inv->n_devices = instance->devices;
        inv->devices = calloc(instance->devices, sizeof(*inv->devices));
        if (!inv->devices) {
                r = -ENOMEM;
                goto fail;
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
        r = build_topology(m);
        if (r < 0)
                goto fail;
        r = build_series(m);
        if (r < 0)
                goto fail;
        m->dma_bytes = calloc((size_t) instance->devices * DMA__COUNT, sizeof(double));
        m->link_bytes = calloc(m->n_links ? m->n_links : 1, sizeof(double));
        if (!m->dma_bytes || !m->link_bytes) {
                r = -ENOMEM;
                goto fail;
        }
        *ret = &m->base;
        return 0;
fail:
        model_close(&m->base);
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
