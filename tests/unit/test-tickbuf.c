#include "config.h"

#include <errno.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "storage/tickbuf.h"

/* Series 0 a gauge, series 1 a counter. */
static const struct series_desc two_series[] = {
        { .metric = METRIC_CORE_UTILIZATION, .label_values = { "0", "0" } },
        { .metric = METRIC_CORE_EXECUTION_STATUS, .label_values = { "0", "0", "success" } },
};

static void push(struct tickbuf *b, int64_t ts, double gauge, double counter, uint8_t valid_counter, int want) {
        const double v[2] = { gauge, counter };
        const uint8_t ok[2] = { 1, valid_counter };
        assert_int_equal(tickbuf_push(b, ts, v, ok), want);
}

static void tickbuf_init__two_series__copied_and_empty(void **state) {
        struct tickbuf b;
        assert_int_equal(tickbuf_init(&b, two_series, 2, 4, 2), 0);
        assert_int_equal(b.n_series, 2);
        assert_int_equal(b.n_ticks, 0);
        assert_int_equal(b.cap_ticks, 4);
        assert_memory_equal(b.series, two_series, sizeof(two_series));
        assert_int_equal(b.is_gauge[0], 1);
        assert_int_equal(b.is_gauge[1], 0);
        tickbuf_free(&b);
        assert_null(b.ts);
        tickbuf_free(&b);
        tickbuf_free(NULL);
}

static void tickbuf_push__full__drops_oldest_and_says_so(void **state) {
        struct tickbuf b;
        assert_int_equal(tickbuf_init(&b, two_series, 2, 3, 0), 0);
        push(&b, 1000, 0.5, 1, 1, 0);
        push(&b, 2000, 0.5, 2, 1, 0);
        push(&b, 3000, 0.5, 3, 1, 0);
        b.n_durable = 2;
        push(&b, 4000, 0.5, 4, 0, 1);
        assert_int_equal(b.n_ticks, 3);
        assert_int_equal(b.n_durable, 1);
        assert_int_equal(b.ts[0], 2000);
        assert_int_equal(b.ts[2], 4000);
        assert_true(b.values[0 * 2 + 1] == 2);
        assert_int_equal(b.valid[2 * 2 + 1], 0);
        tickbuf_free(&b);
}

static void tickbuf_push__fractional_gauge__kept_to_24_bits_or_as_decimal(void **state) {
        struct tickbuf b;
        const double third = 1.0 / 3.0, big_whole = 123456789012.0;
        assert_int_equal(tickbuf_init(&b, two_series, 2, 8, 8), 0);
        push(&b, 1000, third, third, 1, 0);
        push(&b, 2000, big_whole, 1, 1, 0);
        push(&b, 3000, NAN, INFINITY, 1, 0);
        push(&b, 4000, 0.8612, 0.1234567, 1, 0);
        /* The gauge: the float nearest 1/3; the counter: exact. */
        assert_true(b.values[0] == (double) (1.0f / 3.0f));
        assert_true(b.values[1] == third);
        assert_true(b.values[2] == big_whole);
        assert_true(isnan(b.values[4]));
        assert_true(isinf(b.values[5]));
        /* A decimal of up to 6 places stays as it is. */
        assert_true(b.values[6] == 0.8612);
        assert_true(b.values[7] == 0.1234567);
        tickbuf_free(&b);
}

static void tickbuf_drop_front__some__keeps_the_newest(void **state) {
        struct tickbuf b;
        assert_int_equal(tickbuf_init(&b, two_series, 2, 8, 8), 0);
        for (int t = 1; t <= 5; t++)
                push(&b, t * 1000, 0.25, t, 1, 0);
        b.n_durable = 5;
        tickbuf_drop_front(&b, 3);
        assert_int_equal(b.n_ticks, 2);
        assert_int_equal(b.n_durable, 2);
        assert_int_equal(b.ts[0], 4000);
        assert_true(b.values[1] == 4 && b.values[3] == 5);
        tickbuf_drop_front(&b, 2);
        assert_int_equal(b.n_ticks, 0);
        assert_int_equal(b.n_durable, 0);
        tickbuf_free(&b);
}

static void tickbuf_gather__invalid_and_out_of_window__left_out(void **state) {
        struct tickbuf b;
        int64_t ts[8];
        double v[8];
        assert_int_equal(tickbuf_init(&b, two_series, 2, 8, 8), 0);
        for (int t = 1; t <= 6; t++)
                push(&b, t * 1000, 0.25, t, t != 3, 0);
        /* Ticks 1..4 of 6, timestamps [2000, 5000): 2000 and 4000 (3000 is invalid). */
        assert_int_equal(tickbuf_gather(&b, 1, 1, 5, 2000, 5000, ts, v), 2);
        assert_int_equal(ts[0], 2000);
        assert_int_equal(ts[1], 4000);
        assert_true(v[0] == 2 && v[1] == 4);
        assert_int_equal(tickbuf_gather(&b, 0, 0, 6, INT64_MIN, INT64_MAX, ts, v), 6);
        tickbuf_free(&b);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(tickbuf_init__two_series__copied_and_empty),
                cmocka_unit_test(tickbuf_push__full__drops_oldest_and_says_so),
                cmocka_unit_test(tickbuf_push__fractional_gauge__kept_to_24_bits_or_as_decimal),
                cmocka_unit_test(tickbuf_drop_front__some__keeps_the_newest),
                cmocka_unit_test(tickbuf_gather__invalid_and_out_of_window__left_out),
        };
        return cmocka_run_group_tests_name("tickbuf", tests, NULL, NULL);
}
