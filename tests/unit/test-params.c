#include "config.h"

#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <string.h>

#include <cmocka.h>

#include "web/params.h"

#define NOW_MS 1700000000000LL

static void params_parse_time__unix_and_rfc3339__milliseconds(void **state) {
        static const struct {
                const char *text;
                int64_t ms;
        } cases[] = {
                { "0", 0 },
                { "1700000000", 1700000000000 },
                { "1700000000.5", 1700000000500 },
                { "1700000000.123456", 1700000000123 },
                { "2023-11-14T22:13:20Z", 1700000000000 },
                { "2023-11-14T22:13:20.250Z", 1700000000250 },
                { "2023-11-14T23:13:20+01:00", 1700000000000 },
                { "2023-11-14t22:13:20z", 1700000000000 },
                { "2024-02-29T00:00:00Z", 1709164800000 },
        };
        for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
                int64_t ms = -1;
                if (params_parse_time(cases[i].text, &ms) < 0)
                        fail_msg("'%s' refused", cases[i].text);
                assert_int_equal(ms, cases[i].ms);
        }
}

static void params_parse_time__malformed__einval(void **state) {
        static const char *const bad[] = {
                "",
                "-1",
                "abc",
                "1e9",
                "1700000000.",
                ".5",
                "NaN",
                "inf",
                "1700000000.1234567890",
                "99999999999999999999",
                "2023-11-14",
                "2023-11-14T22:13:20",
                "2023-13-01T00:00:00Z",
                "2023-02-30T00:00:00Z",
                "2023-11-14T25:00:00Z",
                "2023-11-14T22:13:20+1:00",
                "1969-12-31T23:59:59Z",
                "2023-11-14T22:13:20Zjunk",
                "0x10",
        };
        for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
                int64_t ms = 42;
                if (params_parse_time(bad[i], &ms) != -EINVAL)
                        fail_msg("'%s' accepted", bad[i]);
                assert_int_equal(ms, 42);
        }
}

static void params_parse_step__duration_or_seconds__milliseconds(void **state) {
        int64_t ms;
        assert_int_equal(params_parse_step("15s", &ms), 0);
        assert_int_equal(ms, 15000);
        assert_int_equal(params_parse_step("0.5", &ms), 0);
        assert_int_equal(ms, 500);
        assert_int_equal(params_parse_step("60", &ms), 0);
        assert_int_equal(ms, 60000);
        assert_int_equal(params_parse_step("0", &ms), -EINVAL);
        assert_int_equal(params_parse_step("0s", &ms), -EINVAL);
        assert_int_equal(params_parse_step("-5", &ms), -EINVAL);
        assert_int_equal(params_parse_step("fast", &ms), -EINVAL);
}

static int parse(const struct param *p, size_t n, struct history_query *q, char *err) {
        return params_parse_query_range(p, n, NOW_MS, q, err, 256);
}

static void params_parse_query_range__full__filled(void **state) {
        const struct param p[] = {
                { "metric", "neuroncore_utilization_ratio" },
                { "start", "1700000000" },
                { "end", "1700003600" },
                { "step", "60s" },
                { "agg", "max" },
                { "neuron_device", "3" },
        };
        struct history_query q;
        char err[256];

        assert_int_equal(parse(p, 6, &q, err), 0);
        assert_int_equal(q.metric, METRIC_CORE_UTILIZATION);
        assert_int_equal(q.start_ms, 1700000000000);
        assert_int_equal(q.end_ms, 1700003600000);
        assert_int_equal(q.step_ms, 60000);
        assert_int_equal(q.agg, HISTORY_AGG_MAX);
        assert_int_equal(q.n_matchers, 1);
        assert_string_equal(q.matchers[0].name, "neuron_device");
        assert_string_equal(q.matchers[0].value, "3");
}

static void params_parse_query_range__defaults__last_hour(void **state) {
        const struct param p[] = { { "metric", "neuron_device_memory_used_bytes" } };
        struct history_query q;
        char err[256];

        assert_int_equal(parse(p, 1, &q, err), 0);
        assert_int_equal(q.end_ms, NOW_MS);
        assert_int_equal(q.start_ms, NOW_MS - 3600000);
        assert_int_equal(q.agg, HISTORY_AGG_AVG);
        assert_true((q.end_ms - q.start_ms) / q.step_ms + 1 <= 251);
}

static void params_parse_query_range__bad__error_names_parameter(void **state) {
        static const struct {
                struct param p[3];
                size_t n;
                const char *needle;
        } cases[] = {
                { { { "start", "1" } }, 1, "'metric' is required" },
                { { { "metric", "nope_total" } }, 1, "unknown metric 'nope_total'" },
                { { { "metric", "neuroncore_utilization_ratio" }, { "start", "soon" } }, 2, "'start'" },
                { { { "metric", "neuroncore_utilization_ratio" }, { "end", "x" } }, 2, "'end'" },
                { { { "metric", "neuroncore_utilization_ratio" }, { "start", "200" }, { "end", "100" } },
                  3,
                  "start is after end" },
                { { { "metric", "neuroncore_utilization_ratio" }, { "step", "0" } }, 2, "'step'" },
                { { { "metric", "neuroncore_utilization_ratio" }, { "step", "1ms" } }, 2, "11000 points" },
                { { { "metric", "neuroncore_utilization_ratio" }, { "agg", "median" } }, 2, "'agg'" },
                { { { "metric", "neuroncore_utilization_ratio" }, { "peer_device", "1" } }, 2, "'peer_device'" },
                { { { "metric", "neuroncore_utilization_ratio" }, { "metric", "neuroncore_utilization_ratio" } },
                  2,
                  "more than once" },
        };
        for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
                struct history_query q;
                char err[256] = "";
                assert_int_equal(parse(cases[i].p, cases[i].n, &q, err), -EINVAL);
                if (!strstr(err, cases[i].needle))
                        fail_msg("case %zu: error '%s' does not mention '%s'", i, err, cases[i].needle);
        }
}

static void params_parse_query_range__long_value__einval(void **state) {
        char long_value[PARAMS_VALUE_MAX + 2];
        memset(long_value, '1', sizeof(long_value) - 1);
        long_value[sizeof(long_value) - 1] = '\0';
        const struct param p[] = { { "metric", "neuroncore_utilization_ratio" }, { "neuroncore", long_value } };
        struct history_query q;
        char err[256];
        assert_int_equal(parse(p, 2, &q, err), -EINVAL);
        assert_non_null(strstr(err, "'neuroncore'"));
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(params_parse_time__unix_and_rfc3339__milliseconds),
                cmocka_unit_test(params_parse_time__malformed__einval),
                cmocka_unit_test(params_parse_step__duration_or_seconds__milliseconds),
                cmocka_unit_test(params_parse_query_range__full__filled),
                cmocka_unit_test(params_parse_query_range__defaults__last_hour),
                cmocka_unit_test(params_parse_query_range__bad__error_names_parameter),
                cmocka_unit_test(params_parse_query_range__long_value__einval),
        };
        return cmocka_run_group_tests_name("params", tests, NULL, NULL);
}
