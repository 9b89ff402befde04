#include "config.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "storage/bits.h"
#include "storage/chunk.h"
#include "storage/derive.h"
#include "storage/precision.h"

/* Ordinary chunks start with 0x40-0x4f, schema 2's below 0x20. */
#define DERIVE_FORMAT 0x50
/* Residuals are whole numbers held exactly in a double. */
#define RESIDUAL_MAX 9007199254740992.0 /* 2^53 */

/* The sources' samples at each timestamp of the chunk, in order: one
 * cursor per source that only moves forward. */
struct predictor {
        const struct derive_source *sources;
        size_t n_sources;
        size_t at[DERIVE_SOURCES_MAX];
};

static bool source_at(struct predictor *p, size_t j, int64_t ts, double *ret) {
        const struct derive_source *s = &p->sources[j];
        while (p->at[j] < s->n && s->ts[p->at[j]] < ts)
                p->at[j]++;
        if (p->at[j] == s->n || s->ts[p->at[j]] != ts)
                return false;
        *ret = s->v[p->at[j]];
        return true;
}

/* The mean's bits as the model and the collectors sum it (each source
 * divided first), rounded to the bits a stored gauge keeps (a gauge kept
 * as a short decimal just leaves a residual); 0 without every source. */
static uint64_t predict_mean(struct predictor *p, int64_t ts) {
        double sum = 0;
        for (size_t j = 0; j < p->n_sources; j++) {
                double v;
                if (!source_at(p, j, ts, &v))
                        return 0;
                sum += v / (double) p->n_sources;
        }
        return double_bits(precision_round_bits(sum));
}

/* The source's bits; 0 where it has no sample. */
static uint64_t predict_equal(struct predictor *p, int64_t ts) {
        double v;
        return source_at(p, 0, ts, &v) ? double_bits(v) : 0;
}

/* What the counter adds from prev_ts to ts, in microseconds. */
static int64_t predict_increase(struct predictor *p, int64_t ts, int64_t prev_ts) {
        double v;
        return source_at(p, 0, ts, &v) ? (int64_t) metric_busy_us(v, ts - prev_ts) : 0;
}

static bool rule_valid(unsigned rule, size_t n_sources) {
        if (n_sources == 0 || n_sources > DERIVE_SOURCES_MAX)
                return false;
        return rule == DERIVE_MEAN || ((rule == DERIVE_INTEGRAL || rule == DERIVE_EQUAL) && n_sources == 1);
}

bool derive_is(const uint8_t *data, size_t size) {
        return size > 0 && data[0] == DERIVE_FORMAT;
}

static bool read_varint(const uint8_t *data, size_t size, size_t *pos, uint64_t *ret) {
        uint64_t v = 0;
        for (unsigned shift = 0; shift < 64 && *pos < size; shift += 7) {
                uint8_t b = data[(*pos)++];
                v |= (uint64_t) (b & 0x7f) << shift;
                if (!(b & 0x80)) {
                        *ret = v;
                        return true;
                }
        }
        return false;
}

static size_t write_varint(uint8_t *out, uint64_t v) {
        size_t n = 0;
        do {
                out[n++] = (uint8_t) ((v & 0x7f) | (v > 0x7f ? 0x80 : 0));
                v >>= 7;
        } while (v);
        return n;
}

int derive_header_read(const uint8_t *data, size_t size, struct derive_header *h) {
        size_t pos = 2;
        uint64_t n = 0;
        if (size < 3 || data[0] != DERIVE_FORMAT || !read_varint(data, size, &pos, &n) || !rule_valid(data[1], n))
                return -EBADMSG;
        h->rule = (enum metric_derive) data[1];
        h->n_sources = (size_t) n;
        for (size_t j = 0; j < h->n_sources; j++) {
                uint64_t id = 0;
                if (!read_varint(data, size, &pos, &id) || id > INT64_MAX)
                        return -EBADMSG;
                h->sources[j] = (int64_t) id;
        }
        if (pos >= size)
                return -EBADMSG;
        h->inner = pos;
        return 0;
}

int derive_count(const struct derive_header *h, const uint8_t *data, size_t size) {
        return chunk_count(data + h->inner, size - h->inner, NULL);
}

int derive_decode(const struct derive_header *h, const uint8_t *data, size_t size, const struct derive_source *sources,
                  int64_t *ts, double *v) {
        struct predictor p = { .sources = sources, .n_sources = h->n_sources };
        int n = chunk_decode(data + h->inner, size - h->inner, INT64_MAX, ts, (double *const[]){ v }, 1);
        /* Wrapping arithmetic: a damaged chunk must not be undefined. */
        uint64_t counter = 0;
        for (int i = 0; i < n; i++) {
                if (!(fabs(v[i]) < RESIDUAL_MAX) || v[i] != floor(v[i]))
                        return -EBADMSG;
                uint64_t residual = (uint64_t) (int64_t) v[i];
                if (h->rule != DERIVE_INTEGRAL) {
                        uint64_t predicted =
                                h->rule == DERIVE_MEAN ? predict_mean(&p, ts[i]) : predict_equal(&p, ts[i]);
                        v[i] = bits_double(predicted + residual);
                        continue;
                }
                if (i == 0)
                        counter = residual;
                else
                        counter += (uint64_t) predict_increase(&p, ts[i], ts[i - 1]) + residual;
                v[i] = (double) (int64_t) counter / 1e6;
        }
        return n;
}

/* The residuals of v as derive_decode() reads them, or -EDOM. */
static int residuals(enum metric_derive rule, const struct derive_source *sources, size_t n_sources, const int64_t *ts,
                     const double *v, size_t n, double *res) {
        struct predictor p = { .sources = sources, .n_sources = n_sources };
        int64_t prev = 0;
        for (size_t i = 0; i < n; i++) {
                int64_t r;
                if (rule != DERIVE_INTEGRAL) {
                        uint64_t predicted = rule == DERIVE_MEAN ? predict_mean(&p, ts[i]) : predict_equal(&p, ts[i]);
                        r = (int64_t) (double_bits(v[i]) - predicted);
                } else {
                        /* A counter of whole microseconds, as metric_busy_us() adds them. */
                        double us = v[i] * 1e6;
                        if (!(us >= 0 && us < RESIDUAL_MAX))
                                return -EDOM;
                        int64_t counter = llround(us);
                        double back = (double) counter / 1e6;
                        if (memcmp(&back, &v[i], sizeof(back)) != 0)
                                return -EDOM;
                        uint64_t increase = i > 0 ? (uint64_t) predict_increase(&p, ts[i], ts[i - 1]) : 0;
                        r = i == 0 ? counter : (int64_t) ((uint64_t) counter - (uint64_t) prev - increase);
                        prev = counter;
                }
                if (!((double) r > -RESIDUAL_MAX && (double) r < RESIDUAL_MAX))
                        return -EDOM;
                res[i] = (double) r;
        }
        return 0;
}

/* Whether the chunk decodes to exactly ts[] and v[]. */
static bool decodes_to(const uint8_t *data, size_t size, const struct derive_source *sources, const int64_t *ts,
                       const double *v, size_t n) {
        struct derive_header h;
        int64_t *got_ts = malloc(n * sizeof(*got_ts));
        double *got_v = malloc(n * sizeof(*got_v));
        bool same = got_ts && got_v && derive_header_read(data, size, &h) == 0 &&
                    derive_count(&h, data, size) == (int) n &&
                    derive_decode(&h, data, size, sources, got_ts, got_v) == (int) n &&
                    memcmp(got_ts, ts, n * sizeof(*ts)) == 0 && memcmp(got_v, v, n * sizeof(*v)) == 0;
        free(got_ts);
        free(got_v);
        return same;
}

int derive_encode(enum metric_derive rule, const int64_t *source_ids, const struct derive_source *sources,
                  size_t n_sources, const int64_t *ts, const double *v, size_t n, uint8_t **ret_data,
                  size_t *ret_size) {
        if (n == 0 || !rule_valid(rule, n_sources))
                return -EINVAL;
        double *res = malloc(n * sizeof(*res));
        if (!res)
                return -ENOMEM;
        uint8_t *inner = NULL, *data = NULL;
        size_t inner_size = 0, size = 0;
        int r = residuals(rule, sources, n_sources, ts, v, n, res);
        if (r == 0)
                r = chunk_encode(ts, (const double *const[]){ res }, 1, n, &inner, &inner_size);
        free(res);
        if (r == 0) {
                data = malloc(2 + 10 * (1 + n_sources) + inner_size);
                r = data ? 0 : -ENOMEM;
        }
        if (r == 0) {
                data[size++] = DERIVE_FORMAT;
                data[size++] = (uint8_t) rule;
                size += write_varint(data + size, n_sources);
                for (size_t j = 0; j < n_sources; j++)
                        size += write_varint(data + size, (uint64_t) source_ids[j]);
                memcpy(data + size, inner, inner_size);
                size += inner_size;
                /* NaN payloads and the like: whatever the arithmetic does,
                 * only a chunk that gives back every bit is kept. */
                if (!decodes_to(data, size, sources, ts, v, n))
                        r = -EDOM;
        }
        free(inner);
        if (r < 0) {
                free(data);
                return r;
        }
        *ret_data = data;
        *ret_size = size;
        return 0;
}
