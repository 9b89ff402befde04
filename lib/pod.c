#include "config.h"

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/metric.h"
#include "lib/parse.h"
#include "lib/pod.h"

/* The Neuron device plugin's resources (see pods.h for their IDs). */
static const struct {
        const char *name;
        enum pod_unit unit;
} neuron_resources[] = {
        { "aws.amazon.com/neuroncore", POD_UNIT_CORE },
        { "aws.amazon.com/neuron", POD_UNIT_DEVICE },
        { "aws.amazon.com/neurondevice", POD_UNIT_DEVICE },
};

/* A label's value as an index, or -1 when the family has no such label
 * or the value is not a decimal index. */
static long label_index(const struct series_desc *s, const char *label) {
        int i = metric_label_index(&metric_table[s->metric], label);
        uint64_t value;

        if (i < 0 || parse_uint_range(s->label_values[i], 0, UINT32_MAX, &value) < 0)
                return -1;
        return (long) value;
}

enum pod_place pod_series_place(const struct series_desc *s, unsigned *ret_device, unsigned *ret_core) {
        long device = label_index(s, "neuron_device"), core = label_index(s, "neuroncore");

        /* hardware_ecc_events_total names its device as AWS's exporter does. */
        if (device < 0)
                device = label_index(s, "neuron_device_index");

        if (device < 0)
                return POD_PLACE_NONE;
        *ret_device = (unsigned) device;
        if (core < 0)
                return POD_PLACE_DEVICE;
        *ret_core = (unsigned) core;
        return POD_PLACE_CORE;
}

static int compare_cores(const void *a, const void *b) {
        const struct pod_core *x = a, *y = b;
        return x->core < y->core ? -1 : x->core > y->core;
}

int pod_cores_from_series(const struct series_desc *series, size_t n_series, struct pod_core **ret, size_t *ret_n) {
        struct pod_core *cores = malloc((n_series ? n_series : 1) * sizeof(*cores));
        size_t n = 0;

        if (!cores)
                return -ENOMEM;
        for (size_t i = 0; i < n_series; i++) {
                unsigned device, core;
                if (pod_series_place(&series[i], &device, &core) == POD_PLACE_CORE)
                        cores[n++] = (struct pod_core){ .device = device, .core = core };
        }
        qsort(cores, n, sizeof(*cores), compare_cores);
        size_t unique = 0;
        for (size_t i = 0; i < n; i++)
                if (unique == 0 || cores[unique - 1].core != cores[i].core)
                        cores[unique++] = cores[i];
        *ret = cores;
        *ret_n = unique;
        return 0;
}

struct pod_map *pod_map_new(void) {
        struct pod_map *m = calloc(1, sizeof(*m));
        if (m)
                atomic_init(&m->refs, 1);
        return m;
}

/* Grows an array of n elements of size bytes by doubling, when n is 0 or a
 * power of two. Returns 0 or -ENOMEM. */
static int grow(void **array, size_t n, size_t size) {
        if (n & (n - 1))
                return 0;
        void *grown = realloc(*array, (n ? 2 * n : 1) * size);
        if (!grown)
                return -ENOMEM;
        *array = grown;
        return 0;
}

static int copy_name(char *out, size_t size, const char *name) {
        size_t len = strlen(name);
        if (len >= size)
                return -EINVAL;
        memcpy(out, name, len + 1);
        return 0;
}

/* The holder's index, added when new. Returns it, or a negative errno. */
static long find_holder(struct pod_map *m, const char *namespace, const char *pod, const char *container) {
        struct pod_holder h;

        if (copy_name(h.namespace, sizeof(h.namespace), namespace) < 0 || copy_name(h.pod, sizeof(h.pod), pod) < 0 ||
            copy_name(h.container, sizeof(h.container), container) < 0)
                return -EINVAL;
        for (size_t i = 0; i < m->n_holders; i++) {
                const struct pod_holder *o = &m->holders[i];
                if (strcmp(o->namespace, h.namespace) == 0 && strcmp(o->pod, h.pod) == 0 &&
                    strcmp(o->container, h.container) == 0)
                        return (long) i;
        }
        if (grow((void **) &m->holders, m->n_holders, sizeof(*m->holders)) < 0)
                return -ENOMEM;
        m->holders[m->n_holders] = h;
        return (long) m->n_holders++;
}

int pod_map_add(struct pod_map *m, const char *namespace, const char *pod, const char *container, const char *resource,
                const char *device_id) {
        size_t r = 0;
        uint64_t index;

        while (r < sizeof(neuron_resources) / sizeof(neuron_resources[0]) && strcmp(neuron_resources[r].name, resource))
                r++;
        if (r == sizeof(neuron_resources) / sizeof(neuron_resources[0]))
                return 0;
        long holder = -EINVAL;
        if (parse_uint_range(device_id, 0, UINT32_MAX, &index) == 0)
                holder = find_holder(m, namespace, pod, container);
        if (holder == -EINVAL)
                m->bad_ids++;
        if (holder < 0)
                return (int) holder;
        if (grow((void **) &m->grants, m->n_grants, sizeof(*m->grants)) < 0)
                return -ENOMEM;
        m->grants[m->n_grants++] = (struct pod_grant){
                .unit = neuron_resources[r].unit,
                .index = (unsigned) index,
                .holder = (size_t) holder,
        };
        return 1;
}

int pod_map_copy_grants(struct pod_map *m, const struct pod_map *from) {
        if (from->n_holders == 0)
                return 0;
        /* Sized as pod_map_add's doubling would have left them. */
        size_t holders = 1, grants = 1;
        while (holders < from->n_holders)
                holders *= 2;
        while (grants < from->n_grants)
                grants *= 2;
        m->holders = malloc(holders * sizeof(*m->holders));
        m->grants = malloc(grants * sizeof(*m->grants));
        if (!m->holders || !m->grants) {
                free(m->holders);
                free(m->grants);
                m->holders = NULL;
                m->grants = NULL;
                return -ENOMEM;
        }
        memcpy(m->holders, from->holders, from->n_holders * sizeof(*m->holders));
        memcpy(m->grants, from->grants, from->n_grants * sizeof(*m->grants));
        m->n_holders = from->n_holders;
        m->n_grants = from->n_grants;
        m->answered_ms = from->answered_ms;
        return 0;
}

static long *new_lookup(size_t n) {
        long *a = malloc((n ? n : 1) * sizeof(*a));
        for (size_t i = 0; a && i < n; i++)
                a[i] = -1;
        return a;
}

int pod_map_index(struct pod_map *m, const struct pod_core *cores, size_t n_cores) {
        size_t n_core_holders = 0, n_device_holders = 0;

        for (size_t i = 0; i < n_cores; i++) {
                if (cores[i].core >= n_core_holders)
                        n_core_holders = (size_t) cores[i].core + 1;
                if (cores[i].device >= n_device_holders)
                        n_device_holders = (size_t) cores[i].device + 1;
        }
        long *core_holder = new_lookup(n_core_holders);
        long *device_holder = new_lookup(n_device_holders);
        if (!core_holder || !device_holder) {
                free(core_holder);
                free(device_holder);
                return -ENOMEM;
        }
        /* The first assignment of an index wins; the plugin assigns each
         * once. Indexes this host does not have are left out. */
        for (size_t i = 0; i < m->n_grants; i++) {
                const struct pod_grant *g = &m->grants[i];
                long *lookup = g->unit == POD_UNIT_CORE ? core_holder : device_holder;
                size_t n = g->unit == POD_UNIT_CORE ? n_core_holders : n_device_holders;
                if (g->index < n && lookup[g->index] < 0)
                        lookup[g->index] = (long) g->holder;
        }
        /* A device assigned whole holds every core on it, but for one
         * assigned on its own. */
        for (size_t i = 0; i < n_cores; i++)
                if (core_holder[cores[i].core] < 0)
                        core_holder[cores[i].core] = device_holder[cores[i].device];
        /* A device whose cores all went to one container is that
         * container's, as if it had been assigned whole. */
        for (size_t d = 0; d < n_device_holders; d++) {
                long only = -1;
                bool one_holder = true;
                if (device_holder[d] >= 0)
                        continue;
                for (size_t i = 0; i < n_cores && one_holder; i++) {
                        if (cores[i].device != d)
                                continue;
                        long h = core_holder[cores[i].core];
                        one_holder = h >= 0 && (only < 0 || h == only);
                        only = h;
                }
                if (one_holder && only >= 0)
                        device_holder[d] = only;
        }
        free(m->core_holder);
        free(m->device_holder);
        m->core_holder = core_holder;
        m->device_holder = device_holder;
        m->n_core_holders = n_core_holders;
        m->n_device_holders = n_device_holders;
        return 0;
}

const struct pod_holder *pod_map_device_holder(const struct pod_map *m, unsigned device) {
        if (!m || device >= m->n_device_holders || m->device_holder[device] < 0)
                return NULL;
        return &m->holders[m->device_holder[device]];
}

const struct pod_holder *pod_map_core_holder(const struct pod_map *m, unsigned core) {
        if (!m || core >= m->n_core_holders || m->core_holder[core] < 0)
                return NULL;
        return &m->holders[m->core_holder[core]];
}

const struct pod_holder *pod_map_series_holder(const struct pod_map *m, const struct series_desc *s) {
        unsigned device, core;

        switch (pod_series_place(s, &device, &core)) {
        case POD_PLACE_CORE:
                return pod_map_core_holder(m, core);
        case POD_PLACE_DEVICE:
                return pod_map_device_holder(m, device);
        default:
                return NULL;
        }
}

const char *const pod_label_names[POD_LABELS] = { "pod", "namespace", "container" };

const char *pod_holder_label(const struct pod_holder *h, size_t i) {
        const char *const values[POD_LABELS] = { h->pod, h->namespace, h->container };
        return values[i];
}

int pod_label_index(const char *name) {
        for (int i = 0; i < POD_LABELS; i++)
                if (strcmp(pod_label_names[i], name) == 0)
                        return i;
        return -ENOENT;
}

struct pod_map *pod_map_ref(struct pod_map *m) {
        if (m)
                atomic_fetch_add(&m->refs, 1);
        return m;
}

void pod_map_unref(struct pod_map *m) {
        if (!m || atomic_fetch_sub(&m->refs, 1) != 1)
                return;
        free(m->holders);
        free(m->grants);
        free(m->core_holder);
        free(m->device_holder);
        free(m);
}

void pod_slot_init(struct pod_slot *slot) {
        pthread_mutex_init(&slot->lock, NULL);
        slot->latest = NULL;
}

void pod_slot_destroy(struct pod_slot *slot) {
        pod_map_unref(slot->latest);
        slot->latest = NULL;
        pthread_mutex_destroy(&slot->lock);
}

void pod_slot_publish(struct pod_slot *slot, struct pod_map *m) {
        pthread_mutex_lock(&slot->lock);
        struct pod_map *old = slot->latest;
        slot->latest = m;
        pthread_mutex_unlock(&slot->lock);
        pod_map_unref(old);
}

struct pod_map *pod_slot_get(struct pod_slot *slot) {
        if (!slot)
                return NULL;
        pthread_mutex_lock(&slot->lock);
        struct pod_map *m = pod_map_ref(slot->latest);
        pthread_mutex_unlock(&slot->lock);
        return m;
}
