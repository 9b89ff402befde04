/* The shared parsers: what they take, and that anything else is refused
 * without touching the output. */
#include "config.h"

#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "lib/parse.h"

static void parse_duration_ms__units__milliseconds(void **state) {
        static const struct {
                const char *text;
                int64_t ms;
        } cases[] = {
                { "500ms", 500 },           { "1s", 1000 },      { "10s", 10000 },    { "5m", 300000 },
                { "1h", 3600000 },          { "2d", 172800000 }, { "1w", 604800000 }, { "1m30s", 90000 },
                { "1h0m5s250ms", 3605250 }, { "0s", 0 },
        };
        for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
                int64_t ms = -1;
                assert_int_equal(parse_duration_ms(cases[i].text, &ms), 0);
                assert_int_equal(ms, cases[i].ms);
        }
}

static void parse_duration_ms__malformed__einval(void **state) {
        static const char *const bad[] = {
                "",
                "10",
                "s",
                "1x",
                "1.5s",
                "-1s",
                " 1s",
                "1s ",
                "1 s",
                "1mss",
                "1sm",
                "ms",
                "99999999999999999999s",
                "9223372036854775807w",
        };
        for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
                int64_t ms = 42;
                assert_int_equal(parse_duration_ms(bad[i], &ms), -EINVAL);
                assert_int_equal(ms, 42);
        }
}

static void parse_u64__digits__value_or_erange(void **state) {
        uint64_t v = 0;
        assert_int_equal(parse_u64("0", 1, &v), 0);
        assert_int_equal(v, 0);
        assert_int_equal(parse_u64("18446744073709551615", 20, &v), 0);
        assert_true(v == UINT64_MAX);
        /* Only the span counts: the digits after it are not read. */
        assert_int_equal(parse_u64("12345", 3, &v), 0);
        assert_int_equal(v, 123);
        v = 7;
        assert_int_equal(parse_u64("18446744073709551616", 20, &v), -ERANGE);
        assert_int_equal(parse_u64("", 0, &v), -EINVAL);
        assert_int_equal(parse_u64("+1", 2, &v), -EINVAL);
        assert_int_equal(parse_u64(" 1", 2, &v), -EINVAL);
        assert_int_equal(parse_u64("0x1", 3, &v), -EINVAL);
        assert_int_equal(v, 7);
}

static void parse_uint_range__bounds__inclusive(void **state) {
        uint64_t v = 0;
        assert_int_equal(parse_uint_range("16", 16, 65536, &v), 0);
        assert_int_equal(v, 16);
        assert_int_equal(parse_uint_range("65536", 16, 65536, &v), 0);
        assert_int_equal(v, 65536);
        v = 7;
        assert_int_equal(parse_uint_range("15", 16, 65536, &v), -ERANGE);
        assert_int_equal(parse_uint_range("65537", 16, 65536, &v), -ERANGE);
        assert_int_equal(parse_uint_range("1e3", 16, 65536, &v), -EINVAL);
        assert_int_equal(parse_uint_range("", 0, 1, &v), -EINVAL);
        assert_int_equal(v, 7);
}

static void parse_seconds_ms__fractions__rounded_down(void **state) {
        static const struct {
                const char *text;
                int64_t ms;
        } cases[] = {
                { "0", 0 },
                { "15", 15000 },
                { "0.5", 500 },
                { "1.25", 1250 },
                { "1.2345", 1234 },
                { "1.999999999", 1999 },
                { "1700000000.250", 1700000000250LL },
        };
        for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
                int64_t ms = -1;
                assert_int_equal(parse_seconds_ms(cases[i].text, &ms), 0);
                assert_int_equal(ms, cases[i].ms);
        }
        static const char *const bad[] = { "", ".5", "1.", "-1", "1.0000000001", "1e3", "nan", "1234567890123456" };
        for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
                int64_t ms = 42;
                assert_int_equal(parse_seconds_ms(bad[i], &ms), -EINVAL);
                assert_int_equal(ms, 42);
        }
}

static void parse_size_bytes__units__powers_of_1024(void **state) {
        static const struct {
                const char *text;
                uint64_t bytes;
        } cases[] = {
                { "0", 0 },          { "1073741824", 1073741824 }, { "512K", 524288 },
                { "64M", 67108864 }, { "1G", 1073741824 },         { "2T", 2199023255552ULL },
        };
        for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
                uint64_t v = 1;
                assert_int_equal(parse_size_bytes(cases[i].text, &v), 0);
                assert_true(v == cases[i].bytes);
        }
        static const char *const bad[] = { "", "G", "1g", "1GB", "1.5G", "-1", "99999999999T", "1 G" };
        for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
                uint64_t v = 42;
                assert_int_equal(parse_size_bytes(bad[i], &v), -EINVAL);
                assert_int_equal(v, 42);
        }
}

static void parse_bool__every_spelling__parsed(void **state) {
        static const char *const yes[] = { "true", "yes", "on", "1" }, *const no[] = { "false", "no", "off", "0" };
        for (size_t i = 0; i < 4; i++) {
                bool b = false;
                assert_int_equal(parse_bool(yes[i], &b), 0);
                assert_true(b);
                assert_int_equal(parse_bool(no[i], &b), 0);
                assert_false(b);
        }
        bool b = true;
        assert_int_equal(parse_bool("TRUE", &b), -EINVAL);
        assert_int_equal(parse_bool("", &b), -EINVAL);
        assert_int_equal(parse_bool("y", &b), -EINVAL);
        assert_true(b);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(parse_duration_ms__units__milliseconds),
                cmocka_unit_test(parse_duration_ms__malformed__einval),
                cmocka_unit_test(parse_u64__digits__value_or_erange),
                cmocka_unit_test(parse_uint_range__bounds__inclusive),
                cmocka_unit_test(parse_seconds_ms__fractions__rounded_down),
                cmocka_unit_test(parse_size_bytes__units__powers_of_1024),
                cmocka_unit_test(parse_bool__every_spelling__parsed),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
