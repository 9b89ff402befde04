/* libFuzzer target for the chunk decoders: the input is a stored chunk's
 * bytes, fed to each of the three formats, which the store tells apart by
 * byte 0 (storage/chunk.h, storage/derive.h, schema 2's storage/chunk-v2.h).
 * Beyond not crashing, for each:
 *   - a sample count is refused or below CHUNK_SAMPLES_MAX: the store sizes
 *     its arrays from it before it decodes;
 *   - decoding reads nothing past the input and writes nothing past the
 *     count's samples (every buffer has exactly its size, for ASan);
 *   - it gives the count or -EBADMSG, and the same samples read in part
 *     (up to a timestamp, some of the columns);
 *   - what decodes encodes again and decodes to the same bits: samples of
 *     ordinary and derived chunks always (decoding refuses timestamps the
 *     encoder does not take), schema 2's where their timestamps are
 *     strictly increasing and span less than 2^53 ms (the migration sorts
 *     the others). */
#include "config.h"

#include <errno.h>
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "storage/chunk-v2.h"
#include "storage/chunk.h"
#include "storage/derive.h"

/* A few bytes rightly hold 2^24 samples (steady timestamps, a constant):
 * counts above this are checked but not decoded, so that the fuzzer
 * spends its time on the bytes, not on filling arrays. */
#define DECODE_MAX (1 << 16)

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Decoded samples: n timestamps, columns of n values. */
struct samples {
        size_t n, n_columns;
        int64_t *ts;
        double *col[CHUNK_COLUMNS_MAX];
};

static void samples_alloc(struct samples *s, size_t n, size_t n_columns) {
        *s = (struct samples){ .n = n, .n_columns = n_columns, .ts = malloc(n * sizeof(int64_t)) };
        if (!s->ts)
                abort();
        for (size_t c = 0; c < n_columns; c++)
                if (!(s->col[c] = malloc(n * sizeof(double))))
                        abort();
}

static void samples_free(struct samples *s) {
        free(s->ts);
        for (size_t c = 0; c < s->n_columns; c++)
                free(s->col[c]);
}

static bool encodable(const int64_t *ts, size_t n) {
        for (size_t i = 1; i < n; i++)
                if (ts[i] <= ts[i - 1])
                        return false;
        return (uint64_t) ts[n - 1] - (uint64_t) ts[0] < (UINT64_C(1) << 53);
}

static bool same_bits(const void *a, const void *b, size_t n, size_t elem) {
        return n == 0 || memcmp(a, b, n * elem) == 0;
}

/* The decode of data up to `until`, of the columns in mask (the others
 * NULL: not to be touched), against the whole decode s: the samples at
 * most until, no more, the same bits. */
static void check_part(const uint8_t *data, size_t size, const struct samples *s, int64_t until, unsigned mask) {
        struct samples p;
        double *cols[CHUNK_COLUMNS_MAX] = { NULL };
        samples_alloc(&p, s->n, s->n_columns);
        for (size_t c = 0; c < s->n_columns; c++)
                if (mask & (1u << c))
                        cols[c] = p.col[c];
        int m = chunk_decode(data, size, until, p.ts, cols, mask);
        if (m < 0 || (size_t) m > s->n)
                abort();
        for (size_t i = 0; i < s->n; i++)
                if ((i < (size_t) m) != (s->ts[i] <= until))
                        abort();
        if (!same_bits(p.ts, s->ts, (size_t) m, sizeof(int64_t)))
                abort();
        for (size_t c = 0; c < s->n_columns; c++)
                if ((mask & (1u << c)) && !same_bits(p.col[c], s->col[c], (size_t) m, sizeof(double)))
                        abort();
        samples_free(&p);
}

/* s encoded again decodes to the same bits. */
static void check_reencode(const struct samples *s) {
        uint8_t *data = NULL;
        size_t size = 0, n_columns = 0;
        struct samples t;
        int r = chunk_encode(s->ts, (const double *const *) s->col, s->n_columns, s->n, &data, &size);
        if (r == -ENOMEM)
                return;
        if (r != 0 || chunk_count(data, size, &n_columns) != (int) s->n || n_columns != s->n_columns)
                abort();
        samples_alloc(&t, s->n, s->n_columns);
        if (chunk_decode(data, size, INT64_MAX, t.ts, t.col, (1u << s->n_columns) - 1) != (int) s->n ||
            !same_bits(t.ts, s->ts, s->n, sizeof(int64_t)))
                abort();
        for (size_t c = 0; c < s->n_columns; c++)
                if (!same_bits(t.col[c], s->col[c], s->n, sizeof(double)))
                        abort();
        samples_free(&t);
        free(data);
}

static void check_chunk(const uint8_t *data, size_t size) {
        size_t n_columns = 0;
        struct samples s;
        int n = chunk_count(data, size, &n_columns);
        if (n < 0) {
                if (n != -EBADMSG)
                        abort();
                return;
        }
        if (n == 0 || n >= (int) CHUNK_SAMPLES_MAX || n_columns == 0 || n_columns > CHUNK_COLUMNS_MAX)
                abort();
        if (n > DECODE_MAX)
                return;
        samples_alloc(&s, (size_t) n, n_columns);
        int r = chunk_decode(data, size, INT64_MAX, s.ts, s.col, (1u << n_columns) - 1);
        if (r != n && r != -EBADMSG)
                abort();
        if (r == n) {
                /* Up to the middle sample, and before the first; each column alone. */
                check_part(data, size, &s, s.ts[n / 2], (1u << n_columns) - 1);
                if (s.ts[0] > INT64_MIN)
                        check_part(data, size, &s, s.ts[0] - 1, 1);
                for (size_t c = 0; c < n_columns; c++)
                        check_part(data, size, &s, INT64_MAX, 1u << c);
                check_reencode(&s);
        }
        samples_free(&s);
}

/* Derived chunks decode against their sources' samples: here sources with
 * samples at the chunk's own timestamps, but for a few, so that both the
 * predictions and their absence are decoded, and values of any kind, as a
 * damaged source chunk may give. */
static const double source_values[] = { 0.25, 0.5, 1, 0, 0.1, 0.9, 0.75, 1e300, -1, NAN, INFINITY };
#define SOURCE_VALUES (sizeof(source_values) / sizeof(source_values[0]))

static void check_derived(const uint8_t *data, size_t size) {
        struct derive_header h;
        struct derive_source sources[DERIVE_SOURCES_MAX];
        struct samples s, src[DERIVE_SOURCES_MAX];
        int r = derive_header_read(data, size, &h);
        if (r < 0) {
                if (r != -EBADMSG)
                        abort();
                return;
        }
        if (!derive_is(data, size) || h.n_sources == 0 || h.n_sources > DERIVE_SOURCES_MAX || h.inner >= size)
                abort();
        int n = derive_count(&h, data, size);
        if (n < 0 || n > DECODE_MAX) {
                if (n >= (int) CHUNK_SAMPLES_MAX || (n < 0 && n != -EBADMSG))
                        abort();
                return;
        }
        samples_alloc(&s, (size_t) n, 1);
        bool inner = chunk_decode(data + h.inner, size - h.inner, INT64_MAX, s.ts, (double *const[]){ NULL }, 0) == n;
        for (size_t j = 0; j < h.n_sources; j++) {
                samples_alloc(&src[j], (size_t) n, 1);
                size_t k = 0;
                for (size_t i = 0; inner && i < (size_t) n; i++)
                        if ((i + j) % 5 != 4) {
                                src[j].ts[k] = s.ts[i];
                                src[j].col[0][k++] = source_values[(i * 7 + j * 3) % SOURCE_VALUES];
                        }
                sources[j] = (struct derive_source){ src[j].ts, src[j].col[0], k };
        }
        struct samples got;
        samples_alloc(&got, (size_t) n, 1);
        r = derive_decode(&h, data, size, sources, got.ts, got.col[0]);
        if ((r != n && r != -EBADMSG) || (r == n && !inner))
                abort();
        if (r == n && !same_bits(got.ts, s.ts, s.n, sizeof(int64_t)))
                abort();
        if (r == n) {
                uint8_t *again = NULL;
                size_t again_size = 0;
                struct derive_header h2;
                struct samples back;
                r = derive_encode(h.rule, h.sources, sources, h.n_sources, got.ts, got.col[0], got.n, &again,
                                  &again_size);
                /* A mean or a copy codes any bits; a counter may not be
                 * whole microseconds. */
                if (r == -ENOMEM || (r == -EDOM && h.rule == DERIVE_INTEGRAL))
                        goto done;
                if (r != 0 || derive_header_read(again, again_size, &h2) != 0 || h2.rule != h.rule ||
                    h2.n_sources != h.n_sources || memcmp(h2.sources, h.sources, h.n_sources * sizeof(int64_t)) != 0 ||
                    derive_count(&h2, again, again_size) != n)
                        abort();
                samples_alloc(&back, (size_t) n, 1);
                if (derive_decode(&h2, again, again_size, sources, back.ts, back.col[0]) != n ||
                    !same_bits(back.ts, got.ts, got.n, sizeof(int64_t)) ||
                    !same_bits(back.col[0], got.col[0], got.n, sizeof(double)))
                        abort();
                samples_free(&back);
                free(again);
        }
done:
        samples_free(&got);
        for (size_t j = 0; j < h.n_sources; j++)
                samples_free(&src[j]);
        samples_free(&s);
}

/* Schema 2's chunks are only read, to migrate them into chunks of today's
 * format: what decodes must survive that. */
static void check_v2(const uint8_t *data, size_t size) {
        struct samples s;
        int n = chunk_v2_count(data, size);
        if (n < 0) {
                if (n != -EBADMSG)
                        abort();
                return;
        }
        if (n == 0 || n >= (int) CHUNK_SAMPLES_MAX)
                abort();
        if (n > DECODE_MAX)
                return;
        samples_alloc(&s, (size_t) n, 1);
        int r = chunk_v2_decode(data, size, s.ts, s.col[0]);
        if (r != n && r != -EBADMSG)
                abort();
        if (r == n && encodable(s.ts, s.n))
                check_reencode(&s);
        samples_free(&s);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        /* The formats do not overlap: byte 0 picks one at most. */
        if ((chunk_count(data, size, NULL) >= 0) + derive_is(data, size) + (chunk_v2_count(data, size) >= 0) > 1)
                abort();
        check_chunk(data, size);
        check_derived(data, size);
        check_v2(data, size);
        return 0;
}
