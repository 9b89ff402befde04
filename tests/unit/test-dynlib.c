/* Loading a library when first needed, with the real libcurl the build
 * found (CURL_SONAME): its functions, and the errors for a library or a
 * function that is not there. */
#include "config.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <string.h>

#include <cmocka.h>

#include "lib/dynlib.h"

static void dynlib_load__libcurl__its_functions_called(void **state) {
        char *(*version)(void) = NULL;
        const struct dynlib_symbol symbols[] = { { "curl_version", (void **) &version } };
        char err[256] = "";

        assert_non_null(dynlib_load(CURL_SONAME, "libcurl", symbols, 1, err, sizeof(err)));
        assert_non_null(version);
        assert_memory_equal(version(), "libcurl/", 8);
        assert_string_equal(err, "");
}

static void dynlib_load__no_such_library__null_and_the_reason(void **state) {
        void *slot = NULL;
        const struct dynlib_symbol symbols[] = { { "curl_version", &slot } };
        char err[256] = "";

        assert_null(dynlib_load("libneurond-absent.so.0", "the absent library", symbols, 1, err, sizeof(err)));
        assert_memory_equal(err, "the absent library: ", 20);
        assert_non_null(strstr(err, "libneurond-absent.so.0"));
}

static void dynlib_load__no_such_function__null_and_its_name(void **state) {
        void *first = NULL, *second = NULL;
        const struct dynlib_symbol symbols[] = { { "curl_version", &first }, { "curl_no_such_function", &second } };
        char err[256] = "";

        assert_null(dynlib_load(CURL_SONAME, "libcurl", symbols, 2, err, sizeof(err)));
        assert_string_equal(err, "libcurl " CURL_SONAME " has no curl_no_such_function");
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(dynlib_load__libcurl__its_functions_called),
                cmocka_unit_test(dynlib_load__no_such_library__null_and_the_reason),
                cmocka_unit_test(dynlib_load__no_such_function__null_and_its_name),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
