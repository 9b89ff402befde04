/* An in-memory store behind lib/cursor.h's ops, for the remote write
 * tests: series and samples the test adds, named positions, and a
 * generation the test can bump. Guarded by a mutex: the writer threads
 * read it while the test adds ticks. */
#pragma once

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

#include "lib/cursor.h"

#define FAKE_CURSOR_POSITIONS 8

struct fake_cursor {
        pthread_mutex_t lock;
        struct cursor_series *series;
        size_t n_series;
        struct cursor_sample *samples; /* in cursor order */
        size_t n_samples, cap;
        struct {
                char name[CURSOR_NAME_MAX];
                struct cursor_position pos;
        } positions[FAKE_CURSOR_POSITIONS];
        size_t n_positions;
        uint64_t generation;
        unsigned reads, saves; /* calls so far */
};

extern const struct cursor_ops fake_cursor_ops;

void fake_cursor_init(struct fake_cursor *f);
void fake_cursor_done(struct fake_cursor *f);

/* Adds a series named name with up to two labels (NULL: fewer); returns its id (from 1). */
int64_t fake_cursor_add_series(struct fake_cursor *f, const char *name, const char *label, const char *value,
                               const char *label2, const char *value2);

/* Adds one sample; timestamps must not go back, ids ascend within one. */
void fake_cursor_add(struct fake_cursor *f, int64_t ts, int64_t series, double value);

/* The position saved under name, or {-1, -1} when none was. */
struct cursor_position fake_cursor_saved(struct fake_cursor *f, const char *name);
