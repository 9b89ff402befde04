#include "config.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>

#include <cmocka.h>

#include "web/accept.h"

static void accept_format__prometheus_header__openmetrics(void **state) {
        /* What Prometheus 2.x sends by default. */
        assert_int_equal(accept_format("application/openmetrics-text;version=1.0.0,application/openmetrics-text;"
                                       "version=0.0.1;q=0.75,text/plain;version=0.0.4;q=0.5,*/*;q=0.1"),
                         ACCEPT_OPENMETRICS);
        /* With spaces, quoted version and upper case. */
        assert_int_equal(accept_format("Application/OpenMetrics-Text; version=\"1.0.0\"; q=0.9, text/plain; q=0.5"),
                         ACCEPT_OPENMETRICS);
}

static void accept_format__text_preferred__text(void **state) {
        /* scrape_protocols with PrometheusText first. */
        assert_int_equal(accept_format("text/plain;version=0.0.4;q=1,application/openmetrics-text;version=1.0.0;q=0.5"),
                         ACCEPT_TEXT);
        assert_int_equal(accept_format("application/openmetrics-text;version=1.0.0;q=0.2,text/plain;q=0.3"),
                         ACCEPT_TEXT);
}

static void accept_format__unusable__text(void **state) {
        assert_int_equal(accept_format(NULL), ACCEPT_TEXT);
        assert_int_equal(accept_format(""), ACCEPT_TEXT);
        assert_int_equal(accept_format("*/*"), ACCEPT_TEXT);
        assert_int_equal(accept_format("text/html"), ACCEPT_TEXT);
        /* A version we do not speak, and q=0 meaning "not acceptable". */
        assert_int_equal(accept_format("application/openmetrics-text;version=2.0.0"), ACCEPT_TEXT);
        assert_int_equal(accept_format("application/openmetrics-text;q=0,text/plain;q=0.1"), ACCEPT_TEXT);
        /* A malformed q drops that element only. */
        assert_int_equal(accept_format("application/openmetrics-text;q=abc"), ACCEPT_TEXT);
        assert_int_equal(accept_format("application/openmetrics-text;q=1.5"), ACCEPT_TEXT);
        assert_int_equal(accept_format(",,;;,application/openmetrics-text;q=0.001"), ACCEPT_OPENMETRICS);
}

static void accept_gzip__lists__as_rfc9110(void **state) {
        assert_true(accept_gzip("gzip"));
        assert_true(accept_gzip("deflate, gzip;q=0.5"));
        assert_true(accept_gzip("br, *"));
        assert_true(accept_gzip("x-gzip"));
        assert_false(accept_gzip(NULL));
        assert_false(accept_gzip(""));
        assert_false(accept_gzip("identity"));
        assert_false(accept_gzip("gzip;q=0"));
        assert_false(accept_gzip("*, gzip;q=0"));
        assert_false(accept_gzip("gzip;q=bad"));
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(accept_format__prometheus_header__openmetrics),
                cmocka_unit_test(accept_format__text_preferred__text),
                cmocka_unit_test(accept_format__unusable__text),
                cmocka_unit_test(accept_gzip__lists__as_rfc9110),
        };
        return cmocka_run_group_tests_name("accept", tests, NULL, NULL);
}
