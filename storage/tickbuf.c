#include "config.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "storage/precision.h"
#include "storage/tickbuf.h"

int tickbuf_init(struct tickbuf *b, const struct series_desc *series, size_t n, size_t cap, size_t touch) {
        size_t rows = n ? n : 1;
        struct tickbuf t = {
                .n_series = n,
                .n_stored = n,
                .series = calloc(rows, sizeof(*t.series)),
                .ids = calloc(rows, sizeof(*t.ids)),
                .by_id = calloc(rows, sizeof(*t.by_id)),
                .is_gauge = calloc(rows, 1),
                .cap_ticks = cap,
                .ts = calloc(cap, sizeof(*t.ts)),
                .values = malloc(cap * rows * sizeof(*t.values)),
                .valid = malloc(cap * rows),
        };

        if (!t.series || !t.ids || !t.by_id || !t.is_gauge || !t.ts || !t.values || !t.valid) {
                tickbuf_free(&t);
                return -ENOMEM;
        }
        if (n > 0)
                memcpy(t.series, series, n * sizeof(*t.series));
        for (size_t i = 0; i < n; i++) {
                t.by_id[i] = (uint32_t) i;
                t.is_gauge[i] = metric_table[series[i].metric].type == METRIC_GAUGE;
        }
        memset(t.values, 0, touch * rows * sizeof(*t.values));
        memset(t.valid, 0, touch * rows);
        *b = t;
        return 0;
}

void tickbuf_free(struct tickbuf *b) {
        if (!b)
                return;
        free(b->series);
        free(b->ids);
        free(b->by_id);
        free(b->sources);
        free(b->n_sources);
        free(b->is_gauge);
        free(b->ts);
        free(b->values);
        free(b->valid);
        *b = (struct tickbuf){ 0 };
}

int tickbuf_push(struct tickbuf *b, int64_t ts, const double *values, const uint8_t *valid) {
        size_t n = b->n_series;
        int dropped = 0;

        if (b->n_ticks == b->cap_ticks) {
                tickbuf_drop_front(b, 1);
                dropped = 1;
        }
        b->ts[b->n_ticks] = ts;
        for (size_t i = 0; i < n; i++)
                b->values[b->n_ticks * n + i] = b->is_gauge[i] ? precision_round_gauge(values[i]) : values[i];
        memcpy(b->valid + b->n_ticks * n, valid, n);
        b->n_ticks++;
        return dropped;
}

void tickbuf_drop_front(struct tickbuf *b, size_t n) {
        size_t keep = b->n_ticks - n, row = b->n_series;
        memmove(b->ts, b->ts + n, keep * sizeof(*b->ts));
        memmove(b->values, b->values + n * row, keep * row * sizeof(*b->values));
        memmove(b->valid, b->valid + n * row, keep * row);
        b->n_ticks = keep;
        b->n_durable = b->n_durable > n ? b->n_durable - n : 0;
}

size_t tickbuf_gather(const struct tickbuf *b, size_t i, size_t from, size_t to, int64_t lo, int64_t hi, int64_t *ts,
                      double *v) {
        size_t k = 0;
        for (size_t t = from; t < to; t++) {
                size_t at = t * b->n_series + i;
                if (b->valid[at] && b->ts[t] >= lo && b->ts[t] < hi) {
                        ts[k] = b->ts[t];
                        v[k++] = b->values[at];
                }
        }
        return k;
}
