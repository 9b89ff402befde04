#include "config.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>

#include "storage/chunk.h"
#include "storage/rollup.h"

void rollup_cell_add(struct rollup_cell *c, double v) {
        if (isnan(v))
                return;
        if (c->count == 0) {
                *c = (struct rollup_cell){ .min = v, .max = v, .sum = v, .last = v, .count = 1 };
                return;
        }
        c->min = fmin(c->min, v);
        c->max = fmax(c->max, v);
        c->sum += v;
        c->last = v;
        c->count++;
}

double rollup_cell_value(const struct rollup_cell *c, enum history_agg agg) {
        switch (agg) {
        case HISTORY_AGG_MIN:
                return c->min;
        case HISTORY_AGG_MAX:
                return c->max;
        case HISTORY_AGG_LAST:
                return c->last;
        case HISTORY_AGG_SUM:
                return c->sum;
        case HISTORY_AGG_AVG:
        default:
                return c->sum / (double) c->count;
        }
}

unsigned rollup_columns(enum history_agg agg, bool rate) {
        if (rate)
                return 1u << ROLLUP_LAST | 1u << ROLLUP_MIN | 1u << ROLLUP_COUNT;
        switch (agg) {
        case HISTORY_AGG_MIN:
                return 1u << ROLLUP_MIN | 1u << ROLLUP_COUNT;
        case HISTORY_AGG_MAX:
                return 1u << ROLLUP_MAX | 1u << ROLLUP_COUNT;
        case HISTORY_AGG_LAST:
                return 1u << ROLLUP_LAST | 1u << ROLLUP_COUNT;
        case HISTORY_AGG_SUM:
        case HISTORY_AGG_AVG:
        default:
                return 1u << ROLLUP_SUM | 1u << ROLLUP_COUNT;
        }
}

int rollup_encode(const int64_t *ts, const struct rollup_cell *cells, size_t n, uint8_t **ret_data, size_t *ret_size) {
        double *columns = malloc(n * ROLLUP__COLUMNS * sizeof(*columns));
        if (!columns)
                return -ENOMEM;
        for (size_t i = 0; i < n; i++) {
                columns[ROLLUP_MIN * n + i] = cells[i].min;
                columns[ROLLUP_MAX * n + i] = cells[i].max;
                columns[ROLLUP_SUM * n + i] = cells[i].sum;
                columns[ROLLUP_COUNT * n + i] = (double) cells[i].count;
                columns[ROLLUP_LAST * n + i] = cells[i].last;
        }
        const double *const in[ROLLUP__COLUMNS] = { columns, columns + n, columns + 2 * n, columns + 3 * n,
                                                    columns + 4 * n };
        int r = chunk_encode(ts, in, ROLLUP__COLUMNS, n, ret_data, ret_size);
        free(columns);
        return r;
}
