#include "config.h"

#include <errno.h>
#include <math.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "storage/bits.h"
#include "storage/chunk.h"

/* Layout (docs/storage.md): byte 0 is CHUNK_FORMAT | the number of
 * columns; a varint sample count; then the timestamp stream and one stream
 * per column, each a varint byte length and a body. A body starts with its
 * kind:
 *   STREAM_CONST  8 bytes, the value's bits (little endian)
 *   STREAM_INT    scale, zigzag varint base, varint step, order | varlen
 *                 flag << 2, width, varint count of nonzero residuals, bits
 *   STREAM_XOR    bits
 *   STREAM_SPLIT  mantissa width, bits
 *   STREAM_SAME   the index of an earlier column with the same bits (a
 *                 counter's maximum and last value in a rollup chunk)
 *   STREAM_BANDS  the smallest value's bits (8 bytes), the low bits zero
 *                 in every difference from it, shift, a varint count of
 *                 bands, each band as a varint (its distance from the
 *                 previous one) and its code length, bits
 * Bits are written most significant first. Varints are LEB128. Schema 2's
 * chunks began with a mode byte below 0x20, so the two never mix. */
#define CHUNK_FORMAT 0x40
#define CHUNK_FORMAT_MASK 0xf0

enum stream_kind { STREAM_CONST, STREAM_INT, STREAM_XOR, STREAM_SPLIT, STREAM_SAME, STREAM_BANDS };

/* Integer residuals: the integers themselves (around the middle of their
 * range), their differences, or differences of differences. */
enum order { ORDER_VALUE, ORDER_DELTA, ORDER_DOD, ORDER__COUNT };

/* An integer stream's scale byte: 0 whole numbers, 1-9 decimal places
 * (value = x / 10^s), SCALE_BINARY + e binary places (value = x * 2^-e). */
#define SCALE_BINARY 15
#define SCALE_BINARY_MAX 240 /* SCALE_BINARY + 240 = 255 */
#define INT_BITS_MAX 56      /* widest residual: values and steps stay below 2^53 */

static const double powers_of_ten[10] = { 1, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9 };

/* ---- bytes and bits ----------------------------------------------------- */

struct out {
        uint8_t *data;
        size_t len, cap;
        uint64_t acc; /* bits not yet in data: the low `pending` ones */
        unsigned pending;
        bool failed;
};

static void out_byte(struct out *o, uint8_t b) {
        if (o->len == o->cap) {
                size_t cap = o->cap ? 2 * o->cap : 256;
                uint8_t *grown = realloc(o->data, cap);
                if (!grown) {
                        o->failed = true;
                        return;
                }
                o->data = grown;
                o->cap = cap;
        }
        o->data[o->len++] = b;
}

static void out_bytes(struct out *o, const uint8_t *p, size_t n) {
        for (size_t i = 0; i < n && !o->failed; i++)
                out_byte(o, p[i]);
}

static void out_varint(struct out *o, uint64_t v) {
        do {
                out_byte(o, (uint8_t) ((v & 0x7f) | (v > 0x7f ? 0x80 : 0)));
                v >>= 7;
        } while (v);
}

static void out_bits(struct out *o, uint64_t v, unsigned n) {
        if (n > 32) {
                out_bits(o, v >> 32, n - 32);
                n = 32;
        }
        if (n == 0)
                return;
        o->acc = o->acc << n | (v & ((UINT64_C(1) << n) - 1));
        o->pending += n;
        while (o->pending >= 8) {
                o->pending -= 8;
                out_byte(o, (uint8_t) (o->acc >> o->pending));
        }
}

/* Pads the bits to a whole byte. */
static void out_flush(struct out *o) {
        if (o->pending > 0)
                out_bits(o, 0, 8 - o->pending);
}

struct in {
        const uint8_t *data;
        size_t size; /* bytes */
        size_t pos;  /* bits */
        bool bad;
};

static bool in_varint(struct in *r, uint64_t *ret) {
        uint64_t v = 0;
        for (unsigned shift = 0; shift < 64; shift += 7) {
                if (r->pos / 8 >= r->size) {
                        r->bad = true;
                        return false;
                }
                uint8_t b = r->data[r->pos / 8];
                r->pos += 8;
                v |= (uint64_t) (b & 0x7f) << shift;
                if (!(b & 0x80)) {
                        *ret = v;
                        return true;
                }
        }
        r->bad = true;
        return false;
}

static uint8_t in_byte(struct in *r) {
        if (r->pos / 8 >= r->size) {
                r->bad = true;
                return 0;
        }
        uint8_t b = r->data[r->pos / 8];
        r->pos += 8;
        return b;
}

/* The next 64 bits (57 of them valid), zeros past the end. */
static inline uint64_t in_peek(const struct in *r) {
        size_t byte = r->pos / 8;
        uint64_t w = 0;
        if (byte + 8 <= r->size) {
                const uint8_t *p = r->data + byte;
                w = (uint64_t) p[0] << 56 | (uint64_t) p[1] << 48 | (uint64_t) p[2] << 40 | (uint64_t) p[3] << 32 |
                    (uint64_t) p[4] << 24 | (uint64_t) p[5] << 16 | (uint64_t) p[6] << 8 | (uint64_t) p[7];
        } else {
                for (size_t i = 0; byte + i < r->size && i < 8; i++)
                        w |= (uint64_t) r->data[byte + i] << (56 - 8 * i);
        }
        return w << (r->pos % 8);
}

static inline uint64_t in_bits(struct in *r, unsigned n) {
        if (n > 32) {
                uint64_t hi = in_bits(r, n - 32);
                return hi << 32 | in_bits(r, 32);
        }
        if (n == 0)
                return 0;
        uint64_t v = in_peek(r) >> (64 - n);
        r->pos += n;
        if (r->pos > r->size * 8)
                r->bad = true;
        return v;
}

static uint64_t zigzag(int64_t v) {
        return ((uint64_t) v << 1) ^ (uint64_t) (v >> 63);
}

static int64_t unzigzag(uint64_t v) {
        return (int64_t) (v >> 1) ^ -(int64_t) (v & 1);
}

static unsigned bit_length(uint64_t v) {
        return v ? 64 - (unsigned) __builtin_clzll(v) : 0;
}

/* Elias gamma of x >= 1: as many zeros as x has bits after its first, then x. */
static unsigned gamma_bits(uint64_t x) {
        return 2 * bit_length(x) - 1;
}

static void out_gamma(struct out *o, uint64_t x) {
        out_bits(o, x, gamma_bits(x));
}

static uint64_t in_gamma(struct in *r) {
        uint64_t w = in_peek(r);
        unsigned zeros = w ? (unsigned) __builtin_clzll(w) : 64;
        if (zeros > 27) { /* runs are shorter than CHUNK_SAMPLES_MAX */
                r->bad = true;
                return 1;
        }
        return in_bits(r, 2 * zeros + 1);
}

/* ---- integer streams ---------------------------------------------------- */

/* How an integer stream is coded: x[i] = base + step * k[i], and the
 * residuals of k in the order chosen (differences of differences start
 * from `seed`, the first difference, so that a steady rate costs nothing).
 * With runs, a residual of 0 costs nothing but a share of its run's
 * length, and any other is Elias gamma of the run of zeros before it plus
 * one, then q = zigzag(r) - 1; dense, every residual is q = zigzag(r).
 * q takes `width` bits, or when q >= 2^width - 1 the escape (width one
 * bits), six bits of length and q in that many bits: a reset or a burst
 * does not widen every other residual. */
struct int_plan {
        uint8_t scale;
        int64_t base, step, seed;
        enum order order;
        bool runs;
        unsigned width;
        uint64_t nonzero;
        uint64_t bits; /* the payload's size */
};

static int64_t gcd(uint64_t a, uint64_t b) {
        while (b) {
                uint64_t t = a % b;
                a = b;
                b = t;
        }
        return (int64_t) a;
}

/* Residual statistics of one order and mode: how many q need each number
 * of bits (of q + 1, so that q < 2^w - 1 exactly when that is at most w). */
struct residual_stats {
        bool ok;
        uint64_t nonzero, gammas, run;
        uint64_t by_bits[INT_BITS_MAX + 2];
};

static void stats_add(struct residual_stats *st, uint64_t q) {
        if (q >= (UINT64_C(1) << (INT_BITS_MAX + 1)) - 1)
                st->ok = false;
        else
                st->by_bits[bit_length(q + 1)]++;
}

/* The cheapest width for these residuals, and its cost in bits: w bits
 * for every q, plus 6 + b more for each of the b-bit ones that escape
 * (b > w), summed from the widest down. Ties go to the narrower width. */
static unsigned stats_width(const struct residual_stats *st, uint64_t *ret_bits) {
        uint64_t count = 0, escapes = 0;
        for (unsigned b = 0; b <= INT_BITS_MAX + 1; b++)
                count += st->by_bits[b];
        unsigned best = 0;
        uint64_t best_bits = UINT64_MAX;
        for (unsigned w = INT_BITS_MAX + 1; w-- > 0;) {
                escapes += st->by_bits[w + 1] * (6 + w + 1);
                uint64_t bits = st->gammas + count * w + escapes;
                if (bits <= best_bits) {
                        best_bits = bits;
                        best = w;
                }
        }
        *ret_bits = best_bits;
        return best;
}

/* The residual of order o at k, given the previous k and difference. */
static bool residual(enum order o, int64_t k, int64_t mid, int64_t prev_k, int64_t prev_d, int64_t *ret_d,
                     int64_t *ret_r) {
        int64_t d = 0;
        if (o == ORDER_VALUE) {
                *ret_r = k - mid;
                return true;
        }
        if (__builtin_sub_overflow(k, prev_k, &d))
                return false;
        *ret_d = d;
        if (o == ORDER_DELTA) {
                *ret_r = d;
                return true;
        }
        return !__builtin_sub_overflow(d, prev_d, ret_r);
}

/* Chooses the cheapest order, mode and width for x[0..n), with k as
 * scratch for n integers. False when no order keeps every residual within
 * INT_BITS_MAX bits. */
static bool int_plan_make(const int64_t *x, size_t n, uint8_t scale, int64_t *k, struct int_plan *ret) {
        uint64_t g = 0;
        int64_t lo = 0, hi = 0;
        for (size_t i = 0; i < n; i++) {
                if (__builtin_sub_overflow(x[i], x[0], &k[i]))
                        return false;
                /* Once the step is 1 it stays 1: no division to pay for. */
                if (g != 1)
                        g = (uint64_t) gcd(k[i] < 0 ? -(uint64_t) k[i] : (uint64_t) k[i], g);
        }
        if (g > 1)
                for (size_t i = 0; i < n; i++)
                        k[i] /= (int64_t) g;
        if (g == 0)
                g = 1;
        for (size_t i = 1; i < n; i++) {
                lo = k[i] < lo ? k[i] : lo;
                hi = k[i] > hi ? k[i] : hi;
        }
        int64_t mid = lo + (hi - lo) / 2;
        int64_t seed = n > 1 ? k[1] : 0;

        /* [order * 2 + 0] dense, [order * 2 + 1] with runs of zeros */
        struct residual_stats st[ORDER__COUNT * 2];
        memset(st, 0, sizeof(st));
        for (int o = 0; o < ORDER__COUNT; o++) {
                int64_t prev_k = o == ORDER_DOD ? -seed : 0, prev_d = o == ORDER_DOD ? seed : 0;
                struct residual_stats *dense = &st[2 * o], *runs = &st[2 * o + 1];
                dense->ok = runs->ok = true;
                for (size_t i = 0; i < n && dense->ok; i++) {
                        int64_t r = 0;
                        if (!residual((enum order) o, k[i], mid, prev_k, prev_d, &prev_d, &r)) {
                                dense->ok = false;
                                break;
                        }
                        prev_k = k[i];
                        stats_add(dense, zigzag(r));
                        if (r == 0) {
                                runs->run++;
                                continue;
                        }
                        runs->nonzero++;
                        runs->gammas += gamma_bits(runs->run + 1);
                        runs->run = 0;
                        stats_add(runs, zigzag(r) - 1);
                }
                runs->ok &= dense->ok;
        }
        bool found = false;
        for (int i = 0; i < ORDER__COUNT * 2; i++) {
                uint64_t bits = 0;
                if (!st[i].ok)
                        continue;
                unsigned width = stats_width(&st[i], &bits);
                if (found && bits >= ret->bits)
                        continue;
                enum order o = (enum order)(i / 2);
                *ret = (struct int_plan){
                        .scale = scale,
                        .base = o == ORDER_VALUE ? x[0] + mid * (int64_t) g : x[0],
                        .step = (int64_t) g,
                        .seed = o == ORDER_DOD ? seed : 0,
                        .order = o,
                        .runs = i % 2,
                        .width = width,
                        .nonzero = i % 2 ? st[i].nonzero : 0,
                        .bits = bits,
                };
                found = true;
        }
        return found;
}

static void out_q(struct out *o, uint64_t q, unsigned width) {
        uint64_t escape = (UINT64_C(1) << width) - 1;
        if (q < escape) {
                out_bits(o, q, width);
                return;
        }
        out_bits(o, escape, width);
        out_bits(o, bit_length(q), 6);
        out_bits(o, q, bit_length(q));
}

static uint64_t in_q(struct in *r, unsigned width) {
        uint64_t escape = (UINT64_C(1) << width) - 1, q = in_bits(r, width);
        return q < escape ? q : in_bits(r, (unsigned) in_bits(r, 6));
}

/* The body of an integer stream; the residuals are computed again as
 * int_plan_make() did. */
static void int_write(struct out *o, const int64_t *x, size_t n, const struct int_plan *p) {
        int64_t prev_k = -p->seed, prev_d = p->seed;
        uint64_t run = 0;

        out_byte(o, STREAM_INT);
        out_byte(o, p->scale);
        out_varint(o, zigzag(p->base));
        out_varint(o, (uint64_t) p->step);
        out_byte(o, (uint8_t) (p->order | (p->runs ? 4 : 0)));
        out_byte(o, (uint8_t) p->width);
        out_varint(o, zigzag(p->seed));
        out_varint(o, p->nonzero);
        for (size_t i = 0; i < n; i++) {
                int64_t k = (x[i] - p->base) / p->step, r = 0;
                residual(p->order, k, 0, prev_k, prev_d, &prev_d, &r);
                prev_k = k;
                if (!p->runs) {
                        out_q(o, zigzag(r), p->width);
                } else if (r == 0) {
                        run++;
                } else {
                        out_gamma(o, run + 1);
                        out_q(o, zigzag(r) - 1, p->width);
                        run = 0;
                }
        }
        out_flush(o);
}

struct int_header {
        uint8_t scale;
        int64_t base, step, seed;
        enum order order;
        bool runs;
        unsigned width;
        uint64_t nonzero;
};

static bool int_header_read(struct in *r, struct int_header *h) {
        uint64_t base = 0, step = 0, seed = 0, nonzero = 0;
        h->scale = in_byte(r);
        in_varint(r, &base);
        in_varint(r, &step);
        uint8_t flags = in_byte(r);
        h->width = in_byte(r);
        in_varint(r, &seed);
        in_varint(r, &nonzero);
        h->base = unzigzag(base);
        h->step = (int64_t) step;
        h->seed = unzigzag(seed);
        h->order = (enum order)(flags & 3);
        h->runs = flags & 4;
        h->nonzero = nonzero;
        return !r->bad && (flags & ~7) == 0 && h->order < ORDER__COUNT && h->width <= INT_BITS_MAX &&
               (h->scale <= 9 || h->scale > SCALE_BINARY);
}

/* Decodes the first m of an integer stream's n values into xs (as
 * integers) or vs (scaled); malformed input sets r->bad. */
static void int_read(struct in *r, size_t n, size_t m, int64_t *xs, double *vs) {
        struct int_header h;
        if (!int_header_read(r, &h) || h.nonzero > n) {
                r->bad = true;
                return;
        }
        double factor = h.scale <= 9 ? powers_of_ten[h.scale] : ldexp(1, SCALE_BINARY - h.scale);
        bool divide = h.scale <= 9;
        /* Wrapping arithmetic: malformed input must not be undefined. */
        uint64_t k = -(uint64_t) h.seed, d = (uint64_t) h.seed, zeros = 0, tokens = 0;
        bool pending = false;
        for (size_t i = 0; i < m && !r->bad; i++) {
                uint64_t res = 0;
                if (!h.runs) {
                        res = (uint64_t) unzigzag(in_q(r, h.width));
                } else {
                        if (zeros == 0 && !pending && tokens < h.nonzero) {
                                /* A token: the zeros before a residual, then the residual. */
                                zeros = in_gamma(r) - 1;
                                if (zeros > n - i - 1) {
                                        r->bad = true;
                                        return;
                                }
                                tokens++;
                                pending = true;
                        }
                        if (zeros > 0) {
                                zeros--;
                        } else if (pending) {
                                res = (uint64_t) unzigzag(in_q(r, h.width) + 1);
                                pending = false;
                        }
                }
                if (h.order == ORDER_VALUE) {
                        k = res;
                } else if (h.order == ORDER_DELTA) {
                        k += res;
                } else {
                        d += res;
                        k += d;
                }
                int64_t x = (int64_t) ((uint64_t) h.base + (uint64_t) h.step * k);
                if (xs)
                        xs[i] = x;
                else
                        vs[i] = divide ? (double) x / factor : (double) x * factor;
        }
        if (m == n && (tokens != h.nonzero || pending))
                r->bad = true;
}

/* ---- value scales ------------------------------------------------------- */

#define EXACT_MAX 9007199254740992.0 /* 2^53 */

/* Whether every value is x / 10^places with x a whole number below 2^53
 * (places 0: a whole number; -0.0 is not), writing x. */
static bool scale_decimal(const double *v, size_t n, unsigned places, int64_t *x) {
        double f = powers_of_ten[places];
        for (size_t i = 0; i < n; i++) {
                double s = v[i] * f;
                if (!(s > -EXACT_MAX && s < EXACT_MAX) || (v[i] == 0 && signbit(v[i])))
                        return false;
                x[i] = llround(s);
                double back = (double) x[i] / f;
                if (memcmp(&back, &v[i], sizeof(back)) != 0)
                        return false;
        }
        return true;
}

/* Whole numbers beyond 2^53 (counters of bytes) are exact too, up to 2^62. */
static bool scale_whole(const double *v, size_t n, int64_t *x) {
        for (size_t i = 0; i < n; i++) {
                if (!(v[i] > -4611686018427387904.0 && v[i] < 4611686018427387904.0) || v[i] != floor(v[i]) ||
                    (v[i] == 0 && signbit(v[i])))
                        return false;
                x[i] = (int64_t) v[i];
        }
        return true;
}

/* Whether every value is x * 2^-places with one places for all, x below
 * 2^53: binary fractions such as floats. Returns places (1-240) or 0. */
static unsigned scale_binary(const double *v, size_t n, int64_t *x) {
        int places = 0, top = INT32_MIN;
        for (size_t i = 0; i < n; i++) {
                if (!isfinite(v[i]) || (v[i] == 0 && signbit(v[i])))
                        return 0;
                if (v[i] == 0)
                        continue;
                int e;
                double m = frexp(fabs(v[i]), &e); /* v = m * 2^e, 0.5 <= m < 1 */
                uint64_t bits = (uint64_t) ldexp(m, 53);
                int need = 53 - e - __builtin_ctzll(bits); /* places after the binary point */
                places = need > places ? need : places;
                top = e > top ? e : top;
        }
        if (places <= 0 || places > SCALE_BINARY_MAX || (top != INT32_MIN && top + places > 53))
                return 0;
        for (size_t i = 0; i < n; i++)
                x[i] = (int64_t) ldexp(v[i], places);
        return (unsigned) places;
}

/* ---- float streams ------------------------------------------------------ */

/* Gorilla's XOR: '0' same value; '10' meaningful bits fit the previous
 * window; '11', 5 bits of leading zeros, 6 bits of length (0 meaning 64),
 * then the bits. With out NULL it only counts bits. */
static uint64_t xor_write(struct out *o, const double *v, size_t n) {
        uint64_t prev = 0, bits = 0;
        unsigned lead = 0, trail = 0;
        for (size_t i = 0; i < n; i++) {
                uint64_t cur = double_bits(v[i]), x = cur ^ prev;
                prev = cur;
                if (x == 0) {
                        bits += 1;
                        if (o)
                                out_bits(o, 0, 1);
                        continue;
                }
                unsigned l = (unsigned) __builtin_clzll(x), t = (unsigned) __builtin_ctzll(x);
                if (l > 31)
                        l = 31;
                if (lead + trail > 0 && l >= lead && t >= trail) {
                        bits += 2 + 64 - lead - trail;
                        if (o) {
                                out_bits(o, 2, 2);
                                out_bits(o, x >> trail, 64 - lead - trail);
                        }
                        continue;
                }
                unsigned len = 64 - l - t;
                bits += 13 + len;
                if (o) {
                        out_bits(o, 3, 2);
                        out_bits(o, l, 5);
                        out_bits(o, len & 63, 6);
                        out_bits(o, x >> t, len);
                }
                lead = l;
                trail = t;
        }
        if (o)
                out_flush(o);
        return bits;
}

static void xor_read(struct in *r, size_t m, double *v) {
        uint64_t prev = 0;
        unsigned lead = 0, trail = 0;
        for (size_t i = 0; i < m && !r->bad; i++) {
                if (in_bits(r, 1)) {
                        if (in_bits(r, 1)) {
                                lead = (unsigned) in_bits(r, 5);
                                unsigned len = (unsigned) in_bits(r, 6);
                                if (len == 0)
                                        len = 64;
                                if (lead + len > 64) {
                                        r->bad = true;
                                        return;
                                }
                                trail = 64 - lead - len;
                        }
                        prev ^= in_bits(r, 64 - lead - trail) << trail;
                }
                v[i] = bits_double(prev);
        }
}

/* Split: sign and exponent as '0' (unchanged), '10' + 3 bits (a change of
 * -4 to +3) or '11' + 12 bits, then the top `width` mantissa bits, the rest
 * being zero in every value (floats keep 23). */
static unsigned split_width(const double *v, size_t n) {
        unsigned width = 0;
        for (size_t i = 0; i < n; i++) {
                uint64_t mantissa = double_bits(v[i]) & ((UINT64_C(1) << 52) - 1);
                unsigned w = mantissa ? 52 - (unsigned) __builtin_ctzll(mantissa) : 0;
                width = w > width ? w : width;
        }
        return width;
}

static uint64_t split_write(struct out *o, const double *v, size_t n, unsigned width) {
        uint64_t prev_hi = 0x3ff, bits = 0; /* the exponent of 1.0 */
        for (size_t i = 0; i < n; i++) {
                uint64_t u = double_bits(v[i]), hi = u >> 52;
                int64_t change = (int64_t) hi - (int64_t) prev_hi;
                unsigned code = change == 0 ? 1 : change >= -4 && change <= 3 ? 5 : 14;
                bits += code + width;
                if (o) {
                        out_bits(o, change == 0 ? 0 : code == 5 ? 0x10 | (uint64_t) (change + 4) : 0x3000 | hi, code);
                        out_bits(o, (u & ((UINT64_C(1) << 52) - 1)) >> (52 - width), width);
                }
                prev_hi = hi;
        }
        if (o)
                out_flush(o);
        return bits;
}

static void split_read(struct in *r, size_t m, unsigned width, double *v) {
        uint64_t hi = 0x3ff;
        for (size_t i = 0; i < m && !r->bad; i++) {
                if (in_bits(r, 1))
                        hi = in_bits(r, 1) ? in_bits(r, 12) : (hi + in_bits(r, 3) - 4) & 0xfff;
                v[i] = bits_double(hi << 52 | in_bits(r, width) << (52 - width));
        }
}

/* ---- bands -------------------------------------------------------------- */

/* Each value's bits as an integer above the smallest one's, less the low
 * `zeros` bits that are zero in every one of them (a float's 29), d: its
 * band d >> shift in a canonical prefix code (Huffman's, from the chunk's
 * own counts), then the low `shift` bits of d as they are. Values that
 * gather in a few bands with random low bits (a core busy in steps, at
 * 0.9 or at 0.1) cost about their entropy, where a fixed width pays for
 * the whole range and each change of exponent. */
#define BANDS_MAX 256
#define CODE_BITS_MAX 15
#define TABLE_BITS 10
/* Shorter streams (a minute's head chunk, an hour of minute rollups)
 * seldom repay the table, and trying costs the tick loop more than it
 * saves: they are not tried. */
#define BANDS_SAMPLES_MIN 512

struct bands {
        uint64_t lo;
        unsigned zeros, shift, n;
        uint64_t band[BANDS_MAX]; /* ascending */
        uint8_t len[BANDS_MAX];
        uint32_t code[BANDS_MAX];
};

/* Huffman's code lengths for n >= 2 counts, at most CODE_BITS_MAX: the
 * leaves in order of count, merged with the inner nodes (which come out
 * in order of weight) as two queues; counts are halved until the deepest
 * leaf fits. */
static void code_lengths(const uint64_t *count, unsigned n, uint8_t *len) {
        unsigned order[BANDS_MAX], parent[2 * BANDS_MAX], depth[2 * BANDS_MAX];
        uint64_t weight[2 * BANDS_MAX], scaled[BANDS_MAX];
        for (unsigned i = 0; i < n; i++)
                scaled[i] = count[i];
        for (;;) {
                for (unsigned i = 0; i < n; i++) {
                        unsigned j = i;
                        for (; j > 0 && scaled[order[j - 1]] > scaled[i]; j--)
                                order[j] = order[j - 1];
                        order[j] = i;
                }
                for (unsigned i = 0; i < n; i++)
                        weight[i] = scaled[order[i]];
                unsigned leaf = 0, inner = n, next = n;
                while (next < 2 * n - 1) {
                        unsigned pick[2];
                        for (int p = 0; p < 2; p++)
                                pick[p] =
                                        leaf < n && (inner == next || weight[leaf] <= weight[inner]) ? leaf++ : inner++;
                        weight[next] = weight[pick[0]] + weight[pick[1]];
                        parent[pick[0]] = parent[pick[1]] = next++;
                }
                unsigned deepest = 0;
                depth[2 * n - 2] = 0;
                for (unsigned i = 2 * n - 2; i-- > 0;) {
                        depth[i] = depth[parent[i]] + 1;
                        deepest = depth[i] > deepest ? depth[i] : deepest;
                }
                if (deepest <= CODE_BITS_MAX) {
                        for (unsigned i = 0; i < n; i++)
                                len[order[i]] = (uint8_t) depth[i];
                        return;
                }
                for (unsigned i = 0; i < n; i++)
                        scaled[i] = scaled[i] / 2 + 1;
        }
}

/* The canonical code of each band (DEFLATE's): shorter codes first, bands
 * of one length in ascending order. False when the lengths do not make a
 * prefix code. */
static bool assign_codes(struct bands *b) {
        unsigned count[CODE_BITS_MAX + 1] = { 0 };
        uint32_t next[CODE_BITS_MAX + 1] = { 0 }, code = 0;
        for (unsigned i = 0; i < b->n; i++)
                count[b->len[i]]++;
        if (b->n == 1)
                return b->len[0] == 0;
        if (count[0] > 0)
                return false;
        for (unsigned l = 1; l <= CODE_BITS_MAX; l++) {
                code = (code + count[l - 1]) << 1;
                next[l] = code;
                if (next[l] + count[l] > (UINT32_C(1) << l))
                        return false;
        }
        for (unsigned i = 0; i < b->n; i++)
                b->code[i] = next[b->len[i]]++;
        return true;
}

static unsigned varint_bytes(uint64_t v) {
        unsigned n = 1;
        while (v >>= 7)
                n++;
        return n;
}

/* The cheapest shift that leaves at most BANDS_MAX bands by range, and
 * its cost in bits (UINT64_MAX when the values span no range). */
static uint64_t bands_plan(const double *v, size_t n, struct bands *b) {
        uint64_t lo = UINT64_MAX, hi = 0, any = 0, best_bits = UINT64_MAX;
        for (size_t i = 0; i < n; i++) {
                uint64_t u = double_bits(v[i]);
                lo = u < lo ? u : lo;
                hi = u > hi ? u : hi;
        }
        for (size_t i = 0; i < n; i++)
                any |= double_bits(v[i]) - lo;
        if (any == 0)
                return UINT64_MAX;
        unsigned zeros = (unsigned) __builtin_ctzll(any), range = bit_length((hi - lo) >> zeros);
        for (unsigned shift = range > 8 ? range - 8 : 0; shift < range; shift++) {
                uint64_t count[BANDS_MAX] = { 0 }, used[BANDS_MAX];
                struct bands try = { .lo = lo, .zeros = zeros, .shift = shift };
                for (size_t i = 0; i < n; i++)
                        count[(double_bits(v[i]) - lo) >> zeros >> shift]++;
                for (unsigned h = 0; h < BANDS_MAX; h++)
                        if (count[h] > 0) {
                                try.band[try.n] = h;
                                used[try.n++] = count[h];
                        }
                if (try.n > 1)
                        code_lengths(used, try.n, try.len);
                uint64_t bits = 8 * (11 + varint_bytes(try.n)) + (uint64_t) n * shift;
                for (unsigned j = 0; j < try.n; j++)
                        bits += used[j] * try.len[j] +
                                8 * (1 + varint_bytes(try.band[j] - (j > 0 ? try.band[j - 1] : 0)));
                if (bits < best_bits) {
                        best_bits = bits;
                        *b = try;
                }
        }
        return best_bits;
}

static void bands_write(struct out *o, const double *v, size_t n, struct bands *b) {
        if (!assign_codes(b)) {
                o->failed = true;
                return;
        }
        out_byte(o, STREAM_BANDS);
        for (int i = 0; i < 8; i++)
                out_byte(o, (uint8_t) (b->lo >> (8 * i)));
        out_byte(o, (uint8_t) b->zeros);
        out_byte(o, (uint8_t) b->shift);
        out_varint(o, b->n);
        for (unsigned j = 0; j < b->n; j++) {
                out_varint(o, b->band[j] - (j > 0 ? b->band[j - 1] : 0));
                out_byte(o, b->len[j]);
        }
        for (size_t i = 0; i < n; i++) {
                uint64_t d = (double_bits(v[i]) - b->lo) >> b->zeros;
                unsigned lo_band = 0, hi_band = b->n;
                while (hi_band - lo_band > 1) { /* the band: bands are ascending */
                        unsigned mid = (lo_band + hi_band) / 2;
                        if (b->band[mid] <= d >> b->shift)
                                lo_band = mid;
                        else
                                hi_band = mid;
                }
                out_bits(o, b->code[lo_band], b->len[lo_band]);
                out_bits(o, d, b->shift);
        }
        out_flush(o);
}

static void bands_read(struct in *r, size_t m, double *v) {
        struct bands b = { 0 };
        uint64_t n = 0, band = 0;
        for (int i = 0; i < 8; i++)
                b.lo |= (uint64_t) in_byte(r) << (8 * i);
        b.zeros = in_byte(r);
        b.shift = in_byte(r);
        if (!in_varint(r, &n) || n == 0 || n > BANDS_MAX || b.zeros > 63 || b.shift > 63) {
                r->bad = true;
                return;
        }
        b.n = (unsigned) n;
        for (unsigned j = 0; j < b.n && !r->bad; j++) {
                uint64_t step = 0;
                in_varint(r, &step);
                band += step;
                b.band[j] = band;
                b.len[j] = in_byte(r);
                if (b.len[j] > CODE_BITS_MAX || (j > 0 && step == 0))
                        r->bad = true;
        }
        if (r->bad || !assign_codes(&b)) {
                r->bad = true;
                return;
        }
        /* Codes of up to TABLE_BITS bits by one look-up of that many bits
         * (the band << 4 | the code's length; 0 for a longer code); longer
         * ones by length: the codes of one length are consecutive from
         * first[l], given to the bands of that length in order, which
         * by_code lists from at[l]. */
        uint16_t table[1 << TABLE_BITS] = { 0 };
        uint32_t first[CODE_BITS_MAX + 1] = { 0 }, count[CODE_BITS_MAX + 1] = { 0 }, code = 0;
        unsigned at[CODE_BITS_MAX + 1] = { 0 }, fill[CODE_BITS_MAX + 1], by_code[BANDS_MAX];
        for (unsigned j = 0; j < b.n; j++)
                count[b.len[j]]++;
        for (unsigned l = 1, k = 0; l <= CODE_BITS_MAX; l++) {
                code = (code + count[l - 1]) << 1;
                first[l] = code;
                at[l] = fill[l] = k;
                k += count[l];
        }
        for (unsigned j = 0; j < b.n; j++) {
                unsigned l = b.len[j];
                if (l == 0)
                        continue;
                uint32_t c = first[l] + (fill[l] - at[l]);
                by_code[fill[l]++] = j;
                if (l > TABLE_BITS)
                        continue;
                for (uint32_t e = c << (TABLE_BITS - l); e < (c + 1) << (TABLE_BITS - l); e++)
                        table[e] = (uint16_t) (j << 4 | l);
        }
        for (size_t i = 0; i < m && !r->bad; i++) {
                uint64_t w = in_peek(r), low = 0;
                unsigned j = 0, l = 0;
                if (b.n > 1) {
                        uint16_t e = table[w >> (64 - TABLE_BITS)];
                        j = e >> 4;
                        l = e & 15;
                        if (e == 0) {
                                l = TABLE_BITS + 1;
                                while (l <= CODE_BITS_MAX && (uint32_t) (w >> (64 - l)) - first[l] >= count[l])
                                        l++;
                                if (l > CODE_BITS_MAX) {
                                        r->bad = true;
                                        return;
                                }
                                j = by_code[at[l] + ((uint32_t) (w >> (64 - l)) - first[l])];
                        }
                }
                /* The low bits from the same 57 bits when they hold them. */
                if (l + b.shift <= 57) {
                        low = b.shift ? (w << l) >> (64 - b.shift) : 0;
                        r->pos += l + b.shift;
                        if (r->pos > r->size * 8)
                                r->bad = true;
                } else {
                        r->pos += l;
                        low = in_bits(r, b.shift);
                }
                v[i] = bits_double(b.lo + ((b.band[j] << b.shift | low) << b.zeros));
        }
}

/* ---- streams ------------------------------------------------------------ */

/* Writes the cheapest body for v[0..n) to o; x and k are scratch for n
 * integers each. */
static void values_write(struct out *o, const double *v, size_t n, int64_t *x, int64_t *k) {
        bool constant = true;
        for (size_t i = 1; i < n && constant; i++)
                constant = double_bits(v[i]) == double_bits(v[0]);
        if (constant) {
                uint64_t u = double_bits(v[0]);
                out_byte(o, STREAM_CONST);
                for (int b = 0; b < 8; b++)
                        out_byte(o, (uint8_t) (u >> (8 * b)));
                return;
        }
        /* Integers first: whole numbers, then decimals, then binary fractions. */
        struct int_plan best = { 0 }, plan;
        bool have_int = false;
        if (scale_whole(v, n, x)) {
                have_int = int_plan_make(x, n, 0, k, &best);
        } else {
                static const unsigned places[] = { 9, 6, 3 };
                for (size_t p = 0; p < 3 && !have_int; p++)
                        if (scale_decimal(v, n, places[p], x))
                                have_int = int_plan_make(x, n, (uint8_t) places[p], k, &best);
                unsigned binary = scale_binary(v, n, x);
                if (binary && int_plan_make(x, n, (uint8_t) (SCALE_BINARY + binary), k, &plan) &&
                    (!have_int || plan.bits < best.bits)) {
                        best = plan;
                        have_int = true;
                }
        }
        uint64_t xor_bits = xor_write(NULL, v, n);
        unsigned width = split_width(v, n);
        uint64_t split_bits = split_write(NULL, v, n, width);
        struct bands bands = { 0 };
        uint64_t bands_bits = n >= BANDS_SAMPLES_MIN ? bands_plan(v, n, &bands) : UINT64_MAX;
        if (bands_bits < split_bits && bands_bits < xor_bits && (!have_int || bands_bits < best.bits)) {
                bands_write(o, v, n, &bands);
        } else if (have_int && best.bits <= xor_bits && best.bits <= split_bits) {
                /* x holds the last scaling tried: redo the winner's. */
                if (best.scale == 0)
                        scale_whole(v, n, x);
                else if (best.scale <= 9)
                        scale_decimal(v, n, best.scale, x);
                else
                        scale_binary(v, n, x);
                int_write(o, x, n, &best);
        } else if (xor_bits <= split_bits) {
                out_byte(o, STREAM_XOR);
                xor_write(o, v, n);
        } else {
                out_byte(o, STREAM_SPLIT);
                out_byte(o, (uint8_t) width);
                split_write(o, v, n, width);
        }
}

/* Appends a stream: its body's length, then the body. */
static void stream_append(struct out *o, struct out *body) {
        out_varint(o, body->len);
        out_bytes(o, body->data, body->len);
        o->failed |= body->failed;
        body->len = 0;
        body->acc = 0;
        body->pending = 0;
}

int chunk_encode(const int64_t *ts, const double *const *columns, size_t n_columns, size_t n, uint8_t **ret_data,
                 size_t *ret_size) {
        struct out o = { 0 }, body = { 0 };
        struct int_plan plan;

        if (n == 0 || n >= CHUNK_SAMPLES_MAX || n_columns == 0 || n_columns > CHUNK_COLUMNS_MAX)
                return -EINVAL;
        for (size_t i = 1; i < n; i++)
                if (ts[i] <= ts[i - 1])
                        return -EINVAL;
        if ((uint64_t) ts[n - 1] - (uint64_t) ts[0] >= (UINT64_C(1) << 53))
                return -EINVAL;
        int64_t *x = malloc(2 * n * sizeof(*x)), *k = x + n;
        if (!x)
                return -ENOMEM;

        out_byte(&o, (uint8_t) (CHUNK_FORMAT | n_columns));
        out_varint(&o, n);
        /* Timestamps are integers whose residuals fit by the span check. */
        if (!int_plan_make(ts, n, 0, k, &plan)) {
                free(x);
                return -EINVAL;
        }
        int_write(&body, ts, n, &plan);
        stream_append(&o, &body);
        for (size_t c = 0; c < n_columns; c++) {
                size_t same = 0;
                while (same < c && memcmp(columns[same], columns[c], n * sizeof(double)) != 0)
                        same++;
                if (same < c) {
                        out_byte(&body, STREAM_SAME);
                        out_byte(&body, (uint8_t) same);
                } else {
                        values_write(&body, columns[c], n, x, k);
                }
                stream_append(&o, &body);
        }
        free(x);
        free(body.data);
        if (o.failed) {
                free(o.data);
                return -ENOMEM;
        }
        *ret_data = o.data;
        *ret_size = o.len;
        return 0;
}

/* Reads byte 0 and the count; r is left at the first stream. */
static int chunk_open(struct in *r, size_t *ret_columns) {
        uint64_t n = 0;
        uint8_t head = in_byte(r);
        size_t columns = head & ~CHUNK_FORMAT_MASK;
        if ((head & CHUNK_FORMAT_MASK) != CHUNK_FORMAT || columns == 0 || columns > CHUNK_COLUMNS_MAX ||
            !in_varint(r, &n) || n == 0 || n >= CHUNK_SAMPLES_MAX)
                return -EBADMSG;
        if (ret_columns)
                *ret_columns = columns;
        return (int) n;
}

int chunk_count(const uint8_t *data, size_t size, size_t *ret_columns) {
        struct in r = { .data = data, .size = size };
        return chunk_open(&r, ret_columns);
}

/* The next stream: body as its own reader, r moved past it. */
static bool stream_next(struct in *r, struct in *body) {
        uint64_t len = 0;
        if (!in_varint(r, &len) || len > r->size - r->pos / 8) {
                r->bad = true;
                return false;
        }
        *body = (struct in){ .data = r->data + r->pos / 8, .size = (size_t) len };
        r->pos += 8 * (size_t) len;
        return true;
}

static void values_read(struct in *r, size_t n, size_t m, double *v) {
        uint8_t kind = in_byte(r);
        if (kind == STREAM_CONST) {
                uint64_t u = 0;
                for (int b = 0; b < 8; b++)
                        u |= (uint64_t) in_byte(r) << (8 * b);
                for (size_t i = 0; i < m; i++)
                        v[i] = bits_double(u);
        } else if (kind == STREAM_INT) {
                int_read(r, n, m, NULL, v);
        } else if (kind == STREAM_XOR) {
                xor_read(r, m, v);
        } else if (kind == STREAM_SPLIT) {
                unsigned width = in_byte(r);
                if (width > 52)
                        r->bad = true;
                else
                        split_read(r, m, width, v);
        } else if (kind == STREAM_BANDS) {
                bands_read(r, m, v);
        } else {
                r->bad = true;
        }
}

int chunk_decode(const uint8_t *data, size_t size, int64_t until, int64_t *ts, double *const *columns, unsigned mask) {
        struct in r = { .data = data, .size = size }, body, bodies[CHUNK_COLUMNS_MAX];
        size_t n_columns = 0;
        int n = chunk_open(&r, &n_columns);
        if (n < 0)
                return n;
        if (!stream_next(&r, &body) || in_byte(&body) != STREAM_INT)
                return -EBADMSG;
        int_read(&body, (size_t) n, (size_t) n, ts, NULL);
        if (body.bad)
                return -EBADMSG;
        /* Only timestamps chunk_encode() takes, strictly increasing and
         * less than 2^53 ms apart: a damaged chunk's out of order would
         * defeat the search for until below and the readers that take
         * samples in order, and far apart, overflow the intervals that
         * derived chunks take (storage/derive.c). */
        for (size_t i = 1; i < (size_t) n; i++)
                if (ts[i] <= ts[i - 1])
                        return -EBADMSG;
        if ((uint64_t) ts[n - 1] - (uint64_t) ts[0] >= (UINT64_C(1) << 53))
                return -EBADMSG;
        size_t m = 0, hi = (size_t) n;
        while (m < hi) { /* the first timestamp past until */
                size_t mid = m + (hi - m) / 2;
                if (ts[mid] <= until)
                        m = mid + 1;
                else
                        hi = mid;
        }
        for (size_t c = 0; c < n_columns && m > 0; c++) {
                if (!stream_next(&r, &bodies[c]))
                        return -EBADMSG;
                if (!(mask & (1u << c)))
                        continue;
                body = bodies[c];
                /* A column the same as an earlier one reads that one's body. */
                if (body.size == 2 && body.data[0] == STREAM_SAME) {
                        if (body.data[1] >= c)
                                return -EBADMSG;
                        body = bodies[body.data[1]];
                }
                values_read(&body, (size_t) n, m, columns[c]);
                if (body.bad)
                        return -EBADMSG;
        }
        return (int) m;
}
