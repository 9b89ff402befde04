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

#include "storage/chunk.h"

/* A small deterministic generator, so failures reproduce. */
static uint64_t rng_state;

static uint64_t rng(void) {
        uint64_t z = (rng_state += 0x9e3779b97f4a7c15ULL);
        z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
        z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
        return z ^ (z >> 31);
}

static void round_trip(const int64_t *ts, const double *v, size_t n) {
        uint8_t *data = NULL;
        size_t size = 0;
        assert_int_equal(chunk_encode(ts, v, n, &data, &size), 0);
        assert_int_equal(chunk_count(data, size), (int) n);
        int64_t *got_ts = calloc(n, sizeof(*got_ts));
        double *got_v = calloc(n, sizeof(*got_v));
        assert_non_null(got_ts);
        assert_non_null(got_v);
        assert_int_equal(chunk_decode(data, size, got_ts, got_v), (int) n);
        for (size_t i = 0; i < n; i++) {
                assert_int_equal(got_ts[i], ts[i]);
                /* Bit for bit: NaN payloads and -0.0 survive. */
                assert_memory_equal(&got_v[i], &v[i], sizeof(double));
        }
        /* A chunk cut short is refused, never read past its end. */
        if (size > 13)
                assert_true(chunk_decode(data, size - 1 - size / 3, got_ts, got_v) == -EBADMSG ||
                            size - 1 - size / 3 < 13);
        free(got_ts);
        free(got_v);
        free(data);
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
        int64_t ts[] = { INT64_MIN, -1, 0, 1, INT64_MAX - 1, INT64_MAX };
        double v[] = { 1, 2, 3, 4, 5, 6 };
        round_trip(ts, v, 6);
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
                        round_trip(ts, v, N);
                        uint8_t *data = NULL;
                        size_t size = 0;
                        assert_int_equal(chunk_encode(ts, v, N, &data, &size), 0);
                        /* A constant on a regular grid costs its header only. */
                        if (regular)
                                assert_true(size < 32);
                        free(data);
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
        enum { N = 300 };
        int64_t ts[N];
        double v[N];
        for (int i = 0; i < N; i++) {
                ts[i] = 1700000000000 + 1000 * (int64_t) i;
                v[i] = 1e12 + 12345.0 * i;
        }
        uint8_t *data = NULL;
        size_t size = 0;
        assert_int_equal(chunk_encode(ts, v, N, &data, &size), 0);
        /* One bit per timestamp and one per value after the first few,
         * which carry the start, the interval and the rate in full. */
        assert_true(size < 40 + 2 * N / 8);
        free(data);
}

static void chunk_encode__bad_input__refused(void **state) {
        (void) state;
        int64_t ts[] = { 5, 5 };
        double v[] = { 1, 2 };
        uint8_t *data = NULL;
        size_t size = 0;
        assert_int_equal(chunk_encode(ts, v, 2, &data, &size), -EINVAL);
        assert_int_equal(chunk_encode(ts, v, 0, &data, &size), -EINVAL);
        uint8_t junk[16] = { 9 };
        assert_int_equal(chunk_count(junk, sizeof(junk)), -EBADMSG);
        assert_int_equal(chunk_count(junk, 3), -EBADMSG);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(chunk_encode__random_series__round_trips),
                cmocka_unit_test(chunk_encode__extreme_timestamps__round_trip),
                cmocka_unit_test(chunk_encode__regular_or_constant__round_trips_small),
                cmocka_unit_test(chunk_encode__steady_counter__is_small),
                cmocka_unit_test(chunk_encode__bad_input__refused),
        };
        return cmocka_run_group_tests_name("chunk", tests, NULL, NULL);
}
