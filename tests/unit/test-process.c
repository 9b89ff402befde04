/* neurond's own process figures: the /proc/self/stat parser, and a read of
 * the running test process. */
#include "config.h"

#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

#include <cmocka.h>

#include "lib/process.h"

#define S(lit) (lit), (sizeof(lit) - 1)

static void process_parse_stat__kernel_format__fields(void **state) {
        struct process_stat_fields f;
        /* A command with a space and parentheses of its own. */
        assert_int_equal(process_parse_stat(S("4242 (neu (rond) x) S 1 4242 4242 0 -1 4194560 1200 0 3 0 "
                                              "150 75 0 0 20 0 3 0 98765 168693760 2206 18446744073709551615\n"),
                                            &f),
                         0);
        assert_true(f.utime == 150 && f.stime == 75 && f.starttime == 98765);
        assert_true(f.vsize == 168693760 && f.rss == 2206);
}

static void process_parse_stat__bad_input__einval(void **state) {
        struct process_stat_fields f = { .utime = 7 };
        assert_int_equal(process_parse_stat(S("4242 no parenthesis S 1"), &f), -EINVAL);
        assert_int_equal(process_parse_stat(S("4242 (x) S 1 2"), &f), -EINVAL);
        assert_int_equal(process_parse_stat(S("1 (x) S 1 1 1 0 -1 0 0 0 0 0 x 75 0 0 20 0 3 0 9 1 2"), &f), -EINVAL);
        assert_true(f.utime == 7);
}

static void process_stats_read__this_process__plausible(void **state) {
        struct process_stats ps;
        assert_int_equal(process_stats_read(&ps), 0);
        /* Started in the last day, holding stdin, stdout and stderr at least. */
        double now = (double) time(NULL);
        assert_true(ps.start_time <= now + 1 && ps.start_time > now - 86400);
        assert_true(ps.open_fds >= 3 && ps.open_fds <= ps.max_fds);
        assert_true(ps.resident_bytes > 0 && ps.virtual_bytes >= ps.resident_bytes);
        assert_true(ps.cpu_seconds >= 0);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(process_parse_stat__kernel_format__fields),
                cmocka_unit_test(process_parse_stat__bad_input__einval),
                cmocka_unit_test(process_stats_read__this_process__plausible),
        };
        return cmocka_run_group_tests_name("process", tests, NULL, NULL);
}
