#include "config.h"

#include <stdlib.h>
#include <string.h>

#include "lib/snapshot.h"

struct series_set *series_set_new(uint64_t generation, const struct series_desc *series, size_t n,
                                  const struct inventory *backend) {
        static const struct inventory none = { 0 };
        if (!backend)
                backend = &none;
        struct series_set *s = calloc(1, sizeof(*s));
        if (!s)
                return NULL;
        s->series = malloc((n ? n : 1) * sizeof(*s->series));
        if (!s->series || runtime_info_copy(backend->runtimes, backend->n_runtimes, &s->runtimes) < 0) {
                free(s->series);
                free(s);
                return NULL;
        }
        s->n_runtimes = backend->n_runtimes;
        if (inventory_copy_hardware(&s->backend, backend) < 0) {
                runtime_info_free(s->runtimes, s->n_runtimes);
                free(s->series);
                free(s);
                return NULL;
        }
        memcpy(s->series, series, n * sizeof(*s->series));
        s->n = n;
        s->generation = generation;
        atomic_init(&s->refs, 1);
        return s;
}

struct series_set *series_set_ref(struct series_set *s) {
        if (s)
                atomic_fetch_add(&s->refs, 1);
        return s;
}

void series_set_unref(struct series_set *s) {
        if (!s || atomic_fetch_sub(&s->refs, 1) != 1)
                return;
        runtime_info_free(s->runtimes, s->n_runtimes);
        inventory_free(&s->backend);
        free(s->series);
        free(s);
}

struct snapshot *snapshot_new(size_t n) {
        /* One allocation: header, values, then validity flags. */
        struct snapshot *s = calloc(1, sizeof(*s) + n * (sizeof(double) + 1));
        if (!s)
                return NULL;
        s->n = n;
        s->values = (double *) (s + 1);
        s->valid = (uint8_t *) (s->values + n);
        atomic_init(&s->refs, 1);
        return s;
}

struct snapshot *snapshot_ref(struct snapshot *s) {
        if (s)
                atomic_fetch_add(&s->refs, 1);
        return s;
}

void snapshot_unref(struct snapshot *s) {
        if (s && atomic_fetch_sub(&s->refs, 1) == 1) {
                series_set_unref(s->set);
                health_result_unref(s->health);
                free(s);
        }
}

void snapshot_slot_init(struct snapshot_slot *slot) {
        pthread_mutex_init(&slot->lock, NULL);
        slot->latest = NULL;
}

void snapshot_slot_destroy(struct snapshot_slot *slot) {
        snapshot_unref(slot->latest);
        slot->latest = NULL;
        pthread_mutex_destroy(&slot->lock);
}

void snapshot_slot_publish(struct snapshot_slot *slot, struct snapshot *s) {
        pthread_mutex_lock(&slot->lock);
        struct snapshot *old = slot->latest;
        slot->latest = s;
        pthread_mutex_unlock(&slot->lock);
        snapshot_unref(old);
}

struct snapshot *snapshot_slot_get(struct snapshot_slot *slot) {
        pthread_mutex_lock(&slot->lock);
        struct snapshot *s = slot->latest;
        if (s)
                atomic_fetch_add(&s->refs, 1);
        pthread_mutex_unlock(&slot->lock);
        return s;
}
