#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/fakes/fake-cursor.h"

void fake_cursor_init(struct fake_cursor *f) {
        *f = (struct fake_cursor){ .generation = 1 };
        pthread_mutex_init(&f->lock, NULL);
}

void fake_cursor_done(struct fake_cursor *f) {
        free(f->series);
        free(f->samples);
        pthread_mutex_destroy(&f->lock);
}

int64_t fake_cursor_add_series(struct fake_cursor *f, const char *name, const char *label, const char *value,
                               const char *label2, const char *value2) {
        pthread_mutex_lock(&f->lock);
        f->series = realloc(f->series, (f->n_series + 1) * sizeof(*f->series));
        struct cursor_series *s = &f->series[f->n_series];
        *s = (struct cursor_series){ .id = (int64_t) f->n_series + 1 };
        snprintf(s->name, sizeof(s->name), "%s", name);
        if (label) {
                snprintf(s->labels[0].name, sizeof(s->labels[0].name), "%s", label);
                snprintf(s->labels[0].value, sizeof(s->labels[0].value), "%s", value);
                s->n_labels = 1;
        }
        if (label2) {
                snprintf(s->labels[1].name, sizeof(s->labels[1].name), "%s", label2);
                snprintf(s->labels[1].value, sizeof(s->labels[1].value), "%s", value2);
                s->n_labels = 2;
        }
        int64_t id = s->id;
        f->n_series++;
        pthread_mutex_unlock(&f->lock);
        return id;
}

void fake_cursor_add(struct fake_cursor *f, int64_t ts, int64_t series, double value) {
        pthread_mutex_lock(&f->lock);
        if (f->n_samples == f->cap) {
                f->cap = f->cap ? 2 * f->cap : 64;
                f->samples = realloc(f->samples, f->cap * sizeof(*f->samples));
        }
        f->samples[f->n_samples++] = (struct cursor_sample){ ts, series, value };
        pthread_mutex_unlock(&f->lock);
}

struct cursor_position fake_cursor_saved(struct fake_cursor *f, const char *name) {
        struct cursor_position pos = { -1, -1 };
        pthread_mutex_lock(&f->lock);
        for (size_t i = 0; i < f->n_positions; i++)
                if (strcmp(f->positions[i].name, name) == 0)
                        pos = f->positions[i].pos;
        pthread_mutex_unlock(&f->lock);
        return pos;
}

/* The index of the first sample after pos; the caller holds the lock. */
static size_t first_after(const struct fake_cursor *f, const struct cursor_position *after) {
        size_t i = 0;
        while (i < f->n_samples) {
                struct cursor_position p = { f->samples[i].timestamp_ms, f->samples[i].series };
                if (cursor_position_compare(&p, after) > 0)
                        break;
                i++;
        }
        return i;
}

static int fake_read(void *impl, const struct cursor_position *after, size_t max, struct cursor_page *ret) {
        struct fake_cursor *f = impl;
        pthread_mutex_lock(&f->lock);
        f->reads++;
        size_t i = first_after(f, after), n = f->n_samples - i;
        struct cursor_page page = { .more = n > max };
        page.n = n > max ? max : n;
        page.samples = malloc((page.n ? page.n : 1) * sizeof(*page.samples));
        memcpy(page.samples, f->samples + i, page.n * sizeof(*page.samples));
        pthread_mutex_unlock(&f->lock);
        *ret = page;
        return 0;
}

static int fake_list_series(void *impl, int64_t min_id, struct cursor_series **ret, size_t *ret_n) {
        struct fake_cursor *f = impl;
        pthread_mutex_lock(&f->lock);
        size_t first = min_id > 1 ? (size_t) (min_id - 1) : 0;
        size_t n = first < f->n_series ? f->n_series - first : 0;
        struct cursor_series *list = malloc((n ? n : 1) * sizeof(*list));
        memcpy(list, f->series + first, n * sizeof(*list));
        pthread_mutex_unlock(&f->lock);
        *ret = list;
        *ret_n = n;
        return 0;
}

static int fake_count_after(void *impl, const struct cursor_position *after, uint64_t *ret) {
        struct fake_cursor *f = impl;
        pthread_mutex_lock(&f->lock);
        *ret = f->n_samples - first_after(f, after);
        pthread_mutex_unlock(&f->lock);
        return 0;
}

static int64_t fake_newest(void *impl) {
        struct fake_cursor *f = impl;
        pthread_mutex_lock(&f->lock);
        int64_t ts = f->n_samples ? f->samples[f->n_samples - 1].timestamp_ms : 0;
        pthread_mutex_unlock(&f->lock);
        return ts;
}

static uint64_t fake_generation(void *impl) {
        struct fake_cursor *f = impl;
        pthread_mutex_lock(&f->lock);
        uint64_t g = f->generation;
        pthread_mutex_unlock(&f->lock);
        return g;
}

static int fake_load(void *impl, const char *name, struct cursor_position *ret) {
        struct cursor_position pos = fake_cursor_saved(impl, name);
        if (pos.timestamp_ms < 0)
                return -ENOENT;
        *ret = pos;
        return 0;
}

static int fake_save(void *impl, const char *name, const struct cursor_position *pos) {
        struct fake_cursor *f = impl;
        pthread_mutex_lock(&f->lock);
        f->saves++;
        size_t i = 0;
        while (i < f->n_positions && strcmp(f->positions[i].name, name) != 0)
                i++;
        if (i == f->n_positions && i < FAKE_CURSOR_POSITIONS) {
                snprintf(f->positions[i].name, sizeof(f->positions[i].name), "%s", name);
                f->n_positions++;
        }
        if (i < FAKE_CURSOR_POSITIONS)
                f->positions[i].pos = *pos;
        pthread_mutex_unlock(&f->lock);
        return i < FAKE_CURSOR_POSITIONS ? 0 : -ENOSPC;
}

const struct cursor_ops fake_cursor_ops = {
        .read = fake_read,
        .list_series = fake_list_series,
        .count_after = fake_count_after,
        .newest = fake_newest,
        .generation = fake_generation,
        .load = fake_load,
        .save = fake_save,
};
