#include "config.h"

#include <stdlib.h>

#include "lib/snapshot.h"

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

void snapshot_unref(struct snapshot *s) {
        if (s && atomic_fetch_sub(&s->refs, 1) == 1)
                free(s);
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
