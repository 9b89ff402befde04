/* The store's tick buffer: the registered series and the ticks not yet in
 * chunks, in memory, oldest first. A tick's row holds one value and one
 * validity flag per series. Internal to storage/.
 *
 * Not thread safe: the store uses it from the tick loop's thread only. */
#pragma once

#include <stddef.h>
#include <stdint.h>

#include "lib/inventory.h"
#include "storage/derive.h"

struct tickbuf {
        /* The series store_register_series() was given (kept for a
         * database opened late), their database ids (set by whoever
         * enters them), their order sorted by id (the order of entries in
         * a recent row) and whether each is a gauge. */
        size_t n_series;
        struct series_desc *series;
        int64_t *ids;
        /* The series stored, n_stored of them, by ascending id: each id
         * once (store_write_series() leaves out a series listed twice and
         * one refused at the series limit). */
        size_t n_stored;
        uint32_t *by_id;
        uint8_t *is_gauge;
        /* For a series of a derived family (lib/metric.h), the ids of its
         * sources among these, ascending (store_link_sources()). */
        int64_t (*sources)[DERIVE_SOURCES_MAX];
        uint8_t *n_sources;

        /* Ticks: ts[t], and values/valid[t * n_series + i]. The first
         * n_durable are in the database's recent table. */
        size_t n_ticks, cap_ticks, n_durable;
        int64_t *ts;
        double *values;
        uint8_t *valid;
};

/* Sets up an empty buffer for n series (copied) and cap ticks. The first
 * touch (<= cap) rows are written now, so that their memory is resident from the
 * start. Returns 0 or -ENOMEM (then b holds nothing to free). */
int tickbuf_init(struct tickbuf *b, const struct series_desc *series, size_t n, size_t cap, size_t touch);

/* Frees what tickbuf_init() allocated and empties b; NULL-safe. */
void tickbuf_free(struct tickbuf *b);

/* Appends a tick of n_series values, gauges as storage/precision.h keeps
 * them. When the buffer is full the oldest tick is
 * dropped first: returns 1 then, else 0. */
int tickbuf_push(struct tickbuf *b, int64_t ts, const double *values, const uint8_t *valid);

/* Drops the n oldest ticks (n <= n_ticks). */
void tickbuf_drop_front(struct tickbuf *b, size_t n);

/* Copies series i's valid samples of ticks [from, to) whose timestamps
 * are in [lo, hi) to ts and v (room for to - from); returns how many. */
size_t tickbuf_gather(const struct tickbuf *b, size_t i, size_t from, size_t to, int64_t lo, int64_t hi, int64_t *ts,
                      double *v);
