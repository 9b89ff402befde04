/* Aggregation cells: the min, max, sum, count and last of a set of samples,
 * the shape of a rollup row and of a query bucket. NaN samples are left out
 * (SQLite stores NaN as NULL); infinities are kept. Pure functions. */
#pragma once

#include <stdint.h>

#include "storage/store.h"

struct rollup_cell {
        double min, max, sum, last;
        int64_t count; /* 0: the cell is empty and the other fields are unset */
};

/* Adds one sample, newer than every sample already in the cell. */
void rollup_cell_add(struct rollup_cell *c, double v);

/* Merges c into into; c's samples are newer than into's. */
void rollup_cell_merge(struct rollup_cell *into, const struct rollup_cell *c);

/* The cell's value under agg; the cell must not be empty. */
double rollup_cell_value(const struct rollup_cell *c, enum history_agg agg);
