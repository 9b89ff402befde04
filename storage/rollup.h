/* Aggregation cells: the min, max, sum, count and last of a set of samples,
 * the shape of a rollup and of a query bucket. NaN samples are left out;
 * infinities are kept. Rollups of an hour are stored as one chunk
 * (storage/chunk.h) with a column per field. Pure functions. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "storage/store.h"

struct rollup_cell {
        double min, max, sum, last;
        int64_t count; /* 0: the cell is empty and the other fields are unset */
};

/* The columns of a rollup chunk. */
enum rollup_column { ROLLUP_MIN, ROLLUP_MAX, ROLLUP_SUM, ROLLUP_COUNT, ROLLUP_LAST, ROLLUP__COLUMNS };

/* Adds one sample, newer than every sample already in the cell. */
void rollup_cell_add(struct rollup_cell *c, double v);

/* Merges c into into; c's samples are newer than into's. Inline, and
 * with comparisons for fmin() and fmax() (cells hold no NaN): a query over
 * every core of a week merges tens of millions of cells. */
static inline void rollup_cell_merge(struct rollup_cell *into, const struct rollup_cell *c) {
        if (c->count == 0)
                return;
        if (into->count == 0) {
                *into = *c;
                return;
        }
        into->min = c->min < into->min ? c->min : into->min;
        into->max = c->max > into->max ? c->max : into->max;
        into->sum += c->sum;
        into->last = c->last;
        into->count += c->count;
}

/* The cell's value under agg; the cell must not be empty. */
double rollup_cell_value(const struct rollup_cell *c, enum history_agg agg);

/* The columns (a mask of 1 << enum rollup_column) that agg needs, and with
 * rate those that a rate from rollups needs (last, and min for resets). */
unsigned rollup_columns(enum history_agg agg, bool rate);

/* Encodes n non-empty cells, starting at ts[] (ascending), as a chunk. */
int rollup_encode(const int64_t *ts, const struct rollup_cell *cells, size_t n, uint8_t **ret_data, size_t *ret_size);
