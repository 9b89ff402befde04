/* The stored samples in the order they were stored, for whoever forwards
 * them to another system (remote write): pages of samples after a
 * position in that order, the names and labels of the stored series, and
 * named positions the store keeps durable. Behind an ops table, like
 * lib/history.h, so that the forwarding side needs no storage code
 * (storage/store.h implements it as store_cursor_ops; tests may fake it).
 *
 * The order: by timestamp, then by series id. A tick's samples are
 * consecutive, the oldest tick first, so "after this position" is a
 * watermark: every sample before it has been handed out. A tick is
 * stored whole, so a page never ends inside a tick unless it is full.
 *
 * Threading: every operation may be called from any number of threads at
 * once. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define CURSOR_NAME_MAX 64         /* a named position's name, with its NUL */
#define CURSOR_LABELS_MAX 8        /* labels of one stored series, beside its name */
#define CURSOR_LABEL_NAME_MAX 64   /* a label name, with its NUL */
#define CURSOR_LABEL_VALUE_MAX 128 /* a label value or a family name, with its NUL */

/* A place in the order: the last sample handed out. {0, 0} is before every
 * sample. */
struct cursor_position {
        int64_t timestamp_ms;
        int64_t series; /* the store's series id */
};

/* < 0, 0 or > 0 as a is before, at or after b. */
int cursor_position_compare(const struct cursor_position *a, const struct cursor_position *b);

struct cursor_sample {
        int64_t timestamp_ms;
        int64_t series;
        double value;
};

struct cursor_page {
        size_t n;
        struct cursor_sample *samples; /* in the order above; the page owns them */
        bool more;                     /* samples after the last one were stored when the page was read */
};

/* Frees the samples and empties the page; NULL-safe. */
void cursor_page_free(struct cursor_page *p);

struct cursor_label {
        char name[CURSOR_LABEL_NAME_MAX];
        char value[CURSOR_LABEL_VALUE_MAX];
};

/* A stored series as the store names it: series of earlier runs, whose
 * families or labels the running daemon may no longer have, included. */
struct cursor_series {
        int64_t id;
        char name[CURSOR_LABEL_VALUE_MAX]; /* the family's exposition name */
        size_t n_labels;
        struct cursor_label labels[CURSOR_LABELS_MAX]; /* no empty value; in no particular order */
};

struct cursor_ops {
        /* Up to max (> 0) samples after *after, in order, into *ret.
         * Samples that retention or the size cap removed are gone: after a
         * position older than the oldest stored sample, the page starts at
         * that sample. An empty page when none follow. Returns 0, -EAGAIN
         * when no database is open yet, or another negative errno. */
        int (*read)(void *impl, const struct cursor_position *after, size_t max, struct cursor_page *ret);
        /* Every stored series whose id is at least min_id, by ascending id;
         * *ret is free()d by the caller. */
        int (*list_series)(void *impl, int64_t min_id, struct cursor_series **ret, size_t *ret_n);
        /* How many samples are stored after *after. It may read much of
         * the database: call it seldom. */
        int (*count_after)(void *impl, const struct cursor_position *after, uint64_t *ret);
        /* The timestamp of the newest stored sample, 0 when there is none. */
        int64_t (*newest)(void *impl);
        /* Changes whenever the store starts a new database file (a damaged
         * one set aside): series ids and saved positions read before then
         * no longer hold. */
        uint64_t (*generation)(void *impl);
        /* The position last saved under name; -ENOENT when there is none. */
        int (*load)(void *impl, const char *name, struct cursor_position *ret);
        /* Saves a position under name (at most CURSOR_NAME_MAX - 1 bytes).
         * It is durable once the store commits its next tick, or closes. */
        int (*save)(void *impl, const char *name, const struct cursor_position *pos);
};

struct cursor_source {
        const struct cursor_ops *ops;
        void *impl;
};
