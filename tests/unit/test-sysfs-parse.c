#include "config.h"

#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "collectors/sysfs.h"
#include "tests/unit/assert-double.h"

#define S(lit) (lit), (sizeof(lit) - 1)

static void sysfs_parse_u64__driver_format__value(void **state) {
        uint64_t v = 0;
        assert_int_equal(sysfs_parse_u64(S("1234\n"), &v), 0);
        assert_int_equal(v, 1234);
        assert_int_equal(sysfs_parse_u64(S("18446744073709551615\n"), &v), 0);
        assert_true(v == UINT64_MAX);
}

static void sysfs_parse_u64__no_trailing_newline__value(void **state) {
        uint64_t v = 0;
        assert_int_equal(sysfs_parse_u64(S("42"), &v), 0);
        assert_int_equal(v, 42);
}

static void sysfs_parse_u64__empty__enodata(void **state) {
        uint64_t v = 7;
        assert_int_equal(sysfs_parse_u64(S(""), &v), -ENODATA);
        assert_int_equal(sysfs_parse_u64(S("\n"), &v), -ENODATA);
        assert_int_equal(v, 7);
}

static void sysfs_parse_u64__garbage__einval(void **state) {
        uint64_t v = 7;
        assert_int_equal(sysfs_parse_u64(S("-1\n"), &v), -EINVAL);
        assert_int_equal(sysfs_parse_u64(S(" 1\n"), &v), -EINVAL);
        assert_int_equal(sysfs_parse_u64(S("1 \n"), &v), -EINVAL);
        assert_int_equal(sysfs_parse_u64(S("12\n\n"), &v), -EINVAL);
        assert_int_equal(sysfs_parse_u64(S("0x10\n"), &v), -EINVAL);
        assert_int_equal(sysfs_parse_u64("1\0002", 3, &v), -EINVAL);
        assert_int_equal(v, 7);
}

static void sysfs_parse_u64__overflow__erange(void **state) {
        uint64_t v = 7;
        assert_int_equal(sysfs_parse_u64(S("18446744073709551616\n"), &v), -ERANGE);
        assert_int_equal(v, 7);
}

static void sysfs_parse_string__line__copied_without_newline(void **state) {
        char out[16];
        assert_int_equal(sysfs_parse_string(S("Trainium1\n"), out, sizeof(out)), 0);
        assert_string_equal(out, "Trainium1");
        assert_int_equal(sysfs_parse_string(S("NDv2"), out, sizeof(out)), 0);
        assert_string_equal(out, "NDv2");
}

static void sysfs_parse_string__not_utf8__replacement_character(void **state) {
        char out[16];
        assert_int_equal(sysfs_parse_string(S("Tr\xe4inium\n"), out, sizeof(out)), 0);
        assert_string_equal(out, "Tr\xef\xbf\xbdinium");
        /* What no longer fits once replaced does not fit, and out is left as it was. */
        assert_int_equal(sysfs_parse_string(S("\xff\xff\xff\xff\xff\xff"), out, sizeof(out)), -ERANGE);
        assert_string_equal(out, "Tr\xef\xbf\xbdinium");
}

static void sysfs_parse_string__bad_input__error(void **state) {
        char out[8] = "keep";
        /* The driver prints "\n" when it cannot read the serial number. */
        assert_int_equal(sysfs_parse_string(S("\n"), out, sizeof(out)), -ENODATA);
        assert_int_equal(sysfs_parse_string(S("a\nb\n"), out, sizeof(out)), -EINVAL);
        assert_int_equal(sysfs_parse_string(S("a\tb"), out, sizeof(out)), -EINVAL);
        assert_int_equal(sysfs_parse_string(S("12345678\n"), out, sizeof(out)), -ERANGE);
        assert_string_equal(out, "keep");
}

static void sysfs_parse_power__valid__fields(void **state) {
        struct sysfs_power p;
        assert_int_equal(sysfs_parse_power(S("POWER_STATUS_VALID,1763700000,21.50,48.25,35.75\n"), &p), 0);
        assert_int_equal(p.status, SYSFS_POWER_VALID);
        assert_true(p.epoch_seconds == 1763700000);
        assert_double_near(p.min, 21.5, 1e-9);
        assert_double_near(p.max, 48.25, 1e-9);
        assert_double_near(p.avg, 35.75, 1e-9);
}

static void sysfs_parse_power__other_status__parsed_with_status(void **state) {
        struct sysfs_power p;
        assert_int_equal(sysfs_parse_power(S("POWER_STATUS_NO_DATA,0,0.00,0.00,0.00\n"), &p), 0);
        assert_int_equal(p.status, SYSFS_POWER_NO_DATA);
        assert_int_equal(sysfs_parse_power(S("POWER_STATUS_INVALID,5,0.00,0.00,0.00"), &p), 0);
        assert_int_equal(p.status, SYSFS_POWER_INVALID);
}

static void sysfs_parse_power__malformed__einval(void **state) {
        struct sysfs_power p = { .status = SYSFS_POWER_INVALID, .avg = -1 };
        assert_int_equal(sysfs_parse_power(S(""), &p), -ENODATA);
        assert_int_equal(sysfs_parse_power(S("POWER_STATUS_BOGUS,1,1,1,1\n"), &p), -EINVAL);
        assert_int_equal(sysfs_parse_power(S("POWER_STATUS_VALID,1,1,1\n"), &p), -EINVAL);
        assert_int_equal(sysfs_parse_power(S("POWER_STATUS_VALID,1,1,1,1,1\n"), &p), -EINVAL);
        assert_int_equal(sysfs_parse_power(S("POWER_STATUS_VALID,1,nan,1,1\n"), &p), -EINVAL);
        assert_int_equal(sysfs_parse_power(S("POWER_STATUS_VALID,1,1.,1,1\n"), &p), -EINVAL);
        assert_int_equal(sysfs_parse_power(S("POWER_STATUS_VALID,,1,1,1\n"), &p), -EINVAL);
        assert_double_near(p.avg, -1, 0);
}

static void sysfs_parse_pe_counters__rows__summed(void **state) {
        struct sysfs_pe_counters c;
        assert_int_equal(sysfs_parse_pe_counters(S("xrow_grp,mm_active,wl_active,idle\n0,10,20,30\n1,1,2,3\n"), &c), 0);
        assert_true(c.mm_active == 11 && c.wl_active == 22 && c.idle == 33);
        /* The last row without its newline still counts. */
        assert_int_equal(sysfs_parse_pe_counters(S("xrow_grp,mm_active,wl_active,idle\n0,1,2,3"), &c), 0);
        assert_true(c.mm_active == 1 && c.wl_active == 2 && c.idle == 3);
}

static void sysfs_parse_pe_counters__bad_input__error(void **state) {
        struct sysfs_pe_counters c = { 9, 9, 9 };
        assert_int_equal(sysfs_parse_pe_counters(S(""), &c), -ENODATA);
        assert_int_equal(sysfs_parse_pe_counters(S("xrow_grp,mm_active,wl_active,idle\n"), &c), -ENODATA);
        assert_int_equal(sysfs_parse_pe_counters(S("0,1,2,3\n"), &c), -EINVAL);
        assert_int_equal(sysfs_parse_pe_counters(S("xrow_grp,mm_active,wl_active,idle\n0,1,2\n"), &c), -EINVAL);
        /* A torn read: row 1 is missing. */
        assert_int_equal(sysfs_parse_pe_counters(S("xrow_grp,mm_active,wl_active,idle\n0,1,2,3\n2,1,2,3\n"), &c),
                         -EINVAL);
        assert_int_equal(sysfs_parse_pe_counters(S("xrow_grp,mm_active,wl_active,idle\n0,1,2,3\n\n"), &c), -EINVAL);
        assert_int_equal(sysfs_parse_pe_counters(S("xrow_grp,mm_active,wl_active,idle\n"
                                                   "0,18446744073709551615,0,0\n1,1,0,0\n"),
                                                 &c),
                         -ERANGE);
        assert_true(c.mm_active == 9);
}

static void sysfs_busy_ratio__deltas__ratio(void **state) {
        struct sysfs_pe_counters a = { 100, 50, 50 }, b = { 400, 100, 150 };
        double r = -1;
        assert_int_equal(sysfs_busy_ratio(&a, &b, &r), 0);
        assert_double_near(r, 300.0 / 450.0, 1e-12);
}

static void sysfs_busy_ratio__backwards_or_idle__error(void **state) {
        struct sysfs_pe_counters a = { 100, 50, 50 }, cleared = { 10, 60, 60 };
        double r = -1;
        assert_int_equal(sysfs_busy_ratio(&a, &cleared, &r), -ERANGE);
        assert_int_equal(sysfs_busy_ratio(&a, &a, &r), -ENODATA);
        assert_double_near(r, -1, 0);
}

static void sysfs_parse_device_name__names__index(void **state) {
        unsigned v = 99;
        assert_int_equal(sysfs_parse_device_name("neuron0", &v), 0);
        assert_int_equal(v, 0);
        assert_int_equal(sysfs_parse_device_name("neuron15", &v), 0);
        assert_int_equal(v, 15);
        assert_int_equal(sysfs_parse_device_name("neuron", &v), -EINVAL);
        assert_int_equal(sysfs_parse_device_name("neuron01", &v), -EINVAL);
        assert_int_equal(sysfs_parse_device_name("neuron_core0", &v), -EINVAL);
        assert_int_equal(sysfs_parse_device_name("neuron99999999", &v), -EINVAL);
        assert_int_equal(v, 15);
}

static void sysfs_parse_node_id__driver_output__node_or_error(void **state) {
        int v = 99;
        assert_int_equal(sysfs_parse_node_id("3\n", 2, &v), 0);
        assert_int_equal(v, 3);
        assert_int_equal(sysfs_parse_node_id("-1\n", 3, &v), 0);
        assert_int_equal(v, -1);
        assert_int_equal(sysfs_parse_node_id("busy\n", 5, &v), -EBUSY);
        assert_int_equal(sysfs_parse_node_id("\n", 1, &v), -ENODATA);
        assert_int_equal(sysfs_parse_node_id("invalid\n", 8, &v), -EINVAL);
        assert_int_equal(sysfs_parse_node_id("-2\n", 3, &v), -EINVAL);
        assert_int_equal(sysfs_parse_node_id("99999\n", 6, &v), -EINVAL);
        assert_int_equal(v, -1);
}

static void sysfs_parse_server_id__driver_output__hex_or_error(void **state) {
        char id[17] = "";
        assert_int_equal(sysfs_parse_server_id("00000000DEADbeef\n", 17, id, sizeof(id)), 0);
        assert_string_equal(id, "00000000deadbeef");
        assert_int_equal(sysfs_parse_server_id("busy\n", 5, id, sizeof(id)), -EBUSY);
        assert_int_equal(sysfs_parse_server_id("\n", 1, id, sizeof(id)), -ENODATA);
        assert_int_equal(sysfs_parse_server_id("0x000000deadbeef\n", 17, id, sizeof(id)), -EINVAL);
        assert_int_equal(sysfs_parse_server_id("00000000deadbeef0\n", 18, id, sizeof(id)), -EINVAL);
        assert_int_equal(sysfs_parse_server_id("00000000deadbeef\n", 17, id, 16), -EINVAL);
        assert_string_equal(id, "00000000deadbeef");
}

static void sysfs_parse_ultraserver_modes__lists__mask_or_error(void **state) {
        unsigned m = 99;
        assert_int_equal(sysfs_parse_ultraserver_modes("1,2,3,4\n", 8, &m), 0);
        assert_int_equal(m, 0x1e);
        assert_int_equal(sysfs_parse_ultraserver_modes("4\n", 2, &m), 0);
        assert_int_equal(m, 0x10);
        assert_int_equal(sysfs_parse_ultraserver_modes("\n", 1, &m), 0);
        assert_int_equal(m, 0);
        assert_int_equal(sysfs_parse_ultraserver_modes("busy\n", 5, &m), -EBUSY);
        static const char *const bad[] = { "1,\n", ",1\n", "1,,2\n", "12\n", "5\n", "0\n", "1 ,2\n", "1;2\n" };
        for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
                if (sysfs_parse_ultraserver_modes(bad[i], strlen(bad[i]), &m) != -EINVAL)
                        fail_msg("'%s' was accepted", bad[i]);
        assert_int_equal(m, 0);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(sysfs_parse_u64__driver_format__value),
                cmocka_unit_test(sysfs_parse_u64__no_trailing_newline__value),
                cmocka_unit_test(sysfs_parse_u64__empty__enodata),
                cmocka_unit_test(sysfs_parse_u64__garbage__einval),
                cmocka_unit_test(sysfs_parse_u64__overflow__erange),
                cmocka_unit_test(sysfs_parse_string__line__copied_without_newline),
                cmocka_unit_test(sysfs_parse_string__not_utf8__replacement_character),
                cmocka_unit_test(sysfs_parse_string__bad_input__error),
                cmocka_unit_test(sysfs_parse_power__valid__fields),
                cmocka_unit_test(sysfs_parse_power__other_status__parsed_with_status),
                cmocka_unit_test(sysfs_parse_power__malformed__einval),
                cmocka_unit_test(sysfs_parse_pe_counters__rows__summed),
                cmocka_unit_test(sysfs_parse_pe_counters__bad_input__error),
                cmocka_unit_test(sysfs_busy_ratio__deltas__ratio),
                cmocka_unit_test(sysfs_busy_ratio__backwards_or_idle__error),
                cmocka_unit_test(sysfs_parse_device_name__names__index),
                cmocka_unit_test(sysfs_parse_node_id__driver_output__node_or_error),
                cmocka_unit_test(sysfs_parse_server_id__driver_output__hex_or_error),
                cmocka_unit_test(sysfs_parse_ultraserver_modes__lists__mask_or_error),
        };
        return cmocka_run_group_tests_name("sysfs-parse", tests, NULL, NULL);
}
