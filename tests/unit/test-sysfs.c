#include "config.h"

#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "collectors/sysfs.h"
#include "tests/unit/assert-double.h"

#define DEV "devices/virtual/neuron_device/"

/* The tree under test: a fixture, or a scratch copy for the cases that damage it. */
static char root[512];
static char scratch[256];

static const char *fixture(const char *name) {
        const char *top = getenv("top_srcdir");
        snprintf(root, sizeof(root), "%s/tests/data/%s", top ? top : ".", name);
        return root;
}

static void rm_rf(const char *path) {
        char cmd[1024];
        snprintf(cmd, sizeof(cmd), "rm -rf '%s'", path);
        assert_int_equal(system(cmd), 0);
}

/* Copies a fixture into a fresh scratch directory and points root at it. */
static const char *scratch_copy(const char *name) {
        char cmd[2048];
        snprintf(scratch, sizeof(scratch), "/tmp/test-sysfs-XXXXXX");
        assert_non_null(mkdtemp(scratch));
        /* make distcheck hands us a read-only source tree. */
        snprintf(cmd, sizeof(cmd), "cp -R '%s/.' '%s' && chmod -R u+w '%s'", fixture(name), scratch, scratch);
        assert_int_equal(system(cmd), 0);
        snprintf(root, sizeof(root), "%s", scratch);
        return root;
}

static int scratch_teardown(void **state) {
        if (scratch[0])
                rm_rf(scratch);
        scratch[0] = '\0';
        return 0;
}

static void put(const char *rel, const char *contents) {
        char path[1024];
        snprintf(path, sizeof(path), "%s/%s", root, rel);
        FILE *f = fopen(path, "w");
        assert_non_null(f);
        fputs(contents, f);
        assert_int_equal(fclose(f), 0);
}

static struct collector *open_root(const char *r) {
        struct collector *c = NULL;
        char spec[600], err[256];
        snprintf(spec, sizeof(spec), "sysfs:%s", r);
        int ret = collector_open_spec(spec, &c, err, sizeof(err));
        if (ret < 0)
                fail_msg("open %s: %s", spec, err);
        return c;
}

/* Index of the series with these labels (NULL: any value), or -1. */
static long find4(const struct collector *c, enum metric_id m, const char *l0, const char *l1, const char *l2,
                  const char *l3) {
        const char *want[4] = { l0, l1, l2, l3 };
        for (size_t i = 0; i < c->inv.n_series; i++) {
                const struct series_desc *s = &c->inv.series[i];
                bool ok = s->metric == m;
                for (int k = 0; k < 4 && ok; k++)
                        ok = !want[k] || strcmp(s->label_values[k], want[k]) == 0;
                if (ok)
                        return (long) i;
        }
        return -1;
}

static long find(const struct collector *c, enum metric_id m, const char *l0, const char *l1, const char *l2) {
        return find4(c, m, l0, l1, l2, NULL);
}

static size_t count(const struct collector *c, enum metric_id m) {
        size_t n = 0;
        for (size_t i = 0; i < c->inv.n_series; i++)
                n += c->inv.series[i].metric == m;
        return n;
}

struct tick {
        double *values;
        uint8_t *valid;
        int ret;
};

static struct tick tick_at(struct collector *c, int64_t now_ms) {
        size_t n = c->inv.n_series;
        struct tick t = { calloc(n, sizeof(double)), calloc(n, 1), 0 };
        struct sample_batch b = { .n = n, .values = t.values, .valid = t.valid };
        assert_non_null(t.values);
        assert_non_null(t.valid);
        t.ret = c->ops->read(c, now_ms, &b);
        return t;
}

static struct tick tick(struct collector *c) {
        return tick_at(c, 0);
}

static void tick_free(struct tick *t) {
        free(t->values);
        free(t->valid);
}

static void assert_value(const struct tick *t, long i, double v) {
        assert_true(i >= 0);
        assert_true(t->valid[i]);
        assert_double_near(t->values[i], v, 1e-9);
}

static void assert_absent(const struct tick *t, long i) {
        assert_true(i >= 0);
        assert_false(t->valid[i]);
}

static void sysfs_open__trn1_tree__inventory(void **state) {
        struct collector *c = open_root(fixture("trn1"));
        const struct inventory *inv = &c->inv;
        assert_int_equal(inv->n_devices, 2);
        assert_string_equal(inv->instance_type, "trn1.32xlarge");
        assert_string_equal(inv->driver_version, "2.19.64.0");
        assert_int_equal(inv->devices[0].index, 0);
        assert_int_equal(inv->devices[1].index, 3);
        assert_string_equal(inv->devices[1].name, "Trainium1");
        assert_string_equal(inv->devices[1].arch, "NDv2");
        assert_string_equal(inv->devices[1].core_arch, "NCv2");
        assert_string_equal(inv->devices[1].serial, "0000001234abcd03");
        assert_int_equal(inv->devices[1].core_count, 2);
        assert_int_equal(inv->devices[1].first_core, 2);
        assert_true(inv->devices[1].memory_bytes == 34359738368ull);
        /* What the driver does not expose has no series at all. */
        assert_int_equal(count(c, METRIC_DEVICE_DMA_BYTES), 0);
        assert_int_equal(count(c, METRIC_DEVICE_HBM_BYTES), 0);
        assert_int_equal(count(c, METRIC_LINK_TX_BYTES), 0);
        assert_int_equal(count(c, METRIC_LINK_RX_BYTES), 0);
        assert_int_equal(count(c, METRIC_CORE_UTILIZATION), 4);
        assert_int_equal(count(c, METRIC_CORE_MEMORY_CATEGORY), 4 * 11);
        /* neuron-monitor's five runtime memory kinds are five of the categories. */
        assert_int_equal(count(c, METRIC_CORE_MEMORY_TENSORS), 4);
        /* The driver's counters under their names, and the six outcomes and
         * two error types that are neuron-monitor's. */
        assert_int_equal(count(c, METRIC_CORE_DRIVER_STATUS), 4 * 24);
        assert_int_equal(count(c, METRIC_CORE_EXECUTION_STATUS), 4 * 6);
        assert_int_equal(count(c, METRIC_CORE_EXECUTION_ERRORS), 4 * 2);
        assert_int_equal(count(c, METRIC_DEVICE_ECC_EVENTS), 2 * 3);
        assert_true(find(c, METRIC_CORE_DRIVER_STATUS, "3", "3", "execute_completed_with_num_error") >= 0);
        assert_true(find4(c, METRIC_CORE_EXECUTION_STATUS, "3", "3", "", "completed_with_num_err") >= 0);
        /* The driver knows of no runtimes. */
        assert_int_equal(inv->n_runtimes, 0);
        assert_int_equal(inv->lnc, 1);
        collector_close(c);
}

static void sysfs_read__trn1_tree__values(void **state) {
        struct collector *c = open_root(fixture("trn1"));
        struct tick t = tick(c);
        assert_int_equal(t.ret, 0);
        assert_value(&t, find(c, METRIC_DEVICE_UP, "3", NULL, NULL), 1);
        /* Per-device HBM is the sum of its cores' device_mem/total. */
        assert_value(&t, find(c, METRIC_CORE_MEMORY_USED, "3", "2", NULL), 1019215872);
        assert_value(&t, find(c, METRIC_CORE_MEMORY_USED, "3", "3", NULL), 1266679808);
        assert_value(&t, find(c, METRIC_DEVICE_MEMORY_USED, "3", NULL, NULL), 1019215872.0 + 1266679808.0);
        assert_value(&t, find(c, METRIC_DEVICE_MEMORY_TOTAL, "0", NULL, NULL), 34359738368.0);
        assert_value(&t, find(c, METRIC_CORE_MEMORY_CATEGORY, "0", "1", "tensors"), 192937984);
        assert_value(&t, find(c, METRIC_CORE_DRIVER_STATUS, "0", "1", "success"), 2017);
        assert_value(&t, find4(c, METRIC_CORE_EXECUTION_STATUS, "0", "1", "", "completed"), 2017);
        assert_value(&t, find4(c, METRIC_CORE_EXECUTION_STATUS, "0", "1", "", "timed_out"), 2);
        assert_value(&t, find4(c, METRIC_CORE_EXECUTION_ERRORS, "0", "1", "", "hardware"), 0);
        assert_value(&t, find(c, METRIC_CORE_MEMORY_TENSORS, "0", "1", ""), 192937984);
        assert_value(&t, find(c, METRIC_DEVICE_ECC_EVENTS, "3", "mem_ecc_uncorrected", NULL), 3);
        /* Power: only POWER_STATUS_VALID counts; neuron3 says INVALID. */
        assert_value(&t, find(c, METRIC_DEVICE_POWER_UTILIZATION, "0", NULL, NULL), 0.5);
        assert_absent(&t, find(c, METRIC_DEVICE_POWER_UTILIZATION, "3", NULL, NULL));
        /* The busy ratio needs two readings. */
        assert_absent(&t, find(c, METRIC_CORE_UTILIZATION, "0", "0", NULL));
        tick_free(&t);
        collector_close(c);
}

static void sysfs_open__inf1_tree__no_v2_series(void **state) {
        struct collector *c = open_root(fixture("inf1"));
        assert_int_equal(c->inv.devices[0].core_count, 4);
        assert_string_equal(c->inv.devices[0].serial, "");
        assert_int_equal(count(c, METRIC_CORE_UTILIZATION), 0);
        assert_int_equal(count(c, METRIC_DEVICE_ECC_EVENTS), 0);
        assert_int_equal(count(c, METRIC_DEVICE_POWER_UTILIZATION), 0);
        assert_int_equal(count(c, METRIC_CORE_MEMORY_USED), 4);
        collector_close(c);
}

static void sysfs_open__unknown_chip__capacity_absent(void **state) {
        scratch_copy("inf2");
        put(DEV "neuron0/info/architecture/device_name", "Mystery9\n");
        struct collector *c = open_root(root);
        assert_true(c->inv.devices[0].memory_bytes == 0);
        assert_int_equal(count(c, METRIC_DEVICE_MEMORY_TOTAL), 0);
        collector_close(c);
}

/* Moves the driver's device directory of the scratch tree aside (away)
 * or back. */
static void devices_away(bool away) {
        char dir[600], aside[600];
        snprintf(dir, sizeof(dir), "%s/" DEV, scratch);
        snprintf(aside, sizeof(aside), "%s/neuron_device.aside", scratch);
        assert_int_equal(rename(away ? dir : aside, away ? aside : dir), 0);
}

static void assert_reason(const struct collector *c, const char *want) {
        if (!strstr(c->inv.backend_reason, want))
                fail_msg("backend_reason '%s' does not say '%s'", c->inv.backend_reason, want);
}

/* No driver loaded, or one that lists no device: the collector opens with
 * nothing to poll and says why; its reads succeed with no series. */
static void sysfs_open__no_devices__empty_with_reason(void **state) {
        char dir[600];
        scratch_copy("inf2");
        snprintf(dir, sizeof(dir), "%s/" DEV "neuron0", scratch);
        rm_rf(dir);
        struct collector *c = open_root(root);
        assert_int_equal(c->inv.n_devices, 0);
        assert_int_equal(c->inv.n_series, 0);
        assert_int_equal(c->inv.lnc, 0);
        assert_reason(c, "/devices/virtual/neuron_device lists no device (Neuron driver ");
        struct tick t = tick(c);
        assert_int_equal(t.ret, 0);
        tick_free(&t);
        collector_close(c);

        /* No device directory at all: the driver is not loaded, unless the
         * module says it is. */
        devices_away(true);
        c = open_root(root);
        assert_int_equal(c->inv.n_devices, 0);
        assert_reason(c, "/devices/virtual/neuron_device is missing, though the Neuron driver ");
        collector_close(c);
        snprintf(dir, sizeof(dir), "%s/module", scratch);
        rm_rf(dir);
        c = open_root(root);
        assert_reason(c, "/devices/virtual/neuron_device is missing: is the Neuron driver loaded?");
        collector_close(c);

        char err[256];
        struct collector_args args = { .options = root, .err = err, .errlen = sizeof(err) };
        assert_int_equal(sysfs_collector_ops.probe(&args), -ENODEV);
        assert_non_null(strstr(err, "is the Neuron driver loaded?"));
}

/* The driver loads after the daemon started: refresh takes the devices in
 * and says so (1); unchanged, it says 0; when every device is gone it
 * forgets them, and says so once. */
static void sysfs_refresh__driver_comes_and_goes__inventory_follows(void **state) {
        scratch_copy("trn1");
        devices_away(true);
        struct collector *c = open_root(root);
        assert_int_equal(c->inv.n_devices, 0);
        assert_int_equal(c->ops->refresh(c, 0), 0);
        assert_int_equal(c->inv.n_series, 0);

        devices_away(false);
        assert_int_equal(c->ops->refresh(c, 1000), 1);
        assert_int_equal(c->inv.n_devices, 2);
        assert_int_equal(c->inv.devices[1].index, 3);
        assert_string_equal(c->inv.backend_reason, "");
        assert_string_equal(c->inv.driver_version, "2.19.64.0");
        assert_string_equal(c->inv.instance_type, "trn1.32xlarge");
        long up3 = find(c, METRIC_DEVICE_UP, "3", NULL, NULL);
        assert_true(up3 >= 0);
        assert_true(count(c, METRIC_CORE_UTILIZATION) > 0);
        assert_int_equal(c->ops->refresh(c, 2000), 0);
        struct tick t = tick_at(c, 2000);
        assert_int_equal(t.ret, 0);
        assert_value(&t, up3, 1);
        tick_free(&t);

        devices_away(true);
        assert_int_equal(c->ops->refresh(c, 3000), 1);
        assert_int_equal(c->inv.n_devices, 0);
        assert_int_equal(c->inv.n_series, 0);
        assert_string_equal(c->inv.instance_type, "");
        assert_reason(c, "is missing, though the Neuron driver 2.19.64.0 is loaded");
        t = tick_at(c, 3000);
        assert_int_equal(t.ret, 0);
        tick_free(&t);
        assert_int_equal(c->ops->refresh(c, 4000), 0);

        /* Back again: the same inventory as a fresh open's. */
        devices_away(false);
        assert_int_equal(c->ops->refresh(c, 5000), 1);
        struct collector *fresh = open_root(root);
        assert_int_equal(c->inv.n_series, fresh->inv.n_series);
        assert_int_equal(memcmp(c->inv.series, fresh->inv.series, c->inv.n_series * sizeof(*c->inv.series)), 0);
        collector_close(fresh);
        collector_close(c);
}

/* Devices that appear but cannot be taken in (lnc=2 on Trainium1, which
 * at open would be a usage error) are no devices, with the reason, said
 * once; the next refresh tries again. */
static void sysfs_refresh__devices_that_do_not_fit__none_with_reason(void **state) {
        struct collector *c = NULL;
        char spec[600], err[256];
        scratch_copy("trn1");
        devices_away(true);
        snprintf(spec, sizeof(spec), "sysfs:%s,lnc=2", root);
        assert_int_equal(collector_open_spec(spec, &c, err, sizeof(err)), 0);
        devices_away(false);
        assert_int_equal(c->ops->refresh(c, 0), 1);
        assert_int_equal(c->inv.n_devices, 0);
        assert_int_equal(c->inv.n_series, 0);
        assert_reason(c, "lnc=2 needs NeuronCore-v3 or later; Trainium1 has NCv2");
        assert_int_equal(c->ops->refresh(c, 1000), 0);
        collector_close(c);
}

static void sysfs_open__missing_root__einval(void **state) {
        struct collector *c = NULL;
        char err[256];
        /* The root is a setting: a bad one is a usage error; no driver under
         * a good one is not (it may load later). */
        assert_int_equal(collector_open_spec("sysfs:/nonexistent-root", &c, err, sizeof(err)), -EINVAL);
        assert_non_null(strstr(err, "the root /nonexistent-root: No such file or directory"));
        assert_int_equal(collector_open_spec("sysfs:/dev/null", &c, err, sizeof(err)), -EINVAL);
        assert_null(c);
        /* For a probe, no root is no driver. */
        struct collector_args args = { .options = "/nonexistent-root", .err = err, .errlen = sizeof(err) };
        assert_int_equal(sysfs_collector_ops.probe(&args), -ENODEV);
}

static void sysfs_probe__fixture__usable(void **state) {
        char err[256];
        struct collector_args args = { .options = fixture("trn2"), .err = err, .errlen = sizeof(err) };
        assert_int_equal(sysfs_collector_ops.probe(&args), 0);
        assert_non_null(strstr(err, "lists 1 devices"));
}

static void sysfs_read__pe_counters__ratio_and_reset(void **state) {
        const char *pe = DEV "neuron0/neuron_core0/stats/tensor_engine/pe_cntrs";
        scratch_copy("inf2");
        put(pe, "xrow_grp,mm_active,wl_active,idle\n0,100,0,100\n");
        struct collector *c = open_root(root);
        long u = find(c, METRIC_CORE_UTILIZATION, "0", "0", NULL);
        struct tick t = tick(c);
        assert_absent(&t, u);
        tick_free(&t);

        put(pe, "xrow_grp,mm_active,wl_active,idle\n0,400,0,200\n");
        t = tick(c);
        assert_value(&t, u, 0.75);
        tick_free(&t);

        /* Cleared by root: absent this tick, a new baseline. */
        put(pe, "xrow_grp,mm_active,wl_active,idle\n0,10,0,10\n");
        t = tick(c);
        assert_absent(&t, u);
        tick_free(&t);

        put(pe, "xrow_grp,mm_active,wl_active,idle\n0,20,0,40\n");
        t = tick(c);
        assert_value(&t, u, 0.25);
        tick_free(&t);

        /* Garbage breaks the chain; two good readings recover it. */
        put(pe, "xrow_grp,mm_active\ngarbage");
        t = tick(c);
        assert_absent(&t, u);
        assert_true(t.ret > 0);
        tick_free(&t);
        put(pe, "xrow_grp,mm_active,wl_active,idle\n0,30,0,40\n");
        t = tick(c);
        assert_absent(&t, u);
        tick_free(&t);
        put(pe, "xrow_grp,mm_active,wl_active,idle\n0,40,0,40\n");
        t = tick(c);
        assert_value(&t, u, 1.0);
        tick_free(&t);
        collector_close(c);
}

/* Busy time: each valid ratio times the interval since the previous read,
 * to the microsecond; a baseline or a broken chain adds nothing. */
static void sysfs_read__pe_counters__busy_seconds_ratio_times_interval(void **state) {
        const char *pe = DEV "neuron0/neuron_core0/stats/tensor_engine/pe_cntrs";
        scratch_copy("inf2");
        put(pe, "xrow_grp,mm_active,wl_active,idle\n0,100,0,100\n");
        struct collector *c = open_root(root);
        long busy = find(c, METRIC_CORE_BUSY_SECONDS, "0", "0", NULL);
        assert_int_equal(count(c, METRIC_CORE_BUSY_SECONDS), count(c, METRIC_CORE_UTILIZATION));
        struct tick t = tick_at(c, 1000);
        assert_absent(&t, busy);
        tick_free(&t);

        put(pe, "xrow_grp,mm_active,wl_active,idle\n0,400,0,200\n");
        t = tick_at(c, 2000);
        assert_value(&t, busy, 0.75);
        tick_free(&t);

        put(pe, "xrow_grp,mm_active,wl_active,idle\n0,500,0,500\n");
        t = tick_at(c, 17000);
        assert_value(&t, busy, 0.75 + 0.25 * 15);
        tick_free(&t);

        /* Garbage: absent, then a baseline; the sum goes on from there. */
        put(pe, "garbage");
        t = tick_at(c, 18000);
        assert_absent(&t, busy);
        tick_free(&t);
        put(pe, "xrow_grp,mm_active,wl_active,idle\n0,600,0,600\n");
        t = tick_at(c, 19000);
        assert_absent(&t, busy);
        tick_free(&t);
        put(pe, "xrow_grp,mm_active,wl_active,idle\n0,601,0,602\n");
        t = tick_at(c, 19500);
        /* To the microsecond: 1/3 of 0.5 s is 166,667 us. */
        assert_value(&t, busy, 0.75 + 3.75 + 0.166667);
        assert_true(t.values[busy] == 4.666667);
        tick_free(&t);
        collector_close(c);
}

static void sysfs_read__damaged_files__series_absent_then_recover(void **state) {
        const char *mem = DEV "neuron0/neuron_core1/stats/memory_usage/device_mem/total";
        const char *ecc = DEV "neuron0/stats/hardware/sram_ecc_uncorrected";
        char path[1024];
        scratch_copy("inf2");
        struct collector *c = open_root(root);
        long core1 = find(c, METRIC_CORE_MEMORY_USED, "0", "1", NULL);
        long core0 = find(c, METRIC_CORE_MEMORY_USED, "0", "0", NULL);
        long dev = find(c, METRIC_DEVICE_MEMORY_USED, "0", NULL, NULL);
        long e = find(c, METRIC_DEVICE_ECC_EVENTS, "0", "sram_ecc_uncorrected", NULL);
        const char *bad[] = { "", "\n", "12abc\n", "-5\n", "99999999999999999999999\n" };

        for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
                put(mem, bad[i]);
                struct tick t = tick(c);
                assert_true(t.ret > 0);
                assert_absent(&t, core1);
                /* A partial sum would be a wrong figure: the device sum goes too. */
                assert_absent(&t, dev);
                assert_true(t.valid[core0]);
                /* The reason names the file, for the daemon's debug log. */
                assert_non_null(strstr(c->reason, "neuron_core1/stats/memory_usage/device_mem/total: "));
                tick_free(&t);
        }
        snprintf(path, sizeof(path), "%s/%s", root, ecc);
        assert_int_equal(unlink(path), 0);
        put(mem, "4096");
        struct tick t = tick(c);
        assert_absent(&t, e);
        assert_value(&t, core1, 4096);
        assert_value(&t, dev, t.values[core0] + 4096);
        tick_free(&t);
        put(ecc, "7\n");
        t = tick(c);
        assert_int_equal(t.ret, 0);
        assert_value(&t, e, 7);
        assert_string_equal(c->reason, "");
        tick_free(&t);
        /* A counter cleared by root: absent for a tick, then counts from the new value. */
        put(ecc, "2\n");
        t = tick(c);
        assert_int_equal(t.ret, 1);
        assert_absent(&t, e);
        assert_non_null(strstr(c->reason, "went backwards"));
        tick_free(&t);
        put(ecc, "3\n");
        t = tick(c);
        assert_int_equal(t.ret, 0);
        assert_value(&t, e, 3);
        tick_free(&t);
        collector_close(c);
}

/* Replaces root/rel with a FIFO, which no one writes. */
static void make_fifo(const char *rel) {
        char path[1024];
        snprintf(path, sizeof(path), "%s/%s", root, rel);
        assert_int_equal(unlink(path), 0);
        assert_int_equal(mkfifo(path, 0600), 0);
}

static void sysfs_open__fifos_and_devices__absent_without_blocking(void **state) {
        const char *n3 = DEV "neuron3/";
        char path[1024], target[1024];
        scratch_copy("trn1");
        make_fifo(SYSFS_VERSION_FILE);
        make_fifo(DEV "neuron3/info/architecture/device_name");
        make_fifo(DEV "neuron3/info/serial_number");
        make_fifo(DEV "neuron3/neuron_core0/info/architecture/arch_type");
        make_fifo(DEV "neuron3/neuron_core1/stats/tensor_engine/pe_cntrs");
        /* A counter that reads as an endless stream of zeros. */
        snprintf(path, sizeof(path), "%s/%sstats/hardware/sram_ecc_uncorrected", root, n3);
        assert_int_equal(unlink(path), 0);
        assert_int_equal(symlink("/dev/zero", path), 0);

        /* Each of these would block open() or read() for ever: refused,
         * they cost no time. A hang is killed by the alarm, a failure. */
        alarm(10);
        struct collector *c = open_root(root);
        const struct inventory *inv = &c->inv;
        assert_string_equal(inv->driver_version, "");
        assert_string_equal(inv->devices[1].name, "");
        assert_string_equal(inv->devices[1].serial, "");
        assert_string_equal(inv->devices[1].core_arch, "");
        assert_string_equal(inv->devices[1].arch, "NDv2");
        long busy = find(c, METRIC_CORE_UTILIZATION, "3", "3", NULL);
        long ecc = find(c, METRIC_DEVICE_ECC_EVENTS, "3", "sram_ecc_uncorrected", NULL);
        long mem = find(c, METRIC_CORE_MEMORY_USED, "3", "3", NULL);
        for (int i = 0; i < 2; i++) {
                struct tick t = tick(c);
                assert_true(t.ret > 0);
                assert_absent(&t, busy);
                assert_absent(&t, ecc);
                assert_true(t.valid[mem]);
                tick_free(&t);
        }
        /* A reader that holds the FIFO open changes nothing. */
        snprintf(target, sizeof(target), "%s/%sneuron_core1/stats/tensor_engine/pe_cntrs", root, n3);
        int fd = open(target, O_RDWR | O_NONBLOCK);
        assert_true(fd >= 0);
        struct tick t = tick(c);
        assert_absent(&t, busy);
        assert_non_null(strstr(c->reason, "Invalid argument"));
        tick_free(&t);
        close(fd);
        collector_close(c);
        alarm(0);
}

static void sysfs_read__device_vanishes__down_then_back(void **state) {
        char from[1024], to[1024];
        scratch_copy("trn1");
        struct collector *c = open_root(root);
        long up3 = find(c, METRIC_DEVICE_UP, "3", NULL, NULL), up0 = find(c, METRIC_DEVICE_UP, "0", NULL, NULL);
        long mem3 = find(c, METRIC_DEVICE_MEMORY_USED, "3", NULL, NULL);
        long total3 = find(c, METRIC_DEVICE_MEMORY_TOTAL, "3", NULL, NULL);
        long mem0 = find(c, METRIC_DEVICE_MEMORY_USED, "0", NULL, NULL);
        snprintf(from, sizeof(from), "%s/" DEV "neuron3", root);
        snprintf(to, sizeof(to), "%s/gone", root);
        assert_int_equal(rename(from, to), 0);
        struct tick t = tick(c);
        assert_int_equal(t.ret, 0);
        assert_value(&t, up3, 0);
        assert_value(&t, up0, 1);
        assert_absent(&t, mem3);
        assert_absent(&t, total3);
        assert_true(t.valid[mem0]);
        tick_free(&t);

        /* Every device gone: the read as a whole fails. */
        snprintf(from, sizeof(from), "%s/" DEV "neuron0", root);
        snprintf(to, sizeof(to), "%s/gone0", root);
        assert_int_equal(rename(from, to), 0);
        t = tick(c);
        assert_int_equal(t.ret, -ENODEV);
        tick_free(&t);
        assert_int_equal(rename(to, from), 0);

        snprintf(from, sizeof(from), "%s/gone", root);
        snprintf(to, sizeof(to), "%s/" DEV "neuron3", root);
        assert_int_equal(rename(from, to), 0);
        t = tick(c);
        assert_int_equal(t.ret, 0);
        assert_value(&t, up3, 1);
        assert_true(t.valid[mem3]);
        tick_free(&t);
        collector_close(c);
}

/* neuron-monitor's execution outcomes and error types from the driver's
 * counters of the same datastore entries; the types the driver keeps but
 * sysfs does not show (numerical, transient, model, runtime) are absent. */
static void sysfs_read__status_counters__ecosystem_outcomes_and_errors(void **state) {
        const char *st = DEV "neuron3/neuron_core1/stats/status";
        char path[1024];
        scratch_copy("trn1");
        snprintf(path, sizeof(path), "%s/hw_error/total", st);
        put(path, "2\n");
        snprintf(path, sizeof(path), "%s/generic_error/total", st);
        put(path, "5\n");
        snprintf(path, sizeof(path), "%s/execute_failed_to_queue/total", st);
        put(path, "7\n");
        snprintf(path, sizeof(path), "%s/hw_hbm_ue_error/total", st);
        put(path, "1\n");
        struct collector *c = open_root(root);
        struct tick t = tick(c);
        assert_int_equal(t.ret, 0);
        /* Host-wide core 3 is neuron3's core 1. */
        assert_value(&t, find4(c, METRIC_CORE_EXECUTION_ERRORS, "3", "3", "", "hardware"), 2);
        assert_value(&t, find4(c, METRIC_CORE_EXECUTION_ERRORS, "3", "3", "", "generic"), 5);
        assert_value(&t, find4(c, METRIC_CORE_EXECUTION_STATUS, "3", "3", "", "failed_to_queue"), 7);
        assert_value(&t, find(c, METRIC_CORE_DRIVER_STATUS, "3", "3", "hw_hbm_ue_error"), 1);
        static const char *const hidden[] = { "numerical", "transient", "model", "runtime" };
        for (size_t i = 0; i < 4; i++)
                assert_int_equal(find4(c, METRIC_CORE_EXECUTION_ERRORS, NULL, NULL, NULL, hidden[i]), -1);
        tick_free(&t);
        collector_close(c);
}

/* Trainium2: LNC 2 by default, as the runtime and tools; a logical core
 * is a pair of physical core directories, with the pair as a breakdown. */
static void sysfs_read__trn2_tree__logical_cores_of_two(void **state) {
        const char *pe0 = DEV "neuron0/neuron_core2/stats/tensor_engine/pe_cntrs";
        const char *pe1 = DEV "neuron0/neuron_core3/stats/tensor_engine/pe_cntrs";
        scratch_copy("trn2");
        put(pe0, "xrow_grp,mm_active,wl_active,idle\n0,100,0,100\n");
        put(pe1, "xrow_grp,mm_active,wl_active,idle\n0,100,0,100\n");
        struct collector *c = open_root(root);
        const struct inventory *inv = &c->inv;
        assert_int_equal(inv->lnc, 2);
        assert_int_equal(inv->devices[0].core_count, 4);
        assert_int_equal(inv->devices[0].physical_core_count, 8);
        assert_int_equal(count(c, METRIC_CORE_UTILIZATION), 4);
        assert_int_equal(count(c, METRIC_CORE_PHYSICAL_UTILIZATION), 8);
        assert_int_equal(count(c, METRIC_CORE_MEMORY_USED), 4);
        long u = find(c, METRIC_CORE_UTILIZATION, "0", "1", NULL);
        long p2 = find(c, METRIC_CORE_PHYSICAL_UTILIZATION, "0", "1", "2");
        long p3 = find(c, METRIC_CORE_PHYSICAL_UTILIZATION, "0", "1", "3");
        long mem = find(c, METRIC_CORE_MEMORY_USED, "0", "1", NULL);
        struct tick t = tick(c);
        /* Logical core 1: physical cores 2 and 3, their memory added. */
        assert_value(&t, mem, 1220542464.0 + 1048576000.0);
        assert_absent(&t, u);
        tick_free(&t);
        put(pe0, "xrow_grp,mm_active,wl_active,idle\n0,400,0,200\n");
        put(pe1, "xrow_grp,mm_active,wl_active,idle\n0,200,0,400\n");
        t = tick(c);
        assert_value(&t, p2, 0.75);
        assert_value(&t, p3, 0.25);
        assert_value(&t, u, 0.5);
        tick_free(&t);
        collector_close(c);

        /* lnc=1 in the spec: every physical core is a NeuronCore. */
        char spec[600], err[256];
        snprintf(spec, sizeof(spec), "sysfs:%s,lnc=1", root);
        assert_int_equal(collector_open_spec(spec, &c, err, sizeof(err)), 0);
        assert_int_equal(c->inv.lnc, 1);
        assert_int_equal(count(c, METRIC_CORE_UTILIZATION), 8);
        assert_int_equal(count(c, METRIC_CORE_PHYSICAL_UTILIZATION), 0);
        collector_close(c);
        snprintf(spec, sizeof(spec), "sysfs:%s,lnc=3", root);
        assert_int_equal(collector_open_spec(spec, &c, err, sizeof(err)), -EINVAL);
        assert_non_null(strstr(err, "lnc"));
        /* Trainium1 has no logical cores of two. */
        snprintf(spec, sizeof(spec), "sysfs:%s,lnc=2", fixture("trn1"));
        assert_int_equal(collector_open_spec(spec, &c, err, sizeof(err)), -EINVAL);
        assert_non_null(strstr(err, "NeuronCore-v3"));
}

static void sysfs_capacity_for__catalog__bytes_or_enoent(void **state) {
        uint64_t v = 0;
        assert_int_equal(sysfs_capacity_for("Trainium1", &v), 0);
        assert_true(v == 34359738368ull);
        assert_int_equal(sysfs_capacity_for("NoSuchChip", &v), -ENOENT);
}

/* "auto" never chooses the model: it is sysfs with the default root, which
 * without a driver has no devices and says why. */
static void collector_open_spec__auto__sysfs_never_the_model(void **state) {
        struct collector *c = NULL;
        char err[256];
        assert_int_equal(collector_open_spec("auto", &c, err, sizeof(err)), 0);
        assert_string_equal(c->ops->name, "sysfs");
        assert_string_equal(c->inv.backend, "sysfs:/sys");
        if (access("/sys/" SYSFS_DEVICE_DIR, F_OK) != 0) {
                assert_int_equal(c->inv.n_devices, 0);
                assert_reason(c, "/sys/" SYSFS_DEVICE_DIR " is missing");
        }
        collector_close(c);
        assert_int_equal(collector_open_spec("auto:/tmp", &c, err, sizeof(err)), -EINVAL);
        assert_non_null(strstr(err, "backend 'auto' takes no options"));
        assert_int_equal(collector_open_spec("simulate", &c, err, sizeof(err)), -EINVAL);
        assert_non_null(strstr(err, "expected sysfs[:<root>], or model:<instance> for the device model"));
}

#define CLASS "class/neuron_device/"

/* The driver's class-level UltraServer files: this host is node 2 of a
 * 4-node UltraServer (the 4-node files win over the 2-node ones). */
static void sysfs_open__ultraserver_files__identity(void **state) {
        struct collector *c = open_root(fixture("trn2u"));
        const struct ultraserver_identity *us = &c->inv.ultraserver;
        assert_string_equal(us->id, "5a0c3e91d2b84f07");
        assert_int_equal(us->node, 2);
        assert_int_equal(us->nodes, 4);
        assert_int_equal(us->modes, 1u << 1 | 1u << 2 | 1u << 3 | 1u << 4);
        assert_string_equal(us->error, "");
        collector_close(c);
        /* No class files (an older driver): no UltraServer, no complaint. */
        c = open_root(fixture("trn2"));
        assert_int_equal(c->inv.ultraserver.nodes, 0);
        assert_string_equal(c->inv.ultraserver.error, "");
        collector_close(c);
}

/* What a host outside any UltraServer reads (v2/neuron_dhal_v2.c), and a
 * 2-node one. */
static void sysfs_open__ultraserver_none_or_two__identity(void **state) {
        scratch_copy("trn2u");
        put(CLASS "node_id_4", "-1\n");
        put(CLASS "server_id_4", "0000000000000000\n");
        put(CLASS "node_id_2", "-1\n");
        put(CLASS "ultraserver_mode", "\n");
        struct collector *c = open_root(root);
        assert_int_equal(c->inv.ultraserver.nodes, 0);
        assert_int_equal(c->inv.ultraserver.modes, 0);
        assert_string_equal(c->inv.ultraserver.error, "");
        collector_close(c);
        put(CLASS "node_id_2", "1\n");
        put(CLASS "server_id_2", "5A0C3E91D2B84F08\n");
        c = open_root(root);
        assert_string_equal(c->inv.ultraserver.id, "5a0c3e91d2b84f08");
        assert_int_equal(c->inv.ultraserver.node, 1);
        assert_int_equal(c->inv.ultraserver.nodes, 2);
        collector_close(c);
}

/* Bad contents: the daemon opens, with no UltraServer and the reason. */
static void sysfs_open__ultraserver_bad_files__reason(void **state) {
        static const struct {
                const char *file, *contents, *reason;
        } cases[] = {
                { "node_id_4", "busy\n", "node_id_4: busy" },
                { "node_id_4", "invalid\n", "node_id_4: not in the driver's format" },
                { "node_id_4", "7\n", "node_id_4: not in the driver's format" },
                { "node_id_4", "", "node_id_4: empty" },
                { "server_id_4", "5a0c3e91\n", "server_id_4: not in the driver's format" },
                { "server_id_4", "5a0c3e91d2b84fzz\n", "server_id_4: not in the driver's format" },
                { "ultraserver_mode", "1,,2\n", "ultraserver_mode: not in the driver's format" },
                { "ultraserver_mode", "busy\n", "ultraserver_mode: busy" },
                { "ultraserver_mode", "\x01\xff\n", "ultraserver_mode: not in the driver's format" },
        };
        for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
                char rel[64];
                scratch_copy("trn2u");
                snprintf(rel, sizeof(rel), CLASS "%s", cases[i].file);
                put(rel, cases[i].contents);
                struct collector *c = open_root(root);
                assert_int_equal(c->inv.ultraserver.nodes, 0);
                if (!strstr(c->inv.ultraserver.error, cases[i].reason))
                        fail_msg("%s '%s': '%s' does not say '%s'", cases[i].file, cases[i].contents,
                                 c->inv.ultraserver.error, cases[i].reason);
                collector_close(c);
                scratch_teardown(NULL);
        }
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(sysfs_open__trn1_tree__inventory),
                cmocka_unit_test(sysfs_read__trn1_tree__values),
                cmocka_unit_test(sysfs_open__inf1_tree__no_v2_series),
                cmocka_unit_test_teardown(sysfs_open__unknown_chip__capacity_absent, scratch_teardown),
                cmocka_unit_test_teardown(sysfs_open__no_devices__empty_with_reason, scratch_teardown),
                cmocka_unit_test_teardown(sysfs_refresh__driver_comes_and_goes__inventory_follows, scratch_teardown),
                cmocka_unit_test_teardown(sysfs_refresh__devices_that_do_not_fit__none_with_reason, scratch_teardown),
                cmocka_unit_test(sysfs_open__missing_root__einval),
                cmocka_unit_test(sysfs_probe__fixture__usable),
                cmocka_unit_test_teardown(sysfs_read__pe_counters__ratio_and_reset, scratch_teardown),
                cmocka_unit_test_teardown(sysfs_read__pe_counters__busy_seconds_ratio_times_interval, scratch_teardown),
                cmocka_unit_test_teardown(sysfs_read__damaged_files__series_absent_then_recover, scratch_teardown),
                cmocka_unit_test_teardown(sysfs_read__device_vanishes__down_then_back, scratch_teardown),
                cmocka_unit_test_teardown(sysfs_read__status_counters__ecosystem_outcomes_and_errors, scratch_teardown),
                cmocka_unit_test_teardown(sysfs_read__trn2_tree__logical_cores_of_two, scratch_teardown),
                cmocka_unit_test_teardown(sysfs_open__fifos_and_devices__absent_without_blocking, scratch_teardown),
                cmocka_unit_test(sysfs_capacity_for__catalog__bytes_or_enoent),
                cmocka_unit_test(sysfs_open__ultraserver_files__identity),
                cmocka_unit_test_teardown(sysfs_open__ultraserver_none_or_two__identity, scratch_teardown),
                cmocka_unit_test_teardown(sysfs_open__ultraserver_bad_files__reason, scratch_teardown),
                cmocka_unit_test(collector_open_spec__auto__sysfs_never_the_model),
        };
        return cmocka_run_group_tests_name("sysfs", tests, NULL, NULL);
}
