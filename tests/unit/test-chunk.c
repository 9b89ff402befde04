#include "config.h"

#include <errno.h>
#include <float.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "storage/chunk-v2.h"
#include "storage/chunk.h"

/* A small deterministic generator, so failures reproduce. */
static uint64_t rng_state;

static uint64_t rng(void) {
        uint64_t z = (rng_state += 0x9e3779b97f4a7c15ULL);
        z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
        z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
        return z ^ (z >> 31);
}

/* Encodes one column of n samples, decodes it whole and in part, and
 * checks every bit; returns the encoded size. */
static size_t round_trip(const int64_t *ts, const double *v, size_t n) {
        uint8_t *data = NULL;
        size_t size = 0, columns = 0;
        assert_int_equal(chunk_encode(ts, (const double *const[]){ v }, 1, n, &data, &size), 0);
        assert_int_equal(chunk_count(data, size, &columns), (int) n);
        assert_int_equal(columns, 1);
        int64_t *got_ts = calloc(n, sizeof(*got_ts));
        double *got_v = calloc(n, sizeof(*got_v));
        assert_non_null(got_ts);
        assert_non_null(got_v);
        assert_int_equal(chunk_decode(data, size, INT64_MAX, got_ts, (double *const[]){ got_v }, 1), (int) n);
        for (size_t i = 0; i < n; i++) {
                assert_int_equal(got_ts[i], ts[i]);
                /* Bit for bit: NaN payloads and -0.0 survive. */
                assert_memory_equal(&got_v[i], &v[i], sizeof(double));
        }
        /* Up to a timestamp: the samples before it and no more. */
        size_t half = n / 2;
        memset(got_v, 0, n * sizeof(*got_v));
        assert_int_equal(chunk_decode(data, size, ts[half] - 1, got_ts, (double *const[]){ got_v }, 1), (int) half);
        for (size_t i = 0; i < half; i++)
                assert_memory_equal(&got_v[i], &v[i], sizeof(double));
        /* A chunk cut short is refused, never read past its end. */
        for (size_t cut = 1; cut < size; cut += 1 + size / 7)
                assert_int_equal(chunk_decode(data, size - cut, INT64_MAX, got_ts, (double *const[]){ got_v }, 1),
                                 -EBADMSG);
        free(got_ts);
        free(got_v);
        free(data);
        return size;
}

static double special(uint64_t pick) {
        static const double table[] = { 0.0,
                                        -0.0,
                                        1.0,
                                        -1.0,
                                        DBL_MAX,
                                        -DBL_MAX,
                                        DBL_MIN,
                                        4.9e-324,
                                        -4.9e-324,
                                        9007199254740992.0,
                                        -9007199254740992.0,
                                        9007199254740993.0,
                                        1e300,
                                        1e-300,
                                        0.1,
                                        2.5 };
        switch (pick % 20) {
        case 16:
                return NAN;
        case 17:
                return INFINITY;
        case 18:
                return -INFINITY;
        case 19: {
                /* A NaN with a payload. */
                uint64_t u = 0x7ff8000000000000ULL | (rng() & 0xffffffffffULL);
                double d;
                memcpy(&d, &u, sizeof(d));
                return d;
        }
        default:
                return table[pick % 16];
        }
}

static void chunk_encode__random_series__round_trips(void **state) {
        (void) state;
        enum { N = 700 };
        int64_t ts[N];
        double v[N];
        rng_state = 42;
        for (int iter = 0; iter < 400; iter++) {
                size_t n = 1 + rng() % N;
                int kind = iter % 6;
                int64_t t = (int64_t) (rng() % 2000000000000ULL);
                double counter = (double) (rng() % 1000);
                for (size_t i = 0; i < n; i++) {
                        /* Irregular intervals: steady, jittered, gaps, huge jumps. */
                        switch (rng() % 8) {
                        case 0:
                                t += 1 + (int64_t) (rng() % 5);
                                break;
                        case 1:
                                t += (int64_t) (rng() % 100000000);
                                break;
                        case 2:
                                t += 1 + (int64_t) (rng() % ((uint64_t) 1 << 40));
                                break;
                        default:
                                t += 1000 + (int64_t) (rng() % 7) - 3;
                                break;
                        }
                        ts[i] = t;
                        switch (kind) {
                        case 0: /* counters with resets */
                                counter = rng() % 50 == 0 ? (double) (rng() % 10) : counter + (double) (rng() % 100000);
                                v[i] = counter;
                                break;
                        case 1: /* any bit pattern */ {
                                uint64_t u = rng();
                                memcpy(&v[i], &u, sizeof(u));
                                break;
                        }
                        case 2:
                                v[i] = special(rng());
                                break;
                        case 3: /* noisy gauge */
                                v[i] = 0.55 + 0.1 * ((double) (rng() % 1000000) / 1e6);
                                break;
                        case 4: /* mostly constant integers, now and then huge */
                                v[i] = rng() % 10 == 0 ? (double) (int64_t) (rng() >> 11) * (rng() % 2 ? 1 : -1) : 42;
                                break;
                        default: /* integers mixed with special values */
                                v[i] = rng() % 4 ? (double) (rng() % 1000) : special(rng());
                                break;
                        }
                }
                round_trip(ts, v, n);
        }
}

static void chunk_encode__extreme_timestamps__round_trip(void **state) {
        (void) state;
        int64_t ts[] = { INT64_MIN, INT64_MIN + 1, INT64_MIN + 1000 };
        int64_t top[] = { INT64_MAX - 7, INT64_MAX - 1, INT64_MAX };
        int64_t around_zero[] = { -5, -1, 0, 1, 1000 };
        double v[] = { 1, 2, 3, 4, 5 };
        round_trip(ts, v, 3);
        round_trip(top, v, 3);
        round_trip(around_zero, v, 5);
        int64_t one_ts[] = { 1700000000000 };
        double one_v[] = { NAN };
        round_trip(one_ts, one_v, 1);
}

static void chunk_encode__regular_or_constant__round_trips_small(void **state) {
        (void) state;
        enum { N = 300 };
        int64_t ts[N];
        double v[N];
        const double constants[] = { -0.0, NAN, INFINITY, 7, 1e300 };
        rng_state = 7;
        for (size_t c = 0; c < sizeof(constants) / sizeof(constants[0]); c++)
                for (int regular = 0; regular < 2; regular++) {
                        for (int i = 0; i < N; i++) {
                                ts[i] = 1700000000000 + 1000 * (int64_t) i + (regular ? 0 : (int64_t) (rng() % 3));
                                v[i] = constants[c];
                        }
                        size_t size = round_trip(ts, v, N);
                        /* A constant on a regular grid costs its header only. */
                        if (regular)
                                assert_true(size < 32);
                        /* Regular stamps with varying values. */
                        for (int i = 0; i < N; i++)
                                v[i] = c % 2 ? (double) (rng() % 100) : (double) rng() / 3.0;
                        round_trip(ts, v, N);
                        round_trip(ts, v, 1);
                        round_trip(ts, v, 2);
                }
}

static void chunk_encode__steady_counter__is_small(void **state) {
        (void) state;
        enum { N = 3600 };
        int64_t ts[N];
        double v[N];
        for (int i = 0; i < N; i++) {
                ts[i] = 1700000000000 + 1000 * (int64_t) i;
                v[i] = 1e12 + 12345.0 * i;
        }
        /* Nothing changes from the second sample on: the header is all. */
        assert_true(round_trip(ts, v, N) < 40);
        /* A gap of two ticks costs a few bits, not one per sample. */
        for (int i = 1000; i < N; i++)
                ts[i] += 2000;
        assert_true(round_trip(ts, v, N) < 48);
}

/* Numbers as instruments and exporters write them: decimals with a few
 * places, floats, counters past 2^53. Each costs about what its
 * information is, far below the 8 bytes of a double. */
static void chunk_encode__decimals_floats_big_counters__compact(void **state) {
        (void) state;
        enum { N = 3600 };
        int64_t ts[N];
        double v[N];
        float f;
        rng_state = 11;
        for (int i = 0; i < N; i++)
                ts[i] = 1700000000000 + 1000 * (int64_t) i;
        /* A ratio to 4 places, 0.8600-0.9800: about 11 bits of noise. */
        for (int i = 0; i < N; i++)
                v[i] = (double) (8600 + (int64_t) (rng() % 1200)) / 10000.0;
        assert_true(round_trip(ts, v, N) < N * 15 / 8);
        /* Busy seconds to 0.1 ms growing by such ratios. */
        for (int i = 0; i < N; i++)
                v[i] = (double) (123456789 + 8600 * (int64_t) i + (int64_t) (rng() % 1200)) / 10000.0;
        assert_true(round_trip(ts, v, N) < N * 15 / 8);
        /* Floats in [0.5, 1): 23 mantissa bits and a 1-bit exponent code. */
        for (int i = 0; i < N; i++) {
                f = 0.5f + (float) (rng() % 1000000) / 2000000.0f;
                v[i] = f;
        }
        assert_true(round_trip(ts, v, N) < N * 25 / 8);
        /* A byte counter past 2^53 (a multiple of 8 there) growing at a
         * steady rate with 1 % of noise. */
        for (int i = 0; i < N; i++)
                v[i] = 1e17 + 8.0 * (double) (1000000000 * (int64_t) i + (int64_t) (rng() % 10000000));
        assert_true(round_trip(ts, v, N) < N * 27 / 8);
}

/* A core busy in steps: ratios at 0.85-0.95 or at 0.08-0.18, kept to a
 * float's 24 bits. Their prefix-coded bands cost about their entropy (2.8
 * bytes; a fixed width over the range and the exponents costs 3.1), other
 * lengths round-trip, and a damaged code table is refused. */
static void chunk_encode__values_in_bands__near_their_entropy(void **state) {
        (void) state;
        enum { N = 3600 };
        static int64_t ts[N];
        static double v[N];
        rng_state = 11;
        for (int i = 0; i < N; i++) {
                double x = (double) (rng() % 1000003) / 1000003.0;
                ts[i] = 1700000000000 + 1000 * (int64_t) i;
                v[i] = (float) (rng() % 10 < 7 ? 0.85 + 0.1 * x : 0.08 + 0.1 * x);
        }
        assert_true(round_trip(ts, v, N) < N * 29 / 10);
        for (size_t n = 512; n <= 1800; n += 181)
                round_trip(ts, v + n, n);
        /* A skewed spread over 200 bands: codes of up to 15 bits. */
        static double skewed[N];
        for (int i = 0; i < N; i++) {
                unsigned k = 0;
                while (k < 199 && rng() % 2 == 0)
                        k++;
                skewed[i] = (float) (0.5 + (double) k / 512 + (double) (rng() % 1000) / 1e6);
        }
        round_trip(ts, skewed, N);

        uint8_t *data = NULL;
        size_t size = 0;
        assert_int_equal(chunk_encode(ts, (const double *const[]){ v }, 1, N, &data, &size), 0);
        int64_t got_ts[N];
        static double got[N];
        /* The value stream's body: after the header, the timestamps' stream
         * and the value stream's length; its kind, the smallest value (8
         * bytes), zeros, shift, the number of bands, then band 0: its
         * distance and its code length. */
        size_t at = 1;
        while (data[at++] & 0x80) /* the count */
                ;
        size_t ts_len = data[at++];
        at += ts_len;
        while (data[at++] & 0x80) /* the value stream's length */
                ;
        assert_int_equal(data[at], 5); /* STREAM_BANDS */
        data[at + 13] = 1;             /* a length-1 code for band 0 as well: no prefix code */
        assert_int_equal(chunk_decode(data, size, INT64_MAX, got_ts, (double *const[]){ got }, 1), -EBADMSG);
        free(data);
}

/* Rollup chunks: five columns, each decoded alone or with others. */
static void chunk_decode__columns__any_subset(void **state) {
        (void) state;
        enum { N = 60 };
        int64_t ts[N], got_ts[N];
        double col[5][N], got[5][N];
        rng_state = 3;
        for (int i = 0; i < N; i++) {
                ts[i] = 1700000040000 + 60000 * (int64_t) i;
                col[0][i] = (double) (rng() % 1000) / 1000.0;
                col[1][i] = col[0][i] + 0.5;
                col[2][i] = 60 * col[0][i] + 3;
                col[3][i] = 60;
                col[4][i] = (double) (rng() % 7);
        }
        const double *const in[5] = { col[0], col[1], col[2], col[3], col[4] };
        double *const out[5] = { got[0], got[1], got[2], got[3], got[4] };
        uint8_t *data = NULL;
        size_t size = 0, columns = 0;
        assert_int_equal(chunk_encode(ts, in, 5, N, &data, &size), 0);
        assert_int_equal(chunk_count(data, size, &columns), N);
        assert_int_equal(columns, 5);
        for (unsigned mask = 0; mask < 32; mask++) {
                memset(got, 0, sizeof(got));
                assert_int_equal(chunk_decode(data, size, INT64_MAX, got_ts, out, mask), N);
                assert_memory_equal(got_ts, ts, sizeof(ts));
                for (int c = 0; c < 5; c++)
                        if (mask & (1u << c))
                                assert_memory_equal(got[c], col[c], sizeof(col[c]));
                        else
                                assert_true(got[c][0] == 0 && got[c][N - 1] == 0);
        }
        free(data);
}

/* A column the same as an earlier one (a counter's maximum and last value
 * in a rollup chunk) is stored as a reference to it, read alone too. */
static void chunk_encode__same_column__stored_once(void **state) {
        (void) state;
        enum { N = 60 };
        int64_t ts[N], got_ts[N];
        double counter[N], other[N], got[N];
        rng_state = 5;
        for (int i = 0; i < N; i++) {
                ts[i] = 1700000040000 + 60000 * (int64_t) i;
                counter[i] = other[i] = (double) (1000000 * i + (int64_t) (rng() % 100000));
        }
        other[N - 1] += 1;
        uint8_t *same = NULL, *differs = NULL;
        size_t same_size = 0, differs_size = 0;
        assert_int_equal(chunk_encode(ts, (const double *const[]){ counter, counter }, 2, N, &same, &same_size), 0);
        assert_int_equal(chunk_encode(ts, (const double *const[]){ counter, other }, 2, N, &differs, &differs_size), 0);
        assert_true(same_size + 50 < differs_size);
        assert_int_equal(chunk_decode(same, same_size, INT64_MAX, got_ts, (double *const[]){ NULL, got }, 2), N);
        assert_memory_equal(got, counter, sizeof(got));
        /* The reference is the last two bytes: to itself, it is refused. */
        assert_int_equal(same[same_size - 2], 4);
        same[same_size - 1] = 1;
        assert_int_equal(chunk_decode(same, same_size, INT64_MAX, got_ts, (double *const[]){ NULL, got }, 2), -EBADMSG);
        free(same);
        free(differs);
}

static void chunk_encode__bad_input__refused(void **state) {
        (void) state;
        int64_t ts[] = { 5, 5 };
        int64_t far[] = { 0, INT64_C(1) << 53 };
        double v[] = { 1, 2 };
        const double *const cols[] = { v };
        uint8_t *data = NULL;
        size_t size = 0;
        assert_int_equal(chunk_encode(ts, cols, 1, 2, &data, &size), -EINVAL);
        assert_int_equal(chunk_encode(far, cols, 1, 2, &data, &size), -EINVAL);
        assert_int_equal(chunk_encode(ts, cols, 1, 0, &data, &size), -EINVAL);
        assert_int_equal(chunk_encode(ts, cols, 0, 1, &data, &size), -EINVAL);
        assert_int_equal(chunk_encode(ts, cols, CHUNK_COLUMNS_MAX + 1, 1, &data, &size), -EINVAL);
        uint8_t junk[16] = { 9 };
        assert_int_equal(chunk_count(junk, sizeof(junk), NULL), -EBADMSG);
        assert_int_equal(chunk_count(junk, 0, NULL), -EBADMSG);
        /* Schema 2's chunks (mode 1-4, flag 0x10) are not this format. */
        uint8_t old[16] = { 0x12, 44, 1, 0, 0 };
        assert_int_equal(chunk_count(old, sizeof(old), NULL), -EBADMSG);
}

/* A damaged chunk whose timestamps chunk_encode() would refuse is
 * refused: out of order (the search for until and the readers take them
 * in order), or 2^53 ms apart. Each is a steady series' chunk with the
 * first difference of its timestamps changed: after the header (format,
 * count, the stream's length), the stream's kind, scale, base, step,
 * order and width, the seed, as a zigzag varint. */
static void chunk_decode__timestamps_encode_refuses__ebadmsg(void **state) {
        (void) state;
        int64_t ts[] = { 1000, 2000, 3000 }, far[] = { 0, INT64_C(1) << 52 }, got_ts[3];
        double v[] = { 1, 2, 3 }, got[3];
        uint8_t *data = NULL;
        size_t size = 0;
        assert_int_equal(chunk_encode(ts, (const double *const[]){ v }, 1, 3, &data, &size), 0);
        assert_int_equal(chunk_decode(data, size, INT64_MAX, got_ts, (double *const[]){ got }, 1), 3);
        assert_int_equal(data[11], 2); /* 1 step; base and step take 2 bytes each */
        data[11] = 1;                  /* -1 step: 1000, 0, -1000 */
        assert_int_equal(chunk_decode(data, size, INT64_MAX, got_ts, (double *const[]){ got }, 1), -EBADMSG);
        free(data);
        assert_int_equal(chunk_encode(far, (const double *const[]){ v }, 1, 2, &data, &size), 0);
        assert_int_equal(chunk_decode(data, size, INT64_MAX, got_ts, (double *const[]){ got }, 1), 2);
        assert_int_equal(data[16], 2); /* 1 step; the base takes 1 byte, the step 2^52 8 */
        data[16] = 4;                  /* 2 steps: 0, 2^53 */
        assert_int_equal(chunk_decode(data, size, INT64_MAX, got_ts, (double *const[]){ got }, 1), -EBADMSG);
        free(data);
}

/* Any seed decodes without undefined arithmetic, INT64_MIN too (its
 * negation overflowed, which UBSan stops on): the steady chunk above with
 * that seed, 10 bytes in place of 1, wraps to 1000 twice and is refused. */
static void chunk_decode__seed_int64_min__wraps_and_refused(void **state) {
        (void) state;
        int64_t ts[] = { 1000, 2000, 3000 }, got_ts[3];
        double v[] = { 1, 2, 3 }, got[3];
        static const uint8_t seed[] = { 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01 };
        uint8_t *data = NULL, damaged[64];
        size_t size = 0;
        assert_int_equal(chunk_encode(ts, (const double *const[]){ v }, 1, 3, &data, &size), 0);
        assert_true(size + 9 <= sizeof(damaged) && data[2] == 10 && data[11] == 2);
        memcpy(damaged, data, 11);
        damaged[2] += 9; /* the timestamps' stream is 9 bytes longer */
        memcpy(damaged + 11, seed, sizeof(seed));
        memcpy(damaged + 21, data + 12, size - 12);
        assert_int_equal(chunk_decode(damaged, size + 9, INT64_MAX, got_ts, (double *const[]){ got }, 1), -EBADMSG);
        free(data);
}

/* Schema 2's bit stream, most significant bit first, as its encoder wrote
 * it (storage/chunk-v2.c), to write chunks by hand. */
struct v2_bits {
        uint8_t *data;
        size_t pos;
};

static void v2_put(struct v2_bits *w, uint64_t v, unsigned n) {
        for (unsigned i = n; i-- > 0; w->pos++)
                if (v >> i & 1)
                        w->data[w->pos / 8] |= (uint8_t) (0x80 >> w->pos % 8);
}

/* '0' for zero, else '1', the length less one in 6 bits, the zigzag. */
static void v2_put_varbits(struct v2_bits *w, int64_t v) {
        uint64_t z = ((uint64_t) v << 1) ^ (uint64_t) (v >> 63);
        unsigned len = 64 - (unsigned) __builtin_clzll(z | 1);
        v2_put(w, v != 0, 1);
        if (v != 0) {
                v2_put(w, len - 1, 6);
                v2_put(w, z, len);
        }
}

/* Schema 2's integers were below 2^53: a damaged integer chunk whose
 * values overflow 64 bits is refused (its arithmetic was undefined). */
static void chunk_v2_decode__integers_overflow__ebadmsg(void **state) {
        (void) state;
        int64_t ts[2];
        double v[2];
        for (uint8_t n = 1; n <= 2; n++) {
                /* Integers at equal intervals, each base + k * divisor,
                 * k coded as differences of differences. */
                uint8_t data[32] = { 0x12, n };
                struct v2_bits w = { data, 40 };
                v2_put(&w, 1700000000000, 64);
                v2_put_varbits(&w, 1000);             /* the interval */
                v2_put_varbits(&w, 0);                /* base */
                v2_put_varbits(&w, INT64_C(1) << 62); /* divisor */
                v2_put_varbits(&w, 1);                /* k = 1: 2^62 */
                v2_put_varbits(&w, 0);                /* k = 2, the same difference: 2^63 */
                assert_int_equal(chunk_v2_count(data, sizeof(data)), n);
                if (n == 1) {
                        assert_int_equal(chunk_v2_decode(data, sizeof(data), ts, v), 1);
                        assert_true(ts[0] == 1700000000000 && v[0] == 0x1p62);
                } else {
                        assert_int_equal(chunk_v2_decode(data, sizeof(data), ts, v), -EBADMSG);
                }
        }
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(chunk_encode__random_series__round_trips),
                cmocka_unit_test(chunk_encode__extreme_timestamps__round_trip),
                cmocka_unit_test(chunk_encode__regular_or_constant__round_trips_small),
                cmocka_unit_test(chunk_encode__steady_counter__is_small),
                cmocka_unit_test(chunk_encode__decimals_floats_big_counters__compact),
                cmocka_unit_test(chunk_encode__values_in_bands__near_their_entropy),
                cmocka_unit_test(chunk_decode__columns__any_subset),
                cmocka_unit_test(chunk_encode__same_column__stored_once),
                cmocka_unit_test(chunk_encode__bad_input__refused),
                cmocka_unit_test(chunk_decode__timestamps_encode_refuses__ebadmsg),
                cmocka_unit_test(chunk_decode__seed_int64_min__wraps_and_refused),
                cmocka_unit_test(chunk_v2_decode__integers_overflow__ebadmsg),
        };
        return cmocka_run_group_tests_name("chunk", tests, NULL, NULL);
}
