#include "config.h"

#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

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
        assert_int_equal(t.vcpus, 1);
        /* Old kernels stop after idle; no trailing newline either. */
        assert_int_equal(host_parse_stat(S("cpu 1 2 3 4"), &t), 0);
        assert_true(t.ticks[HOST_CPU_IDLE] == 4 && t.ticks[HOST_CPU_STEAL] == 0);
        assert_int_equal(t.vcpus, 0);
}

/* system_vcpu_count: the exporter counts neuron-monitor's per-vCPU entries,
 * one per "cpuN" line; the count stops at the first other line. */
static void host_parse_stat__cpu_lines__vcpu_count(void **state) {
        struct host_cpu_times t;
        assert_int_equal(host_parse_stat(S("cpu  1 0 1 8\ncpu0 1 0 1 4\ncpu1 0 0 0 4\ncpu12 0 0 0 0\n"
                                           "intr 5 cpu3 0\nctxt 7\n"),
                                         &t),
                         0);
        assert_int_equal(t.vcpus, 3);
        /* A head of the file cut inside a cpu line still counts that line. */
        assert_int_equal(host_parse_stat(S("cpu  1 0 1 8\ncpu0 1 0 1 4\ncpu1 0"), &t), 0);
        assert_int_equal(t.vcpus, 2);
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

/* The exporter's aggregation (neuron-monitor-prometheus.py,
 * process_vcpu_usage): user = user + nice, system = system + io_wait + irq +
 * soft_irq, each a share of all the time that passed. */
static void host_cpu_usage__deltas__exporter_types(void **state) {
        struct host_cpu_times a = { .ticks = { 10, 0, 10, 80, 0, 0, 0, 0 } };
        struct host_cpu_times b = { .ticks = { 40, 10, 20, 120, 5, 2, 3, 0 } };
        struct host_cpu_usage u;
        /* 100 ticks passed: 30 + 10 user, 10 + 5 + 2 + 3 system, 40 idle. */
        assert_int_equal(host_cpu_usage(&a, &b, &u), 0);
        assert_double_near(u.user, 0.4, 1e-12);
        assert_double_near(u.system, 0.2, 1e-12);
        assert_int_equal(host_cpu_usage(&b, &a, &u), -ERANGE);
        assert_int_equal(host_cpu_usage(&a, &a, &u), -ENODATA);
}

static void host_parse_meminfo__kernel_format__bytes(void **state) {
        struct host_memory m;
        assert_int_equal(
                host_parse_meminfo(S("MemTotal:       16384 kB\nMemFree:  100 kB\nMemAvailable:    4096 kB\n"), &m), 0);
        assert_true(m.total_bytes == 16384ull * 1024 && m.available_bytes == 4096ull * 1024);
        assert_false(m.has_swap);
        assert_int_equal(host_parse_meminfo(S("MemTotal: 16 kB\nMemAvailable: 4 kB\nSwapTotal: 2048 kB\n"
                                              "SwapFree: 512 kB\n"),
                                            &m),
                         0);
        assert_true(m.has_swap && m.swap_total_bytes == 2048ull * 1024 && m.swap_free_bytes == 512ull * 1024);
}

static void host_parse_meminfo__bad_input__error(void **state) {
        struct host_memory m = { .total_bytes = 1, .available_bytes = 1 };
        assert_int_equal(host_parse_meminfo(S("MemTotal: 16 kB\n"), &m), -ENODATA);
        assert_int_equal(host_parse_meminfo(S("MemTotal: 16 MB\nMemAvailable: 4 kB\n"), &m), -EINVAL);
        assert_int_equal(host_parse_meminfo(S("MemTotal: 16 kB\nMemAvailable: 32 kB\n"), &m), -ERANGE);
        assert_int_equal(host_parse_meminfo(S("MemTotal: kB\nMemAvailable: 4 kB\n"), &m), -EINVAL);
        assert_int_equal(
                host_parse_meminfo(S("MemTotal: 16 kB\nMemAvailable: 4 kB\nSwapTotal: 1 kB\nSwapFree: 2 kB\n"), &m),
                -ERANGE);
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

/* Index of the host series of metric with label value v (NULL: none). */
static size_t find(const struct collector *c, enum metric_id metric, const char *v) {
        for (size_t i = 0; i < c->inv.n_series; i++)
                if (c->inv.series[i].metric == metric && (!v || strcmp(c->inv.series[i].label_values[0], v) == 0))
                        return i;
        fail_msg("no series %s{%s}", metric_table[metric].name, v ? v : "");
        return 0;
}

static void host_read__fixture_root__series(void **state) {
        struct collector *c = NULL;
        char err[128];
        struct collector_args args = { .options = root, .err = err, .errlen = sizeof(err) };
        double v[32];
        uint8_t ok[32];

        put("stat", "cpu  100 0 100 800 0 0 0 0 0 0\ncpu0 50 0 50 400 0 0 0 0 0 0\ncpu1 50 0 50 400 0 0 0 0 0 0\n");
        put("meminfo", "MemTotal: 1000 kB\nMemAvailable: 250 kB\nSwapTotal: 100 kB\nSwapFree: 40 kB\n");
        assert_int_equal(host_collector_ops.probe(&args), 0);
        assert_int_equal(host_collector_ops.open(&args, &c), 0);
        /* vCPU count, 2 usage types, 8 modes, memory and swap used and total. */
        assert_int_equal(c->inv.n_series, 1 + 2 + HOST_CPU__COUNT + 4);
        struct sample_batch b = { .n = c->inv.n_series, .values = v, .valid = ok };
        size_t count = find(c, METRIC_SYSTEM_VCPU_COUNT, NULL), user = find(c, METRIC_SYSTEM_VCPU_USAGE, "user");
        size_t system = find(c, METRIC_SYSTEM_VCPU_USAGE, "system");
        size_t iowait = find(c, METRIC_SYSTEM_VCPU_SECONDS, "io_wait"),
               idle = find(c, METRIC_SYSTEM_VCPU_SECONDS, "idle");
        size_t used = find(c, METRIC_SYSTEM_MEMORY_USED, NULL), total = find(c, METRIC_SYSTEM_MEMORY_TOTAL, NULL);
        size_t swap = find(c, METRIC_SYSTEM_SWAP_USED, NULL), swap_total = find(c, METRIC_SYSTEM_SWAP_TOTAL, NULL);
        double hz = (double) sysconf(_SC_CLK_TCK);

        memset(ok, 0, sizeof(ok));
        assert_int_equal(c->ops->read(c, 0, &b), 0);
        assert_false(ok[user]); /* the first reading is a baseline */
        assert_true(ok[count] && v[count] == 2);
        assert_true(ok[idle] && ok[iowait]);
        assert_double_near(v[idle], 800 / hz, 1e-12);
        assert_true(ok[used] && ok[total] && ok[swap] && ok[swap_total]);
        assert_double_near(v[used], 750 * 1024, 0);
        assert_double_near(v[total], 1000 * 1024, 0);
        assert_double_near(v[swap], 60 * 1024, 0);
        assert_double_near(v[swap_total], 100 * 1024, 0);

        put("stat", "cpu  150 0 150 900 0 0 0 0 0 0\n");
        put("meminfo", "garbage\n");
        memset(ok, 0, sizeof(ok));
        assert_int_equal(c->ops->read(c, 0, &b), 1);
        assert_true(ok[user] && ok[system]);
        assert_double_near(v[user], 0.25, 1e-12);
        assert_double_near(v[system], 0.25, 1e-12);
        assert_false(ok[count]); /* no cpuN lines: unknown, not 0 */
        assert_false(ok[used] || ok[total] || ok[swap]);

        /* Nothing readable: a failed read, so neurond_collector_up says 0. */
        put("stat", "garbage\n");
        memset(ok, 0, sizeof(ok));
        assert_int_equal(c->ops->read(c, 0, &b), -EIO);
        for (size_t i = 0; i < c->inv.n_series; i++)
                assert_false(ok[i]);
        collector_close(c);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(host_parse_stat__kernel_format__ticks),
                cmocka_unit_test(host_parse_stat__bad_input__error),
                cmocka_unit_test(host_parse_stat__cpu_lines__vcpu_count),
                cmocka_unit_test(host_cpu_usage__deltas__exporter_types),
                cmocka_unit_test(host_parse_meminfo__kernel_format__bytes),
                cmocka_unit_test(host_parse_meminfo__bad_input__error),
                cmocka_unit_test_setup_teardown(host_read__fixture_root__series, root_setup, root_teardown),
        };
        return cmocka_run_group_tests_name("host", tests, NULL, NULL);
}
