#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/inventory.h"

void runtime_info_free(struct runtime_info *r, size_t n) {
        for (size_t i = 0; r && i < n; i++)
                free(r[i].cores);
        free(r);
}

void inventory_free(struct inventory *inv) {
        if (!inv)
                return;
        /* n_devices may be set before the array's allocation failed. */
        for (unsigned i = 0; inv->devices && i < inv->n_devices; i++) {
                free(inv->devices[i].peers);
                free(inv->devices[i].peer_nodes);
        }
        free(inv->devices);
        runtime_info_free(inv->runtimes, inv->n_runtimes);
        free(inv->series);
        *inv = (struct inventory){ 0 };
}

/* A copy of bytes from src, or NULL when out of memory. */
static void *copy_of(const void *src, size_t bytes) {
        void *out = malloc(bytes ? bytes : 1);
        if (out)
                memcpy(out, src, bytes);
        return out;
}

int inventory_copy_hardware(struct inventory *dst, const struct inventory *src) {
        *dst = *src;
        dst->devices = NULL;
        dst->n_devices = 0;
        dst->runtimes = NULL;
        dst->n_runtimes = 0;
        dst->series = NULL;
        dst->n_series = 0;
        if (src->n_devices == 0)
                return 0;
        dst->devices = calloc(src->n_devices, sizeof(*dst->devices));
        if (!dst->devices)
                return -ENOMEM;
        for (unsigned i = 0; i < src->n_devices; i++) {
                const struct device_info *d = &src->devices[i];
                struct device_info *out = &dst->devices[i];
                *out = *d;
                out->peers = d->peers ? copy_of(d->peers, d->n_peers * sizeof(*d->peers)) : NULL;
                /* NULL peer_nodes has a meaning of its own: every peer on this host. */
                out->peer_nodes = d->peer_nodes ? copy_of(d->peer_nodes, d->n_peers * sizeof(*d->peer_nodes)) : NULL;
                dst->n_devices = i + 1;
                if ((d->peers && !out->peers) || (d->peer_nodes && !out->peer_nodes)) {
                        inventory_free(dst);
                        return -ENOMEM;
                }
        }
        return 0;
}

int inventory_add_series(struct inventory *inv, enum metric_id metric, const char *const *label_values) {
        /* Grow by doubling: the list is rebuilt only when runtimes come or go. */
        size_t n = inv->n_series;
        if ((n & (n - 1)) == 0) {
                struct series_desc *grown = realloc(inv->series, (n ? 2 * n : 1) * sizeof(*grown));
                if (!grown)
                        return -ENOMEM;
                inv->series = grown;
        }
        struct series_desc *s = &inv->series[n];
        *s = (struct series_desc){ .metric = metric };
        for (size_t i = 0; i < metric_label_count(&metric_table[metric]); i++)
                snprintf(s->label_values[i], sizeof(s->label_values[i]), "%s", label_values[i] ? label_values[i] : "");
        inv->n_series = n + 1;
        return 0;
}

void inventory_clear_series(struct inventory *inv) {
        free(inv->series);
        inv->series = NULL;
        inv->n_series = 0;
}

int inventory_add_runtime(struct inventory *inv, uint32_t pid, const char *tag, const unsigned *cores,
                          unsigned n_cores) {
        struct runtime_info *grown = realloc(inv->runtimes, (inv->n_runtimes + 1) * sizeof(*grown));
        if (!grown)
                return -ENOMEM;
        inv->runtimes = grown;
        struct runtime_info *r = &grown[inv->n_runtimes];
        *r = (struct runtime_info){ .pid = pid, .n_cores = n_cores };
        snprintf(r->tag, sizeof(r->tag), "%s", tag);
        r->cores = malloc((n_cores ? n_cores : 1) * sizeof(*r->cores));
        if (!r->cores)
                return -ENOMEM;
        memcpy(r->cores, cores, n_cores * sizeof(*r->cores));
        inv->n_runtimes++;
        return 0;
}

void inventory_clear_runtimes(struct inventory *inv) {
        runtime_info_free(inv->runtimes, inv->n_runtimes);
        inv->runtimes = NULL;
        inv->n_runtimes = 0;
}

int runtime_info_copy(const struct runtime_info *src, size_t n, struct runtime_info **ret) {
        struct runtime_info *out = NULL;
        if (n == 0) {
                *ret = NULL;
                return 0;
        }
        out = calloc(n, sizeof(*out));
        if (!out)
                return -ENOMEM;
        for (size_t i = 0; i < n; i++) {
                out[i] = src[i];
                out[i].cores = malloc((src[i].n_cores ? src[i].n_cores : 1) * sizeof(*out[i].cores));
                if (!out[i].cores) {
                        runtime_info_free(out, i);
                        return -ENOMEM;
                }
                memcpy(out[i].cores, src[i].cores, src[i].n_cores * sizeof(*out[i].cores));
        }
        *ret = out;
        return 0;
}

const struct runtime_info *runtime_info_find_core(const struct runtime_info *r, size_t n, unsigned core) {
        for (size_t i = 0; i < n; i++)
                for (unsigned k = 0; k < r[i].n_cores; k++)
                        if (r[i].cores[k] == core)
                                return &r[i];
        return NULL;
}

int series_desc_cmp(const struct series_desc *a, const struct series_desc *b) {
        if (a->metric != b->metric)
                return a->metric < b->metric ? -1 : 1;
        for (size_t k = 0; k < METRIC_LABELS_MAX; k++) {
                int c = strcmp(a->label_values[k], b->label_values[k]);
                if (c)
                        return c;
        }
        return 0;
}
