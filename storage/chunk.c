#include "config.h"

#include <errno.h>
#include <math.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "storage/chunk.h"

/* Layout: byte 0 the value mode and flags, bytes 1-4 the sample count
 * (little endian), then a bit stream, most significant bit first: the
 * first timestamp in 64 bits; the interval when all are equal; the value
 * when all are equal, or for integers the first value and the divisor;
 * then per sample a timestamp delta-of-delta (from the second on, unless
 * regular) and the value's code (unless constant). */
enum chunk_mode {
        CHUNK_XOR = 1,
        CHUNK_INT = 2,
        CHUNK_CONST = 3, /* every value the same bits: stored once */
        CHUNK_SPLIT = 4, /* exponent when it changes, mantissa as is */
        CHUNK_MODE_MASK = 0x0f,
        CHUNK_REGULAR = 0x10, /* flag: equal intervals, stored once */
};

#define CHUNK_MAX_SAMPLES (1u << 24)
#define INT_EXACT_MAX 9007199254740992.0 /* 2^53 */

struct bit_writer {
        uint8_t *data;
        size_t cap, bits;
};

struct bit_reader {
        const uint8_t *data;
        size_t size_bits, pos;
        bool overrun;
};

static int writer_put(struct bit_writer *w, uint64_t value, unsigned nbits) {
        if ((w->bits + nbits + 7) / 8 > w->cap) {
                size_t cap = w->cap * 2 + 64;
                uint8_t *grown = realloc(w->data, cap);
                if (!grown)
                        return -ENOMEM;
                memset(grown + w->cap, 0, cap - w->cap);
                w->data = grown;
                w->cap = cap;
        }
        while (nbits > 0) {
                unsigned free_bits = 8 - (unsigned) (w->bits % 8);
                unsigned take = nbits < free_bits ? nbits : free_bits;
                uint8_t part = (uint8_t) ((value >> (nbits - take)) & ((1u << take) - 1));
                w->data[w->bits / 8] |= (uint8_t) (part << (free_bits - take));
                w->bits += take;
                nbits -= take;
        }
        return 0;
}

static uint64_t reader_get(struct bit_reader *r, unsigned nbits) {
        uint64_t value = 0;
        if (r->pos + nbits > r->size_bits) {
                r->overrun = true;
                return 0;
        }
        /* Fast path: one 8-byte big-endian load covers up to 57 bits. */
        if (nbits > 0 && nbits <= 56 && r->pos / 8 + 8 <= r->size_bits / 8) {
                const uint8_t *p = r->data + r->pos / 8;
                uint64_t word = (uint64_t) p[0] << 56 | (uint64_t) p[1] << 48 | (uint64_t) p[2] << 40 |
                                (uint64_t) p[3] << 32 | (uint64_t) p[4] << 24 | (uint64_t) p[5] << 16 |
                                (uint64_t) p[6] << 8 | (uint64_t) p[7];
                value = (word << (r->pos % 8)) >> (64 - nbits);
                r->pos += nbits;
                return value;
        }
        while (nbits > 0) {
                unsigned avail = 8 - (unsigned) (r->pos % 8);
                unsigned take = nbits < avail ? nbits : avail;
                uint8_t byte = r->data[r->pos / 8];
                uint64_t part = (byte >> (avail - take)) & ((1u << take) - 1);
                value = (value << take) | part;
                r->pos += take;
                nbits -= take;
        }
        return value;
}

static uint64_t zigzag(int64_t v) {
        return ((uint64_t) v << 1) ^ (uint64_t) (v >> 63);
}

static int64_t unzigzag(uint64_t v) {
        return (int64_t) (v >> 1) ^ -(int64_t) (v & 1);
}

/* Delta-of-delta classes: a '0' for no change, else a unary prefix picks the
 * width of the zigzag payload. Sized for millisecond stamps: a timer's
 * jitter of a few milliseconds takes the 4-bit class. */
static const struct {
        unsigned prefix_bits, prefix, width;
} dod_class[] = {
        { 2, 0x2, 4 }, { 3, 0x6, 8 }, { 4, 0xe, 14 }, { 5, 0x1e, 24 }, { 5, 0x1f, 64 },
};

static int put_dod(struct bit_writer *w, int64_t dod) {
        if (dod == 0)
                return writer_put(w, 0, 1);
        uint64_t z = zigzag(dod);
        for (size_t i = 0; i < sizeof(dod_class) / sizeof(dod_class[0]); i++) {
                unsigned width = dod_class[i].width;
                if (width == 64 || z < (UINT64_C(1) << width)) {
                        int r = writer_put(w, dod_class[i].prefix, dod_class[i].prefix_bits);
                        return r < 0 ? r : writer_put(w, z, width);
                }
        }
        return -EINVAL; /* unreachable: the last class takes anything */
}

static int64_t get_dod(struct bit_reader *r) {
        if (reader_get(r, 1) == 0)
                return 0;
        unsigned ones = 1;
        while (ones < 4 && reader_get(r, 1) == 1)
                ones++;
        /* ones == 4 means the prefix was 1111: one more bit picks 24 or 64. */
        unsigned width = ones == 1 ? 4 : ones == 2 ? 8 : ones == 3 ? 14 : reader_get(r, 1) ? 64 : 24;
        return unzigzag(reader_get(r, width));
}

/* Integer values' delta-of-delta: '0' for none, else '1', six bits of
 * length minus one and the zigzag value: counters with a noisy rate have
 * differences of any size, which fixed classes would round up to 64 bits. */
static int put_varbits(struct bit_writer *w, int64_t dod) {
        if (dod == 0)
                return writer_put(w, 0, 1);
        uint64_t z = zigzag(dod);
        unsigned len = 64 - (unsigned) __builtin_clzll(z);
        int r = writer_put(w, 0x40 | (len - 1), 7);
        return r < 0 ? r : writer_put(w, z, len);
}

static int64_t get_varbits(struct bit_reader *r) {
        if (reader_get(r, 1) == 0)
                return 0;
        unsigned len = (unsigned) reader_get(r, 6) + 1;
        return unzigzag(reader_get(r, len));
}

static uint64_t double_bits(double v) {
        uint64_t u;
        memcpy(&u, &v, sizeof(u));
        return u;
}

static double bits_double(uint64_t u) {
        double v;
        memcpy(&v, &u, sizeof(v));
        return v;
}

static bool exact_integer(double v) {
        return v >= -INT_EXACT_MAX && v <= INT_EXACT_MAX && v == floor(v) && !(v == 0 && signbit(v));
}

/* Gorilla's XOR scheme: '0' same value; '10' meaningful bits fit the
 * previous window; '11', 5 bits of leading zeros, 6 bits of length (0
 * meaning 64), then the bits. */
struct xor_state {
        uint64_t prev;
        unsigned lead, trail;
};

static int put_xor(struct bit_writer *w, struct xor_state *st, double v) {
        uint64_t cur = double_bits(v), x = cur ^ st->prev;
        int r;
        st->prev = cur;
        if (x == 0)
                return writer_put(w, 0, 1);
        unsigned lead = (unsigned) __builtin_clzll(x), trail = (unsigned) __builtin_ctzll(x);
        if (lead > 31)
                lead = 31;
        if (st->lead + st->trail > 0 && lead >= st->lead && trail >= st->trail) {
                r = writer_put(w, 0x2, 2);
                return r < 0 ? r : writer_put(w, x >> st->trail, 64 - st->lead - st->trail);
        }
        unsigned len = 64 - lead - trail;
        r = writer_put(w, 0x3, 2);
        if (r == 0)
                r = writer_put(w, lead, 5);
        if (r == 0)
                r = writer_put(w, len & 63, 6);
        if (r == 0)
                r = writer_put(w, x >> trail, len);
        st->lead = lead;
        st->trail = trail;
        return r;
}

static double get_xor(struct bit_reader *r, struct xor_state *st) {
        if (reader_get(r, 1) == 1) {
                if (reader_get(r, 1) == 1) {
                        st->lead = (unsigned) reader_get(r, 5);
                        unsigned len = (unsigned) reader_get(r, 6);
                        if (len == 0)
                                len = 64;
                        if (st->lead + len > 64) {
                                r->overrun = true;
                                return 0;
                        }
                        st->trail = 64 - st->lead - len;
                }
                unsigned len = 64 - st->lead - st->trail;
                st->prev ^= reader_get(r, len) << st->trail;
        }
        return bits_double(st->prev);
}

/* Random-looking doubles (a noisy ratio) defeat XOR: mode 4 stores the
 * sign and exponent as '0' (same as before), '10' + 3 bits (a change of
 * -4 to +3) or '11' + 12 bits, and the 52 mantissa bits as they are. */
static int put_split(struct bit_writer *w, uint64_t *prev_hi, double v) {
        uint64_t bits = double_bits(v), hi = bits >> 52;
        int64_t change = (int64_t) hi - (int64_t) *prev_hi;
        int r;
        if (change == 0)
                r = writer_put(w, 0, 1);
        else if (change >= -4 && change <= 3)
                r = writer_put(w, 0x10 | (uint64_t) (change + 4), 5);
        else
                r = writer_put(w, 0x3000 | hi, 14);
        *prev_hi = hi;
        return r < 0 ? r : writer_put(w, bits & ((UINT64_C(1) << 52) - 1), 52);
}

static double get_split(struct bit_reader *r, uint64_t *prev_hi) {
        if (reader_get(r, 1)) {
                if (reader_get(r, 1))
                        *prev_hi = reader_get(r, 12);
                else
                        *prev_hi = (*prev_hi + reader_get(r, 3) - 4) & 0xfff;
        }
        return bits_double(*prev_hi << 52 | reader_get(r, 52));
}

static int encode_mode(const int64_t *ts, const double *values, size_t n, uint8_t mode, bool regular, int64_t base,
                       int64_t g, struct bit_writer *w) {
        struct xor_state xs = { 0 };
        uint64_t prev_hi = 0x3ff; /* the exponent of 1.0 */
        int64_t prev_delta = 0, prev_int = 0, prev_int_delta = 0;
        int r = writer_put(w, mode | (regular ? CHUNK_REGULAR : 0), 8);

        for (int b = 0; b < 4 && r == 0; b++)
                r = writer_put(w, (n >> (8 * b)) & 0xff, 8);
        if (r == 0)
                r = writer_put(w, (uint64_t) ts[0], 64);
        if (r == 0 && regular)
                r = put_varbits(w, n > 1 ? (int64_t) ((uint64_t) ts[1] - (uint64_t) ts[0]) : 0);
        if (r == 0 && mode == CHUNK_CONST)
                r = writer_put(w, double_bits(values[0]), 64);
        if (r == 0 && mode == CHUNK_INT)
                r = put_varbits(w, base);
        if (r == 0 && mode == CHUNK_INT)
                r = put_varbits(w, g);
        for (size_t i = 0; i < n && r == 0; i++) {
                if (i > 0 && !regular) {
                        /* Wraps like the decoder for stamps far apart. */
                        int64_t delta = (int64_t) ((uint64_t) ts[i] - (uint64_t) ts[i - 1]);
                        r = put_dod(w, (int64_t) ((uint64_t) delta - (uint64_t) prev_delta));
                        prev_delta = delta;
                        if (r < 0)
                                break;
                }
                if (mode == CHUNK_INT) {
                        int64_t v = ((int64_t) values[i] - base) / g;
                        int64_t delta = v - prev_int;
                        r = put_varbits(w, delta - prev_int_delta);
                        prev_int = v;
                        prev_int_delta = delta;
                } else if (mode == CHUNK_XOR) {
                        r = put_xor(w, &xs, values[i]);
                } else if (mode == CHUNK_SPLIT) {
                        r = put_split(w, &prev_hi, values[i]);
                }
        }
        return r;
}

int chunk_encode(const int64_t *ts, const double *values, size_t n, uint8_t **ret_data, size_t *ret_size) {
        struct bit_writer w = { 0 }, alt = { 0 };
        bool all_int = true, constant = true, regular = true;
        int r;

        if (n == 0 || n >= CHUNK_MAX_SAMPLES)
                return -EINVAL;
        for (size_t i = 0; i < n; i++) {
                if (i > 0 && ts[i] <= ts[i - 1])
                        return -EINVAL;
                all_int = all_int && exact_integer(values[i]);
        }
        for (size_t i = 1; i < n && (constant || regular); i++) {
                constant = constant && memcmp(&values[i], &values[0], sizeof(double)) == 0;
                regular = regular && (uint64_t) ts[i] - (uint64_t) ts[i - 1] == (uint64_t) ts[1] - (uint64_t) ts[0];
        }
        uint8_t mode = constant ? CHUNK_CONST : all_int ? CHUNK_INT : CHUNK_XOR;
        /* Integers are stored as (v - v0) / g with g the greatest common
         * divisor of the differences: byte counts in whole pages shrink. */
        int64_t base = all_int ? (int64_t) values[0] : 0;
        uint64_t g = 0;
        for (size_t i = 1; mode == CHUNK_INT && i < n; i++) {
                int64_t d = (int64_t) values[i] - base;
                uint64_t a = d < 0 ? (uint64_t) -d : (uint64_t) d, b = g;
                while (b) {
                        uint64_t t = a % b;
                        a = b;
                        b = t;
                }
                g = a;
        }
        if (g == 0)
                g = 1;
        r = encode_mode(ts, values, n, mode, regular, base, (int64_t) g, &w);
        /* Floats: whichever of XOR and split is smaller. */
        if (r == 0 && mode == CHUNK_XOR) {
                r = encode_mode(ts, values, n, CHUNK_SPLIT, regular, 0, 1, &alt);
                if (r == 0 && alt.bits < w.bits) {
                        struct bit_writer t = w;
                        w = alt;
                        alt = t;
                }
        }
        free(alt.data);
        if (r < 0) {
                free(w.data);
                return r;
        }
        *ret_size = (w.bits + 7) / 8;
        *ret_data = w.data;
        return 0;
}

int chunk_count(const uint8_t *data, size_t size) {
        unsigned mode = size > 0 ? data[0] & CHUNK_MODE_MASK : 0;
        if (size < 13 || mode < CHUNK_XOR || mode > CHUNK_SPLIT || (data[0] & ~(CHUNK_MODE_MASK | CHUNK_REGULAR)))
                return -EBADMSG;
        uint32_t n = (uint32_t) data[1] | (uint32_t) data[2] << 8 | (uint32_t) data[3] << 16 | (uint32_t) data[4] << 24;
        if (n == 0 || n >= CHUNK_MAX_SAMPLES)
                return -EBADMSG;
        return (int) n;
}

int chunk_decode(const uint8_t *data, size_t size, int64_t *ts, double *values) {
        int n = chunk_count(data, size);
        if (n < 0)
                return n;
        struct bit_reader rd = { .data = data, .size_bits = size * 8, .pos = 40 };
        struct xor_state xs = { 0 };
        int64_t prev_delta = 0, prev_int = 0, prev_int_delta = 0;
        unsigned mode = data[0] & CHUNK_MODE_MASK;
        bool regular = data[0] & CHUNK_REGULAR;
        uint64_t t = reader_get(&rd, 64);
        int64_t step = regular ? get_varbits(&rd) : 0;
        double constant = mode == CHUNK_CONST ? bits_double(reader_get(&rd, 64)) : 0;
        int64_t base = mode == CHUNK_INT ? get_varbits(&rd) : 0;
        int64_t g = mode == CHUNK_INT ? get_varbits(&rd) : 1;
        uint64_t prev_hi = 0x3ff;

        for (int i = 0; i < n && !rd.overrun; i++) {
                if (i > 0 && regular) {
                        t += (uint64_t) step;
                } else if (i > 0) {
                        prev_delta = (int64_t) ((uint64_t) prev_delta + (uint64_t) get_dod(&rd));
                        t += (uint64_t) prev_delta;
                }
                ts[i] = (int64_t) t;
                if (mode == CHUNK_CONST) {
                        values[i] = constant;
                } else if (mode == CHUNK_INT) {
                        prev_int_delta += get_varbits(&rd);
                        prev_int += prev_int_delta;
                        values[i] = (double) (base + prev_int * g);
                } else if (mode == CHUNK_SPLIT) {
                        values[i] = get_split(&rd, &prev_hi);
                } else {
                        values[i] = get_xor(&rd, &xs);
                }
        }
        return rd.overrun ? -EBADMSG : n;
}
