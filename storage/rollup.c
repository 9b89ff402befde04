#include "config.h"

#include <math.h>

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

void rollup_cell_merge(struct rollup_cell *into, const struct rollup_cell *c) {
        if (c->count == 0)
                return;
        if (into->count == 0) {
                *into = *c;
                return;
        }
        into->min = fmin(into->min, c->min);
        into->max = fmax(into->max, c->max);
        into->sum += c->sum;
        into->last = c->last;
        into->count += c->count;
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
