#include "config.h"

#include <errno.h>
#include <stdbool.h>
#include <string.h>

#include "storage/chunk-v2.h"

/* Schema 2's layout: byte 0 the value mode and flags, bytes 1-4 the sample
 * count (little endian), then a bit stream, most significant bit first:
 * the first timestamp in 64 bits; the interval when all are equal; the
 * value when all are equal, or for integers the first value and the
 * divisor; then per sample a timestamp delta-of-delta (from the second on,
 * unless regular) and the value's code (unless constant). */
enum chunk_mode {
        CHUNK_XOR = 1,
        CHUNK_INT = 2,
        CHUNK_CONST = 3, /* every value the same bits: stored once */
        CHUNK_SPLIT = 4, /* exponent when it changes, mantissa as is */
        CHUNK_MODE_MASK = 0x0f,
        CHUNK_REGULAR = 0x10, /* flag: equal intervals, stored once */
};

#define CHUNK_MAX_SAMPLES (1u << 24)

struct bit_reader {
        const uint8_t *data;
        size_t size_bits, pos;
        bool overrun;
};

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

static int64_t unzigzag(uint64_t v) {
        return (int64_t) (v >> 1) ^ -(int64_t) (v & 1);
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

static int64_t get_varbits(struct bit_reader *r) {
        if (reader_get(r, 1) == 0)
                return 0;
        unsigned len = (unsigned) reader_get(r, 6) + 1;
        return unzigzag(reader_get(r, len));
}

static double bits_double(uint64_t u) {
        double v;
        memcpy(&v, &u, sizeof(v));
        return v;
}

struct xor_state {
        uint64_t prev;
        unsigned lead, trail;
};

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

static double get_split(struct bit_reader *r, uint64_t *prev_hi) {
        if (reader_get(r, 1)) {
                if (reader_get(r, 1))
                        *prev_hi = reader_get(r, 12);
                else
                        *prev_hi = (*prev_hi + reader_get(r, 3) - 4) & 0xfff;
        }
        return bits_double(*prev_hi << 52 | reader_get(r, 52));
}

int chunk_v2_count(const uint8_t *data, size_t size) {
        unsigned mode = size > 0 ? data[0] & CHUNK_MODE_MASK : 0;
        if (size < 13 || mode < CHUNK_XOR || mode > CHUNK_SPLIT || (data[0] & ~(CHUNK_MODE_MASK | CHUNK_REGULAR)))
                return -EBADMSG;
        uint32_t n = (uint32_t) data[1] | (uint32_t) data[2] << 8 | (uint32_t) data[3] << 16 | (uint32_t) data[4] << 24;
        if (n == 0 || n >= CHUNK_MAX_SAMPLES)
                return -EBADMSG;
        return (int) n;
}

int chunk_v2_decode(const uint8_t *data, size_t size, int64_t *ts, double *values) {
        int n = chunk_v2_count(data, size);
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
                        /* Schema 2 wrote integers below 2^53, so their
                         * sums fit in 64 bits: one that overflows is a
                         * damaged chunk's, refused, not undefined. */
                        int64_t x;
                        if (__builtin_add_overflow(prev_int_delta, get_varbits(&rd), &prev_int_delta) ||
                            __builtin_add_overflow(prev_int, prev_int_delta, &prev_int) ||
                            __builtin_mul_overflow(prev_int, g, &x) || __builtin_add_overflow(base, x, &x))
                                return -EBADMSG;
                        values[i] = (double) x;
                } else if (mode == CHUNK_SPLIT) {
                        values[i] = get_split(&rd, &prev_hi);
                } else {
                        values[i] = get_xor(&rd, &xs);
                }
        }
        return rd.overrun ? -EBADMSG : n;
}
