#include "config.h"

#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "collectors/host.h"
#include "tests/unit/assert-double.h"

#define S(lit) (lit), (sizeof(lit) - 1)

static void host_parse_stat__kernel_format__ticks(void **state) {
        struct host_cpu_times t;
        assert_int_equal(host_parse_stat(S("cpu  10 2 30 400 5 6 7 8 0 0\ncpu0 5 1 15 200 2 3 3 4 0 0\nintr 1\n"), &t),
                         0);
        assert_true(t.ticks[HOST_CPU_USER] == 10 && t.ticks[HOST_CPU_NICE] == 2 && t.ticks[HOST_CPU_SYSTEM] == 30);
        assert_true(t.ticks[HOST_CPU_IDLE] == 400 && t.ticks[HOST_CPU_IOWAIT] == 5 && t.ticks[HOST_CPU_IRQ] == 6);
        assert_true(t.ticks[HOST_CPU_SOFTIRQ] == 7 && t.ticks[HOST_CPU_STEAL] == 8);
        /* Old kernels stop after idle; no trailing newline either. */
        assert_int_equal(host_parse_stat(S("cpu 1 2 3 4"), &t), 0);
        assert_true(t.ticks[HOST_CPU_IDLE] == 4 && t.ticks[HOST_CPU_STEAL] == 0);
}

static void host_parse_stat__bad_input__error(void **state) {
        struct host_cpu_times t = { .ticks = { 99 } };
        assert_int_equal(host_parse_stat(S(""), &t), -ENODATA);
        assert_int_equal(host_parse_stat(S("cpu0 1 2 3 4\n"), &t), -ENODATA);
        assert_int_equal(host_parse_stat(S("cpu 1 2 3\n"), &t), -EINVAL);
        assert_int_equal(host_parse_stat(S("cpu 1 2 x 4\n"), &t), -EINVAL);
        assert_int_equal(host_parse_stat(S("cpu 1 2 3 99999999999999999999999\n"), &t), -ERANGE);
        assert_true(t.ticks[0] == 99);
}

static void host_cpu_ratios__deltas__shares(void **state) {
        struct host_cpu_times a = { .ticks = { 10, 0, 10, 80 } }, b = { .ticks = { 40, 0, 20, 140 } };
        double r[HOST_CPU__COUNT];
        assert_int_equal(host_cpu_ratios(&a, &b, r), 0);
        assert_double_near(r[HOST_CPU_USER], 0.3, 1e-12);
        assert_double_near(r[HOST_CPU_SYSTEM], 0.1, 1e-12);
        assert_double_near(r[HOST_CPU_IDLE], 0.6, 1e-12);
        assert_int_equal(host_cpu_ratios(&b, &a, r), -ERANGE);
        assert_int_equal(host_cpu_ratios(&a, &a, r), -ENODATA);
}

static void host_parse_meminfo__kernel_format__bytes(void **state) {
        struct host_memory m;
        assert_int_equal(
                host_parse_meminfo(S("MemTotal:       16384 kB\nMemFree:  100 kB\nMemAvailable:    4096 kB\n"), &m), 0);
        assert_true(m.total_bytes == 16384ull * 1024 && m.available_bytes == 4096ull * 1024);
}

static void host_parse_meminfo__bad_input__error(void **state) {
        struct host_memory m = { 1, 1 };
        assert_int_equal(host_parse_meminfo(S("MemTotal: 16 kB\n"), &m), -ENODATA);
        assert_int_equal(host_parse_meminfo(S("MemTotal: 16 MB\nMemAvailable: 4 kB\n"), &m), -EINVAL);
        assert_int_equal(host_parse_meminfo(S("MemTotal: 16 kB\nMemAvailable: 32 kB\n"), &m), -ERANGE);
        assert_int_equal(host_parse_meminfo(S("MemTotal: kB\nMemAvailable: 4 kB\n"), &m), -EINVAL);
        assert_true(m.total_bytes == 1);
}

/* A fake procfs root with the two files. */
static char root[64];

static void put(const char *name, const char *contents) {
        char path[256];
        snprintf(path, sizeof(path), "%s/%s", root, name);
        FILE *f = fopen(path, "w");
        assert_non_null(f);
        fputs(contents, f);
        assert_int_equal(fclose(f), 0);
}

static int root_setup(void **state) {
        snprintf(root, sizeof(root), "/tmp/test-host-XXXXXX");
        return mkdtemp(root) ? 0 : -1;
}

static int root_teardown(void **state) {
        char cmd[128];
        snprintf(cmd, sizeof(cmd), "rm -rf '%s'", root);
        return system(cmd) == 0 ? 0 : -1;
}

static void host_read__fixture_root__series(void **state) {
        struct collector *c = NULL;
        char err[128];
        struct collector_args args = { .options = root, .err = err, .errlen = sizeof(err) };
        double v[HOST_CPU__COUNT + 2];
        uint8_t ok[HOST_CPU__COUNT + 2];
        struct sample_batch b = { .n = HOST_CPU__COUNT + 2, .values = v, .valid = ok };

        put("stat", "cpu  100 0 100 800 0 0 0 0 0 0\n");
        put("meminfo", "MemTotal: 1000 kB\nMemAvailable: 250 kB\n");
        assert_int_equal(host_collector_ops.probe(&args), 0);
        assert_int_equal(host_collector_ops.open(&args, &c), 0);
        assert_int_equal(c->inv.n_series, HOST_CPU__COUNT + 2);
        assert_int_equal(c->inv.series[HOST_CPU_IOWAIT].metric, METRIC_SYSTEM_VCPU_USAGE);
        assert_string_equal(c->inv.series[HOST_CPU_IOWAIT].label_values[0], "io_wait");

        memset(ok, 0, sizeof(ok));
        assert_int_equal(c->ops->read(c, 0, &b), 0);
        assert_false(ok[HOST_CPU_USER]); /* the first reading is a baseline */
        assert_true(ok[HOST_CPU__COUNT] && ok[HOST_CPU__COUNT + 1]);
        assert_double_near(v[HOST_CPU__COUNT], 750 * 1024, 0);
        assert_double_near(v[HOST_CPU__COUNT + 1], 1000 * 1024, 0);

        put("stat", "cpu  150 0 150 900 0 0 0 0 0 0\n");
        put("meminfo", "garbage\n");
        memset(ok, 0, sizeof(ok));
        assert_int_equal(c->ops->read(c, 0, &b), 1);
        assert_true(ok[HOST_CPU_USER]);
        assert_double_near(v[HOST_CPU_USER], 0.25, 1e-12);
        assert_double_near(v[HOST_CPU_IDLE], 0.5, 1e-12);
        assert_false(ok[HOST_CPU__COUNT]);
        assert_false(ok[HOST_CPU__COUNT + 1]);

        /* Nothing readable: a failed read, so neurond_collector_up says 0. */
        put("stat", "garbage\n");
        memset(ok, 0, sizeof(ok));
        assert_int_equal(c->ops->read(c, 0, &b), -EIO);
        for (size_t i = 0; i < HOST_CPU__COUNT + 2; i++)
                assert_false(ok[i]);
        collector_close(c);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(host_parse_stat__kernel_format__ticks),
                cmocka_unit_test(host_parse_stat__bad_input__error),
                cmocka_unit_test(host_cpu_ratios__deltas__shares),
                cmocka_unit_test(host_parse_meminfo__kernel_format__bytes),
                cmocka_unit_test(host_parse_meminfo__bad_input__error),
                cmocka_unit_test_setup_teardown(host_read__fixture_root__series, root_setup, root_teardown),
        };
        return cmocka_run_group_tests_name("host", tests, NULL, NULL);
}
