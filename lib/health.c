#include "config.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/health.h"
#include "lib/inventory.h"
#include "lib/parse.h"
#include "lib/snapshot.h"

const char *const health_state_names[HEALTH__COUNT] = { "healthy", "unknown", "degraded", "unhealthy" };
const char *const health_severity_names[HEALTH_SEVERITY__COUNT] = { "info", "warning", "critical" };
const char *const health_phase_names[3] = { "begin", "end", "change" };

#define HOUR_MS (3600LL * 1000)

/* The rules. Thresholds sit far from what a working device shows (the
 * model's scenarios run hours without tripping one, tests/integration/
 * health.sh) and close to what a fault shows. The actions are those of
 * aws-neuron-sdk neuron-runtime/nrt-troubleshoot.rst ("Hardware Errors",
 * "out of memory") and tools/neuron-sys-tools/neuron-sysfs-user-guide.rst;
 * docs/health.md cites each. */
/* clang-format off */
const struct health_rule health_rules[HEALTH_RULE__COUNT] = {
        [HEALTH_RULE_DEVICE_DOWN] = {
                .kind = "device_down", .metric = METRIC_DEVICE_UP, .condition = HEALTH_IS_ZERO,
                .state = HEALTH_UNHEALTHY,
                .reason = "device unreadable or gone",
                .action = "reset: reload the Neuron driver (rmmod neuron; modprobe neuron) or reboot; replace the instance if the device stays missing",
        },
        [HEALTH_RULE_ECC_UNCORRECTED] = {
                .kind = "ecc_uncorrected", .metric = METRIC_DEVICE_ECC_EVENTS,
                .filter_label = "event_type", .filter = { "mem_ecc_uncorrected", "sram_ecc_uncorrected" },
                .condition = HEALTH_INCREASE, .threshold = 0, .hold_ms = HOUR_MS, .state = HEALTH_UNHEALTHY,
                .reason = "uncorrected ECC errors",
                .action = "replace: drain the instance, then terminate it or stop and start it (AWS sends a retirement notice)",
        },
        [HEALTH_RULE_ECC_REPAIRABLE] = {
                .kind = "ecc_repairable", .metric = METRIC_DEVICE_ECC_EVENTS,
                .filter_label = "event_type", .filter = { "mem_ecc_repairable_uncorrected" },
                .condition = HEALTH_INCREASE, .threshold = 0, .hold_ms = HOUR_MS, .state = HEALTH_UNHEALTHY,
                .reason = "repairable uncorrected HBM ECC errors",
                .action = "reset: drain the device, then reload the Neuron driver or reboot the instance",
        },
        [HEALTH_RULE_ECC_CORRECTED] = {
                .kind = "ecc_corrected", .metric = METRIC_DEVICE_ECC_EVENTS,
                .filter_label = "event_type", .filter = { "mem_ecc_corrected", "sram_ecc_corrected" },
                .condition = HEALTH_RATE, .threshold = 1, .state = HEALTH_DEGRADED,
                .reason = "corrected ECC errors at a high rate",
                .action = "drain: move work off the device and watch for uncorrected errors; replace the instance if they come",
        },
        [HEALTH_RULE_LINK_DOWN] = {
                .kind = "link_down", .metric = METRIC_LINK_TX_BYTES, .condition = HEALTH_LINK_SILENT,
                .state = HEALTH_DEGRADED,
                .reason = "NeuronLink carries no traffic while the device's other links do",
                .action = "check the runtime: collectives hang on a dead link; restart the job, reset the devices (reload the driver), replace the instance if the link stays down",
        },
        [HEALTH_RULE_EXEC_ERRORS] = {
                .kind = "exec_errors", .metric = METRIC_CORE_EXECUTION_ERRORS,
                .filter_label = "error_type", .filter = { "generic", "numerical", "transient", "model", "runtime" },
                .condition = HEALTH_RATE, .threshold = 1, .state = HEALTH_DEGRADED, .per_core = true,
                .reason = "execution errors at a high rate",
                .action = "check the runtime: its log (NRT errors), the model and its inputs",
        },
        [HEALTH_RULE_HARDWARE_ERRORS] = {
                .kind = "hardware_errors", .metric = METRIC_CORE_EXECUTION_ERRORS,
                .filter_label = "error_type", .filter = { "hardware" },
                .condition = HEALTH_RATE, .threshold = 0.1, .state = HEALTH_DEGRADED, .per_core = true,
                .reason = "hardware errors in executions",
                .action = "drain: move work off the device; replace the instance if they go on (DMA aborts, NRT_EXEC_HW_ERR_*)",
        },
        [HEALTH_RULE_CORE_STUCK] = {
                .kind = "core_stuck", .metric = METRIC_CORE_UTILIZATION, .condition = HEALTH_CORE_IDLE,
                .threshold = 0.01, .state = HEALTH_DEGRADED, .per_core = true,
                .reason = "NeuronCore idle with its memory held while its runtime's other cores work",
                .action = "check the runtime: look for execution timeouts in its log and restart it; replace the instance if the core hangs again",
        },
        [HEALTH_RULE_HBM_FULL] = {
                .kind = "hbm_full", .metric = METRIC_DEVICE_MEMORY_USED, .condition = HEALTH_SHARE,
                .total = METRIC_DEVICE_MEMORY_TOTAL, .threshold = 0.95, .state = HEALTH_DEGRADED,
                .reason = "device memory (HBM) nearly full",
                .action = "check the runtime: unload models that are not used, stop idle processes, or lower batch size",
        },
};
/* clang-format on */

const char *health_kind_name(unsigned kind) {
        return kind < HEALTH_RULE__COUNT ? health_rules[kind].kind : HEALTH_KIND_STATE;
}

int health_kind_lookup(const char *name) {
        for (unsigned k = 0; k < HEALTH_KINDS; k++)
                if (strcmp(name, health_kind_name(k)) == 0)
                        return (int) k;
        return -ENOENT;
}

int health_severity_lookup(const char *name) {
        for (int s = 0; s < HEALTH_SEVERITY__COUNT; s++)
                if (strcmp(name, health_severity_names[s]) == 0)
                        return s;
        return -ENOENT;
}

static enum health_severity severity_of(enum health_state s) {
        return s == HEALTH_UNHEALTHY ? HEALTH_CRITICAL : s == HEALTH_HEALTHY ? HEALTH_INFO : HEALTH_WARNING;
}

/* ---- reading the snapshots ----------------------------------------------- */

struct eval {
        const struct device_info *devices;
        size_t n_devices;
        const struct snapshot *snap, *prev;
        size_t n;        /* series of snap with values */
        size_t *prev_of; /* [n] the series' index in prev, SIZE_MAX when prev's list lacks it; NULL: same list */
        double dt;       /* seconds since prev */
        long *pos_of;    /* [max index + 1] a device index's position in devices, or -1 */
        size_t n_pos;
        bool *down;     /* [n_devices] */
        long *dev_of;   /* [n] each series' device position, or -1: its labels parsed once */
        long *core_of;  /* [n] each series' neuroncore label, or -1 */
        size_t n_cores; /* host-wide logical cores of the devices */
        long *core_dev; /* [n_cores] each core's device position, or -1 */
        bool *held;     /* [n_devices] a runtime holds one of its cores */
        struct health_finding *found;
        size_t n_found, cap_found;
        bool failed;
};

static const char *label(const struct series_desc *d, const char *name) {
        int i = metric_label_index(&metric_table[d->metric], name);
        return i < 0 ? "" : d->label_values[i];
}

static long label_number(const struct series_desc *d, const char *name) {
        uint64_t v;
        const char *text = label(d, name);
        return text[0] && parse_uint_range(text, 0, 999999999, &v) == 0 ? (long) v : -1;
}

/* The position in devices of the device the series belongs to, or -1. */
static long parse_device(const struct eval *e, const struct series_desc *d) {
        long index = label_number(d, "neuron_device");
        if (index < 0)
                index = label_number(d, "neuron_device_index");
        return index >= 0 && (size_t) index < e->n_pos ? e->pos_of[index] : -1;
}

static long device_of(const struct eval *e, const struct series_desc *d) {
        return e->dev_of[d - e->snap->set->series];
}

static bool now_value(const struct eval *e, size_t i, double *v) {
        if (!e->snap->valid[i])
                return false;
        *v = e->snap->values[i];
        return true;
}

/* A counter's value at the previous tick. A runtime's series that the
 * previous list lacks is a runtime that started since: it counts from 0. */
static bool prev_value(const struct eval *e, size_t i, double *v) {
        if (!e->prev)
                return false;
        size_t j = e->prev_of ? e->prev_of[i] : i;
        if (j == SIZE_MAX) {
                *v = 0;
                return label(&e->snap->set->series[i], "runtime_tag")[0] != '\0';
        }
        if (j >= e->prev->n || !e->prev->valid[j])
                return false;
        *v = e->prev->values[j];
        return true;
}

/* How much a counter rose since the previous tick; false when unknown. A
 * counter that went down was reset: it rose by its value. */
static bool increase(const struct eval *e, size_t i, double *ret) {
        double now, before;
        if (!now_value(e, i, &now) || !prev_value(e, i, &before))
                return false;
        *ret = now >= before ? now - before : now;
        return true;
}

static int by_desc(const void *a, const void *b, void *series) {
        const struct series_desc *s = series;
        return series_desc_cmp(&s[*(const size_t *) a], &s[*(const size_t *) b]);
}

/* Where each series of snap is in prev, when their lists differ. */
static int map_prev(struct eval *e) {
        const struct series_set *a = e->snap->set, *b = e->prev ? e->prev->set : NULL;
        if (!b || a == b)
                return 0;
        size_t nb = b->n < e->prev->n ? b->n : e->prev->n;
        size_t *order = malloc((nb ? nb : 1) * sizeof(*order));
        e->prev_of = malloc((e->n ? e->n : 1) * sizeof(*e->prev_of));
        if (!order || !e->prev_of) {
                free(order);
                return -ENOMEM;
        }
        for (size_t j = 0; j < nb; j++)
                order[j] = j;
        qsort_r(order, nb, sizeof(*order), by_desc, b->series);
        for (size_t i = 0; i < e->n; i++) {
                size_t lo = 0, hi = nb;
                e->prev_of[i] = SIZE_MAX;
                while (lo < hi) {
                        size_t mid = (lo + hi) / 2;
                        int c = series_desc_cmp(&b->series[order[mid]], &a->series[i]);
                        if (c == 0) {
                                e->prev_of[i] = order[mid];
                                break;
                        }
                        if (c < 0)
                                lo = mid + 1;
                        else
                                hi = mid;
                }
        }
        free(order);
        return 0;
}

static bool passes_filter(const struct health_rule *r, const struct series_desc *d) {
        if (d->metric != r->metric)
                return false;
        if (!r->filter_label)
                return true;
        const char *v = label(d, r->filter_label);
        for (size_t k = 0; k < HEALTH_FILTER_MAX && r->filter[k]; k++)
                if (strcmp(v, r->filter[k]) == 0)
                        return true;
        return false;
}

static void add_finding(struct eval *e, enum health_rule_id rule, enum health_state state, size_t dev, int core,
                        const char *detail, double value) {
        if (e->n_found == e->cap_found) {
                size_t cap = e->cap_found ? e->cap_found * 2 : 64;
                struct health_finding *grown = realloc(e->found, cap * sizeof(*grown));
                if (!grown) {
                        e->failed = true;
                        return;
                }
                e->found = grown;
                e->cap_found = cap;
        }
        struct health_finding *f = &e->found[e->n_found++];
        *f = (struct health_finding){ .rule = rule,
                                      .state = state,
                                      .device = e->devices[dev].index,
                                      .core = core,
                                      .value = value,
                                      .since_ms = e->snap->timestamp_ms,
                                      .last_ms = e->snap->timestamp_ms };
        snprintf(f->detail, sizeof(f->detail), "%s", detail ? detail : "");
}

/* The "no figures" finding of a rule on a device. */
static void unknown(struct eval *e, enum health_rule_id rule, size_t dev, const char *why) {
        add_finding(e, rule, HEALTH_UNKNOWN, dev, -1, why, NAN);
}

/* ---- the conditions ----------------------------------------------------- */

static void eval_is_zero(struct eval *e, enum health_rule_id id) {
        const struct health_rule *r = &health_rules[id];
        uint8_t *seen = calloc(e->n_devices ? e->n_devices : 1, 1);
        if (!seen) {
                e->failed = true;
                return;
        }
        for (size_t i = 0; i < e->n; i++) {
                const struct series_desc *d = &e->snap->set->series[i];
                long dev = passes_filter(r, d) ? device_of(e, d) : -1;
                double v;
                if (dev < 0 || !now_value(e, i, &v))
                        continue;
                seen[dev] = 1;
                if (v == 0) {
                        e->down[dev] = true;
                        add_finding(e, id, r->state, (size_t) dev, -1, NULL, v);
                }
        }
        for (size_t k = 0; k < e->n_devices; k++)
                if (!seen[k])
                        unknown(e, id, k, "no figures");
        free(seen);
}

/* The next process after *at (from 0) that runs under tag, or NULL: a
 * tag's series stand for all of them (workers started with one tag). */
static const struct runtime_info *next_of_tag(const struct eval *e, const char *tag, size_t *at) {
        const struct series_set *set = e->snap->set;
        while (tag[0] && *at < set->n_runtimes)
                if (strcmp(set->runtimes[(*at)++].tag, tag) == 0)
                        return &set->runtimes[*at - 1];
        return NULL;
}

/* INCREASE and RATE: per device, the counters' rise summed; per core
 * where the series name one (per_core rules); a runtime's series count
 * on every device whose cores it holds. */
struct tally {
        bool any, missing;
        double sum, top;
        char detail[HEALTH_DETAIL_MAX];
};

static void tally_add(struct tally *t, double rise, const char *detail) {
        t->any = true;
        t->sum += rise;
        if (rise > t->top || !t->detail[0]) {
                t->top = rise;
                snprintf(t->detail, sizeof(t->detail), "%s", detail);
        }
}

static bool tripped(const struct eval *e, const struct health_rule *r, double sum, double *value) {
        *value = r->condition == HEALTH_RATE ? (e->dt > 0 ? sum / e->dt : 0) : sum;
        return *value > r->threshold;
}

static void eval_counters(struct eval *e, enum health_rule_id id) {
        const struct health_rule *r = &health_rules[id];
        struct tally *dev = calloc(e->n_devices ? e->n_devices : 1, sizeof(*dev));
        bool *counted = calloc(e->n_devices ? e->n_devices : 1, sizeof(*counted));
        if (!dev || !counted) {
                free(dev);
                free(counted);
                e->failed = true;
                return;
        }
        bool rate_known = e->prev && e->dt > 0;
        for (size_t i = 0; i < e->n; i++) {
                const struct series_desc *d = &e->snap->set->series[i];
                if (!passes_filter(r, d) || !e->snap->valid[i])
                        continue;
                double rise = 0;
                bool known = rate_known && increase(e, i, &rise);
                long pos = device_of(e, d);
                long core = e->core_of[i];
                const char *what = r->filter_label ? label(d, r->filter_label) : "";
                if (pos >= 0 && r->per_core && core >= 0) {
                        /* A core's own counters: a finding of its own. */
                        struct tally t = { 0 };
                        dev[pos].any = true;
                        if (!known) {
                                dev[pos].missing = true;
                                continue;
                        }
                        double value;
                        tally_add(&t, rise, what);
                        if (tripped(e, r, t.sum, &value))
                                add_finding(e, id, r->state, (size_t) pos, (int) core, t.detail, value);
                        continue;
                }
                if (pos >= 0) {
                        if (!known)
                                dev[pos].missing = true;
                        else
                                tally_add(&dev[pos], rise, what);
                        dev[pos].any = true;
                        continue;
                }
                /* A runtime's counters: every device its processes hold
                 * cores of, once. */
                const char *tag = label(d, "runtime_tag");
                const struct runtime_info *rt;
                char detail[HEALTH_DETAIL_MAX];
                snprintf(detail, sizeof(detail), "runtime %.40s", tag);
                memset(counted, 0, e->n_devices * sizeof(*counted));
                for (size_t at = 0; (rt = next_of_tag(e, tag, &at));)
                        for (unsigned c = 0; c < rt->n_cores; c++) {
                                long k = rt->cores[c] < e->n_cores ? e->core_dev[rt->cores[c]] : -1;
                                if (k < 0 || counted[k])
                                        continue;
                                counted[k] = true;
                                dev[k].any = true;
                                if (!known)
                                        dev[k].missing = true;
                                else
                                        tally_add(&dev[k], rise, detail);
                        }
        }
        for (size_t k = 0; k < e->n_devices; k++) {
                double value;
                if (e->down[k])
                        continue;
                /* Execution counters apply where something runs: a device
                 * no runtime holds and without counters of its own has
                 * nothing to fail. */
                if (!dev[k].any && r->per_core && !e->held[k])
                        continue;
                if (!dev[k].any)
                        unknown(e, id, k, "no figures");
                else if (tripped(e, r, dev[k].sum, &value))
                        add_finding(e, id, r->state, k, -1, dev[k].detail, value);
                else if (dev[k].missing)
                        unknown(e, id, k, rate_known ? "no earlier sample" : "no earlier tick");
        }
        free(dev);
        free(counted);
}

static void eval_share(struct eval *e, enum health_rule_id id) {
        const struct health_rule *r = &health_rules[id];
        double *used = malloc((e->n_devices ? e->n_devices : 1) * 2 * sizeof(double));
        if (!used) {
                e->failed = true;
                return;
        }
        for (size_t k = 0; k < e->n_devices * 2; k++)
                used[k] = NAN;
        for (size_t i = 0; i < e->n; i++) {
                const struct series_desc *d = &e->snap->set->series[i];
                long pos = d->metric == r->metric || d->metric == r->total ? device_of(e, d) : -1;
                double v;
                if (pos >= 0 && now_value(e, i, &v))
                        used[pos * 2 + (d->metric == r->total)] = v;
        }
        for (size_t k = 0; k < e->n_devices; k++) {
                double u = used[k * 2], total = used[k * 2 + 1];
                if (e->down[k])
                        continue;
                if (isnan(u) || isnan(total) || !(total > 0))
                        unknown(e, id, k, "no figures");
                else if (u / total > r->threshold)
                        add_finding(e, id, r->state, k, -1, NULL, u / total);
        }
        free(used);
}

/* One link direction of a device: what it sent and received since the
 * previous tick, and whether it ever carried traffic. */
struct link {
        long dev;
        char peer[SERIES_LABEL_VALUE_MAX + 8];
        bool known, moved, carried, peer_down;
};

/* A link that carried traffic and moved nothing this interval, on a
 * device that computes, while another link of the device moves traffic
 * (or, for a device with one link, a NeuronSwitch port: another device's
 * port does). Traffic follows the work, so a link between devices of
 * different jobs, or of a job that stopped, is silent by design: it never
 * carried anything, or its whole device went quiet with it. */
static void eval_links(struct eval *e, enum health_rule_id id) {
        const struct health_rule *r = &health_rules[id];
        struct link *links = NULL;
        size_t n_links = 0;
        size_t *per_dev = calloc(e->n_devices ? e->n_devices : 1, sizeof(*per_dev));
        size_t *moving = calloc(e->n_devices ? e->n_devices : 1, sizeof(*moving));
        bool *busy = calloc(e->n_devices ? e->n_devices : 1, sizeof(*busy));
        bool *missing = calloc(e->n_devices ? e->n_devices : 1, sizeof(*missing));
        if (!per_dev || !moving || !busy || !missing)
                goto oom;
        for (size_t i = 0; i < e->n; i++) {
                const struct series_desc *d = &e->snap->set->series[i];
                long pos = device_of(e, d);
                double v;
                if (pos < 0)
                        continue;
                if (d->metric == METRIC_CORE_UTILIZATION && now_value(e, i, &v) && v > 0)
                        busy[pos] = true;
                if (d->metric != r->metric && d->metric != METRIC_LINK_RX_BYTES)
                        continue;
                /* Both directions of a link: the transmit series, then the
                 * receive series with the same labels. */
                char peer[sizeof(links[0].peer)];
                snprintf(peer, sizeof(peer), "%s%s%s", label(d, "peer_node"), label(d, "peer_node")[0] ? "/" : "",
                         label(d, "peer_device"));
                struct link *l = NULL;
                for (size_t k = n_links; k-- > 0 && !l;)
                        if (links[k].dev == pos && strcmp(links[k].peer, peer) == 0)
                                l = &links[k];
                if (!l) {
                        struct link *grown = realloc(links, (n_links + 1) * sizeof(*grown));
                        if (!grown)
                                goto oom;
                        links = grown;
                        l = &links[n_links++];
                        *l = (struct link){ .dev = pos, .known = true };
                        snprintf(l->peer, sizeof(l->peer), "%s", peer);
                        per_dev[pos]++;
                }
                double rise, before;
                long peer_dev = label(d, "peer_node")[0] ? -1 : label_number(d, "peer_device");
                /* A link to a device that is gone is that device's finding. */
                if (peer_dev >= 0 && (size_t) peer_dev < e->n_pos && e->pos_of[peer_dev] >= 0 &&
                    e->down[e->pos_of[peer_dev]])
                        l->peer_down = true;
                if (!e->snap->valid[i] || !increase(e, i, &rise) || !prev_value(e, i, &before)) {
                        l->known = false;
                        continue;
                }
                l->moved = l->moved || rise > 0;
                l->carried = l->carried || before > 0;
        }
        size_t devices_moving = 0;
        for (size_t k = 0; k < n_links; k++) {
                if (links[k].known && links[k].moved && moving[links[k].dev]++ == 0)
                        devices_moving++;
                if (!links[k].known)
                        missing[links[k].dev] = true;
        }
        for (size_t k = 0; k < e->n_devices; k++) {
                if (e->down[k])
                        continue;
                /* A device with peers and no link figures: the backend does
                 * not see its links (sysfs). */
                if (per_dev[k] == 0 && e->devices[k].n_peers > 0)
                        unknown(e, id, k, "no link figures");
                else if (missing[k])
                        unknown(e, id, k, e->prev ? "no earlier sample" : "no earlier tick");
        }
        for (size_t k = 0; k < n_links; k++) {
                const struct link *l = &links[k];
                size_t dev = (size_t) l->dev;
                if (!l->known || l->moved || !l->carried || l->peer_down || e->down[dev] || !busy[dev])
                        continue;
                bool others = per_dev[dev] > 1 ? moving[dev] > 0 : devices_moving > 0;
                char detail[HEALTH_DETAIL_MAX];
                snprintf(detail, sizeof(detail), "peer %.60s", l->peer);
                if (others)
                        add_finding(e, id, r->state, dev, -1, detail, 0);
        }
        goto done;
oom:
        e->failed = true;
done:
        free(links);
        free(per_dev);
        free(moving);
        free(busy);
        free(missing);
}

/* A core at 0 % whose memory is held (above the threshold's share of its
 * part of the device's memory) while another core of the same runtime (of
 * the same device, when the backend does not say which runtime holds it)
 * is busy: a hung core. A process that loaded a model and runs nothing
 * holds every one of its cores idle and trips nothing. */
struct core_read {
        long dev, core;
        const char *tag;
        bool util_known, mem_known;
        double util, mem;
};

static void eval_stuck(struct eval *e, enum health_rule_id id) {
        const struct health_rule *r = &health_rules[id];
        /* Indexed by the core's number: every core of the devices has a place. */
        size_t n_cores = e->n_cores;
        struct core_read *cores = calloc(n_cores ? n_cores : 1, sizeof(*cores));
        if (!cores) {
                e->failed = true;
                return;
        }
        for (size_t k = 0; k < n_cores; k++)
                cores[k] = (struct core_read){ .dev = -1, .core = (long) k, .tag = "" };
        for (size_t i = 0; i < e->n; i++) {
                const struct series_desc *d = &e->snap->set->series[i];
                if (d->metric != METRIC_CORE_UTILIZATION && d->metric != METRIC_CORE_MEMORY_USED)
                        continue;
                long pos = device_of(e, d), core = e->core_of[i];
                if (pos < 0 || core < 0 || (size_t) core >= n_cores)
                        continue;
                struct core_read *c = &cores[core];
                c->dev = pos;
                if (d->metric == METRIC_CORE_UTILIZATION) {
                        c->util_known = now_value(e, i, &c->util);
                        c->tag = label(d, "runtime_tag");
                } else {
                        c->mem_known = now_value(e, i, &c->mem);
                }
        }
        bool *reported = calloc(e->n_devices ? e->n_devices : 1, sizeof(*reported));
        for (size_t k = 0; reported && k < n_cores; k++) {
                const struct core_read *c = &cores[k];
                if (c->dev < 0 || e->down[c->dev])
                        continue;
                const struct device_info *dev = &e->devices[c->dev];
                if (!c->util_known || !c->mem_known) {
                        if (!reported[c->dev])
                                unknown(e, id, (size_t) c->dev, "no figures");
                        reported[c->dev] = true;
                        continue;
                }
                double share = dev->core_count && dev->memory_bytes ? (double) dev->memory_bytes / dev->core_count : 0;
                if (c->util > 0 || !(c->mem > r->threshold * share))
                        continue;
                /* The runtime's other cores (runtime_info lists them, for
                 * each process under its tag), else the device's. */
                const struct runtime_info *rt;
                bool tagged = false, sibling_busy = false;
                for (size_t at = 0; (rt = next_of_tag(e, c->tag, &at));) {
                        tagged = true;
                        for (unsigned j = 0; j < rt->n_cores && !sibling_busy; j++) {
                                const struct core_read *o = rt->cores[j] < n_cores ? &cores[rt->cores[j]] : NULL;
                                sibling_busy =
                                        o && o != c && o->util_known && o->util > 0 && strcmp(o->tag, c->tag) == 0;
                        }
                }
                for (size_t j = dev->first_core; !tagged && j < dev->first_core + dev->core_count && j < n_cores; j++) {
                        const struct core_read *o = &cores[j];
                        sibling_busy = sibling_busy || (j != k && !o->tag[0] && o->util_known && o->util > 0);
                }
                if (sibling_busy) {
                        char detail[HEALTH_DETAIL_MAX];
                        snprintf(detail, sizeof(detail), "core %ld", c->core);
                        add_finding(e, id, r->state, (size_t) c->dev, (int) c->core, detail, c->mem);
                }
        }
        if (!reported)
                e->failed = true;
        free(reported);
        free(cores);
}

/* ---- the result ------------------------------------------------------------ */

static bool same_finding(const struct health_finding *a, const struct health_finding *b) {
        return a->rule == b->rule && a->device == b->device && a->core == b->core && a->state == b->state &&
               strcmp(a->detail, b->detail) == 0;
}

static int finding_order(const void *pa, const void *pb, void *pe) {
        const struct health_finding *a = pa, *b = pb;
        const struct eval *e = pe;
        if (a->device != b->device)
                return e->pos_of[a->device] < e->pos_of[b->device] ? -1 : 1;
        if (a->rule != b->rule)
                return a->rule < b->rule ? -1 : 1;
        if (a->core != b->core)
                return a->core < b->core ? -1 : 1;
        return strcmp(a->detail, b->detail);
}

void health_finding_text(const struct health_finding *f, char *out, size_t size) {
        const struct health_rule *r = &health_rules[f->rule];
        if (f->state == HEALTH_UNKNOWN)
                snprintf(out, size, "%s: %s", r->kind, f->detail[0] ? f->detail : "no figures");
        else if (f->detail[0])
                snprintf(out, size, "%s (%s)", r->reason, f->detail);
        else
                snprintf(out, size, "%s", r->reason);
}

/* Looks for a finding in the previous result's findings of the device. */
static const struct health_finding *find_prev(const struct health_result *prev, const struct health_device *pd,
                                              const struct health_finding *f) {
        for (size_t k = 0; pd && k < pd->count; k++)
                if (same_finding(&prev->findings[pd->first + k], f))
                        return &prev->findings[pd->first + k];
        return NULL;
}

static const struct health_device *prev_device(const struct health_result *prev, unsigned index) {
        for (size_t k = 0; prev && k < prev->n_devices; k++)
                if (prev->devices[k].index == index)
                        return &prev->devices[k];
        return NULL;
}

static void add_event(struct health_result *r, size_t *cap, const struct health_event *ev) {
        if (r->n_events == *cap) {
                size_t grown_cap = *cap ? *cap * 2 : 16;
                struct health_event *grown = realloc(r->events, grown_cap * sizeof(*grown));
                if (!grown)
                        return;
                r->events = grown;
                *cap = grown_cap;
        }
        r->events[r->n_events++] = *ev;
        r->events_total[ev->kind][ev->severity]++;
}

static void rule_event(struct health_result *r, size_t *cap, const struct health_finding *f,
                       enum health_event_phase phase, enum health_state device_state) {
        char text[HEALTH_REASON_MAX];
        health_finding_text(f, text, sizeof(text));
        struct health_event ev = {
                .timestamp_ms = r->timestamp_ms,
                .device = (int) f->device,
                .core = f->core,
                .kind = f->rule,
                .phase = phase,
                .severity = phase == HEALTH_END ? HEALTH_INFO : severity_of(f->state),
                .state = device_state,
                .value = f->value,
        };
        snprintf(ev.reason, sizeof(ev.reason), "%s%.140s", phase == HEALTH_END ? "ended: " : "", text);
        add_event(r, cap, &ev);
}

/* Findings the previous result had of a rule that holds, still within
 * its hold, that did not trip again: they stay, as they were. */
static void keep_held(struct eval *e, const struct health_result *prev) {
        for (size_t k = 0; prev && k < prev->n_findings; k++) {
                const struct health_finding *f = &prev->findings[k];
                const struct health_rule *r = &health_rules[f->rule];
                if (f->state == HEALTH_UNKNOWN || r->hold_ms <= 0 || f->last_ms + r->hold_ms <= e->snap->timestamp_ms)
                        continue;
                bool again = false;
                for (size_t j = 0; j < e->n_found && !again; j++)
                        again = same_finding(&e->found[j], f);
                if (again)
                        continue;
                if (f->device >= e->n_pos || e->pos_of[f->device] < 0)
                        continue;
                add_finding(e, f->rule, f->state, (size_t) e->pos_of[f->device], f->core, f->detail, f->value);
                if (!e->failed)
                        e->found[e->n_found - 1].last_ms = f->last_ms;
        }
}

static struct health_result *build(struct eval *e, const struct health_result *prev) {
        struct health_result *r = calloc(1, sizeof(*r));
        size_t n_cores = 0, cap = 0;
        for (size_t k = 0; k < e->n_devices; k++)
                if (e->devices[k].first_core + e->devices[k].core_count > n_cores)
                        n_cores = e->devices[k].first_core + e->devices[k].core_count;
        if (!r)
                return NULL;
        atomic_init(&r->refs, 1);
        r->timestamp_ms = e->snap->timestamp_ms;
        r->devices = calloc(e->n_devices ? e->n_devices : 1, sizeof(*r->devices));
        r->cores = calloc(n_cores ? n_cores : 1, sizeof(*r->cores));
        if (!r->devices || !r->cores) {
                health_result_unref(r);
                return NULL;
        }
        r->n_devices = e->n_devices;
        r->n_cores = n_cores;
        /* Findings are stored in device order: positions are that order.
         * (None: found is NULL, which qsort_r() must not be given.) */
        if (e->n_found)
                qsort_r(e->found, e->n_found, sizeof(*e->found), finding_order, e);
        r->findings = e->found;
        r->n_findings = e->n_found;
        e->found = NULL;
        if (prev)
                memcpy(r->events_total, prev->events_total, sizeof(r->events_total));

        size_t at = 0;
        for (size_t k = 0; k < e->n_devices; k++) {
                struct health_device *d = &r->devices[k];
                const struct health_device *pd = prev_device(prev, e->devices[k].index);
                const struct health_finding *worst = NULL;
                *d = (struct health_device){ .index = e->devices[k].index, .first = at };
                while (at < r->n_findings && r->findings[at].device == d->index) {
                        struct health_finding *f = &r->findings[at++];
                        const struct health_finding *pf = find_prev(prev, pd, f);
                        if (pf)
                                f->since_ms = pf->since_ms;
                        /* Findings are in rule order: the first of the worst state wins. */
                        if (!worst || f->state > worst->state)
                                worst = f;
                        if (f->core >= 0 && (size_t) f->core < n_cores && f->state > r->cores[f->core].state)
                                r->cores[f->core].state = f->state;
                        if (!pf && f->state != HEALTH_UNKNOWN)
                                rule_event(r, &cap, f, HEALTH_BEGIN, HEALTH_HEALTHY);
                }
                d->count = at - d->first;
                d->state = worst ? worst->state : HEALTH_HEALTHY;
                d->action = worst && d->state != HEALTH_HEALTHY
                                    ? d->state == HEALTH_UNKNOWN ? "none: the backend cannot tell; see the reasons"
                                                                 : health_rules[worst->rule].action
                                    : NULL;
                enum health_state before = pd ? pd->state : HEALTH_UNKNOWN;
                d->since_ms = pd && pd->state == d->state ? pd->since_ms : r->timestamp_ms;
                /* What ended: the previous result's findings not found now. */
                for (size_t j = 0; pd && j < pd->count; j++) {
                        const struct health_finding *pf = &prev->findings[pd->first + j];
                        bool still = false;
                        for (size_t i = d->first; i < d->first + d->count && !still; i++)
                                still = same_finding(&r->findings[i], pf);
                        if (!still && pf->state != HEALTH_UNKNOWN)
                                rule_event(r, &cap, pf, HEALTH_END, d->state);
                }
                /* This tick's begin events of the device know its state now. */
                for (size_t j = 0; j < r->n_events; j++)
                        if (r->events[j].device == (int) d->index)
                                r->events[j].state = d->state;
                if (before != d->state) {
                        struct health_event ev = {
                                .timestamp_ms = r->timestamp_ms,
                                .device = (int) d->index,
                                .core = -1,
                                .kind = HEALTH_RULE__COUNT,
                                .phase = HEALTH_CHANGE,
                                .severity = severity_of(d->state),
                                .state = d->state,
                                .value = worst && d->state != HEALTH_HEALTHY ? worst->value : NAN,
                        };
                        char text[HEALTH_REASON_MAX] = "every rule passes";
                        if (worst && d->state != HEALTH_HEALTHY)
                                health_finding_text(worst, text, sizeof(text));
                        snprintf(ev.reason, sizeof(ev.reason), "%s -> %s: %.130s", health_state_names[before],
                                 health_state_names[d->state], text);
                        add_event(r, &cap, &ev);
                }
        }
        /* Cores: the state of their own findings, since the tick it began. */
        for (size_t c = 0; c < n_cores; c++) {
                const struct health_core *pc = prev && c < prev->n_cores ? &prev->cores[c] : NULL;
                r->cores[c].since_ms = pc && pc->state == r->cores[c].state ? pc->since_ms : r->timestamp_ms;
        }
        /* The last events, newest last. */
        size_t keep_old = prev ? prev->n_recent : 0;
        if (keep_old + r->n_events > HEALTH_RECENT_EVENTS)
                keep_old = r->n_events >= HEALTH_RECENT_EVENTS ? 0 : HEALTH_RECENT_EVENTS - r->n_events;
        if (keep_old)
                memcpy(r->recent, prev->recent + (prev->n_recent - keep_old), keep_old * sizeof(r->recent[0]));
        size_t take = r->n_events < HEALTH_RECENT_EVENTS ? r->n_events : HEALTH_RECENT_EVENTS;
        /* No events: events is NULL, and NULL plus 0 is no pointer in C. */
        if (take)
                memcpy(r->recent + keep_old, r->events + (r->n_events - take), take * sizeof(r->recent[0]));
        r->n_recent = keep_old + take;
        return r;
}

struct health_result *health_evaluate(const struct device_info *devices, size_t n, const struct snapshot *prev,
                                      const struct snapshot *snap, const struct health_result *prev_result) {
        struct eval e = { .devices = devices, .n_devices = n, .snap = snap, .prev = prev };
        static const struct series_set empty = { 0 };
        struct snapshot view;

        /* A snapshot without a list (a test's) holds no series. */
        if (!snap->set) {
                view = (struct snapshot){ .timestamp_ms = snap->timestamp_ms, .set = (struct series_set *) &empty };
                e.snap = &view;
        }
        e.n = e.snap->set->n < e.snap->n ? e.snap->set->n : e.snap->n;
        if (prev && (!prev->set || prev->timestamp_ms >= snap->timestamp_ms))
                e.prev = NULL;
        e.dt = e.prev ? (double) (snap->timestamp_ms - e.prev->timestamp_ms) / 1000.0 : 0;
        for (size_t k = 0; k < n; k++)
                if (devices[k].index + 1 > e.n_pos)
                        e.n_pos = devices[k].index + 1;
        e.pos_of = malloc((e.n_pos ? e.n_pos : 1) * sizeof(*e.pos_of));
        e.down = calloc(n ? n : 1, sizeof(*e.down));
        if (!e.pos_of || !e.down || map_prev(&e) < 0) {
                free(e.pos_of);
                free(e.down);
                free(e.prev_of);
                return NULL;
        }
        for (size_t k = 0; k < e.n_pos; k++)
                e.pos_of[k] = -1;
        for (size_t k = 0; k < n; k++) {
                e.pos_of[devices[k].index] = (long) k;
                if (devices[k].first_core + devices[k].core_count > e.n_cores)
                        e.n_cores = devices[k].first_core + devices[k].core_count;
        }
        /* Labels parsed once, of the families the rules read. */
        bool read[METRIC__COUNT] = { [METRIC_LINK_RX_BYTES] = true, [METRIC_CORE_MEMORY_USED] = true };
        for (unsigned id = 0; id < HEALTH_RULE__COUNT; id++)
                read[health_rules[id].metric] = read[health_rules[id].total] = true;
        e.dev_of = malloc((e.n ? e.n : 1) * sizeof(*e.dev_of));
        e.core_of = malloc((e.n ? e.n : 1) * sizeof(*e.core_of));
        for (size_t i = 0; e.dev_of && e.core_of && i < e.n; i++) {
                const struct series_desc *d = &e.snap->set->series[i];
                e.dev_of[i] = read[d->metric] ? parse_device(&e, d) : -1;
                e.core_of[i] = read[d->metric] ? label_number(d, "neuroncore") : -1;
        }
        /* Which device each core is on, and which devices a runtime holds. */
        e.core_dev = malloc((e.n_cores ? e.n_cores : 1) * sizeof(*e.core_dev));
        e.held = calloc(n ? n : 1, sizeof(*e.held));
        for (size_t c = 0; e.core_dev && c < e.n_cores; c++)
                e.core_dev[c] = -1;
        for (size_t k = 0; e.core_dev && k < n; k++)
                for (unsigned c = 0; c < devices[k].core_count; c++)
                        e.core_dev[devices[k].first_core + c] = (long) k;
        for (size_t r = 0; e.core_dev && e.held && r < e.snap->set->n_runtimes; r++) {
                const struct runtime_info *rt = &e.snap->set->runtimes[r];
                for (unsigned c = 0; c < rt->n_cores; c++)
                        if (rt->cores[c] < e.n_cores && e.core_dev[rt->cores[c]] >= 0)
                                e.held[e.core_dev[rt->cores[c]]] = true;
        }
        if (!e.dev_of || !e.core_of || !e.core_dev || !e.held)
                e.failed = true;

        /* The device's presence first: a device that is gone is only that. */
        for (unsigned id = 0; !e.failed && id < HEALTH_RULE__COUNT; id++) {
                switch (health_rules[id].condition) {
                case HEALTH_IS_ZERO:
                        eval_is_zero(&e, id);
                        break;
                case HEALTH_INCREASE:
                case HEALTH_RATE:
                        eval_counters(&e, id);
                        break;
                case HEALTH_SHARE:
                        eval_share(&e, id);
                        break;
                case HEALTH_LINK_SILENT:
                        eval_links(&e, id);
                        break;
                case HEALTH_CORE_IDLE:
                        eval_stuck(&e, id);
                        break;
                }
        }
        keep_held(&e, prev_result);
        struct health_result *r = e.failed ? NULL : build(&e, prev_result);
        free(e.found);
        free(e.pos_of);
        free(e.down);
        free(e.prev_of);
        free(e.dev_of);
        free(e.core_of);
        free(e.core_dev);
        free(e.held);
        return r;
}

struct health_result *health_result_ref(struct health_result *r) {
        if (r)
                atomic_fetch_add(&r->refs, 1);
        return r;
}

void health_result_unref(struct health_result *r) {
        if (r && atomic_fetch_sub(&r->refs, 1) == 1) {
                free(r->devices);
                free(r->findings);
                free(r->cores);
                free(r->events);
                free(r);
        }
}

enum health_state health_worst(const struct health_result *r) {
        enum health_state worst = HEALTH_HEALTHY;
        if (!r || r->n_devices == 0)
                return HEALTH_UNKNOWN;
        for (size_t k = 0; k < r->n_devices; k++)
                if (r->devices[k].state > worst)
                        worst = r->devices[k].state;
        return worst;
}
