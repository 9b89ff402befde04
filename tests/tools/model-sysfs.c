/* model-sysfs: writes the device model's state as a driver-style sysfs tree.
 *
 *   model-sysfs SPEC DIR INTERVAL_MS TICKS
 *
 * Opens SPEC (e.g. "model:trn1.2xlarge") with collector_open_spec(), reads it
 * TICKS times, INTERVAL_MS apart, and after each read writes a root for
 * "--backend sysfs:DIR" (the driver's layout, aws-neuron-driver
 * neuron_sysfs_metrics.c): device info, per-core device_mem/total and a
 * pe_cntrs file whose deltas give the model's busy ratio. Each tick's tree
 * is written whole into DIR.<pid>.<tick> (each file via write and rename;
 * the pid keeps a second run from rewriting a tree a reader may be in) and DIR
 * is then swapped to it with an atomic symlink rename: the sysfs collector
 * opens its root once per tick, so it sees one tick's tree, never a mix. After each tick it prints one line per
 * device, "<tick> <device> <hbm_used_bytes>", and flushes, so a test can
 * check what a reader of the tree reports against what the model said. */
#include "config.h"

#include <errno.h>
#include <stdbool.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "collectors/collector.h"

/* Cycles per millisecond of the simulated tensor engine clock (1.4 GHz). */
#define CYCLES_PER_MS 1400000.0

static int mkdirs(const char *path) {
        char buf[4096];
        int n = snprintf(buf, sizeof(buf), "%s", path);
        if (n < 0 || (size_t) n >= sizeof(buf))
                return -ENAMETOOLONG;
        for (char *p = buf + 1; *p; p++) {
                if (*p != '/')
                        continue;
                *p = '\0';
                if (mkdir(buf, 0755) < 0 && errno != EEXIST)
                        return -errno;
                *p = '/';
        }
        if (mkdir(buf, 0755) < 0 && errno != EEXIST)
                return -errno;
        return 0;
}

/* Writes "<dir>/<name>" atomically with the given contents. */
static int put(const char *dir, const char *name, const char *contents) {
        char path[2200], tmp[2300];
        snprintf(path, sizeof(path), "%s/%s", dir, name);
        char *slash = strrchr(path, '/');
        *slash = '\0';
        int r = mkdirs(path);
        if (r < 0)
                return r;
        *slash = '/';
        snprintf(tmp, sizeof(tmp), "%s.tmp", path);
        FILE *f = fopen(tmp, "w");
        if (!f)
                return -errno;
        fputs(contents, f);
        if (fclose(f) != 0)
                return -EIO;
        if (rename(tmp, path) < 0)
                return -errno;
        return 0;
}

static int label_u(const struct series_desc *s, unsigned i, unsigned *ret) {
        char *end;
        unsigned long v = strtoul(s->label_values[i], &end, 10);
        if (end == s->label_values[i] || *end)
                return -EINVAL;
        *ret = (unsigned) v;
        return 0;
}

/* The driver file that carries series s of device di, relative to the
 * device directory, and its contents for value v. Returns -ENOENT for
 * series the driver has no file for (DMA, NeuronLink, ...) and for those
 * main() writes itself. */
static int driver_file(const struct series_desc *s, const struct device_info *di, double v, time_t now, char *name,
                       size_t nsize, char *text, size_t tsize) {
        unsigned core;
        const char *label = s->label_values[2];
        bool per_core = s->metric == METRIC_CORE_MEMORY_CATEGORY || s->metric == METRIC_CORE_EXECUTION_STATUS;
        if (per_core && (label_u(s, 1, &core) < 0 || core < di->first_core || core >= di->first_core + di->core_count))
                return -ENOENT;
        switch (s->metric) {
        case METRIC_CORE_MEMORY_CATEGORY:
                snprintf(name, nsize, "neuron_core%u/stats/memory_usage/device_mem/%s/total", core - di->first_core,
                         label);
                break;
        case METRIC_CORE_EXECUTION_STATUS:
                snprintf(name, nsize, "neuron_core%u/stats/status/%s/total", core - di->first_core, label);
                break;
        case METRIC_DEVICE_ECC_EVENTS:
                snprintf(name, nsize, "stats/hardware/%s", s->label_values[1]);
                break;
        case METRIC_DEVICE_POWER_UTILIZATION:
                snprintf(name, nsize, "stats/power/utilization");
                snprintf(text, tsize, "POWER_STATUS_VALID,%lld,%.2f,%.2f,%.2f\n", (long long) now, v * 100, v * 100,
                         v * 100);
                return 0;
        default:
                return -ENOENT;
        }
        snprintf(text, tsize, "%.0f\n", v);
        return 0;
}

static int remove_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw) {
        (void) st;
        (void) flag;
        (void) ftw;
        return remove(path);
}

/* Writes what does not change between ticks into tree. */
static int put_info(const char *tree, const struct inventory *inv) {
        char dir[2048], text[256];
        if (put(tree, "module/neuron/version", "model\n") < 0)
                return -1;
        for (unsigned d = 0; d < inv->n_devices; d++) {
                const struct device_info *di = &inv->devices[d];
                snprintf(dir, sizeof(dir), "%s/devices/virtual/neuron_device/neuron%u", tree, di->index);
                snprintf(text, sizeof(text), "%s\n", di->name);
                if (put(dir, "info/architecture/device_name", text) < 0)
                        return -1;
                snprintf(text, sizeof(text), "%s\n", di->arch);
                if (put(dir, "info/architecture/arch_type", text) < 0)
                        return -1;
                snprintf(text, sizeof(text), "%s\n", inv->instance_type);
                if (put(dir, "info/architecture/instance_type", text) < 0)
                        return -1;
                snprintf(text, sizeof(text), "%016x\n", 0x4d0de100u + di->index);
                if (put(dir, "info/serial_number", text) < 0)
                        return -1;
                for (unsigned k = 0; k < di->core_count; k++) {
                        char name[128];
                        snprintf(name, sizeof(name), "neuron_core%u/info/architecture/arch_type", k);
                        snprintf(text, sizeof(text), "%s\n", di->core_arch);
                        if (put(dir, name, text) < 0)
                                return -1;
                }
        }
        return 0;
}

int main(int argc, char **argv) {
        struct collector *c = NULL;
        char err[256], dir[2048], text[256];
        int status = EXIT_FAILURE;

        if (argc != 5) {
                fprintf(stderr, "usage: %s SPEC DIR INTERVAL_MS TICKS\n", argv[0]);
                return 2;
        }
        long interval_ms = strtol(argv[3], NULL, 10), ticks = strtol(argv[4], NULL, 10);
        if (interval_ms <= 0 || ticks <= 0) {
                fprintf(stderr, "model-sysfs: INTERVAL_MS and TICKS must be positive\n");
                return 2;
        }
        if (collector_open_spec(argv[1], &c, err, sizeof(err)) < 0) {
                fprintf(stderr, "model-sysfs: %s\n", err);
                return 2;
        }
        const struct inventory *inv = &c->inv;
        size_t n = inv->n_series;
        double *values = calloc(n ? n : 1, sizeof(double));
        uint8_t *valid = calloc(n ? n : 1, 1);
        /* Cumulative pe counters per host-wide core: busy and idle cycles. */
        unsigned n_cores = 0;
        for (unsigned d = 0; d < inv->n_devices; d++)
                n_cores += inv->devices[d].core_count;
        double *busy = calloc(n_cores ? n_cores : 1, sizeof(double));
        double *idle = calloc(n_cores ? n_cores : 1, sizeof(double));
        if (!values || !valid || !busy || !idle)
                goto out;

        for (long t = 1; t <= ticks; t++) {
                struct timespec now;
                clock_gettime(CLOCK_REALTIME, &now);
                int64_t now_ms = (int64_t) now.tv_sec * 1000 + now.tv_nsec / 1000000;
                struct sample_batch batch = { .n = n, .values = values, .valid = valid };
                memset(valid, 0, n);
                if (c->ops->read(c, now_ms, &batch) < 0) {
                        fprintf(stderr, "model-sysfs: reading the model failed\n");
                        goto out;
                }
                char tree[1100], link_tmp[1100], target[1100];
                snprintf(tree, sizeof(tree), "%s.%ld.%ld", argv[2], (long) getpid(), t);
                if (put_info(tree, inv) < 0)
                        goto fail_write;
                for (size_t i = 0; i < n; i++) {
                        const struct series_desc *s = &inv->series[i];
                        unsigned dev, core;
                        char name[256];
                        if (!valid[i] || label_u(s, 0, &dev) < 0 || dev >= inv->n_devices)
                                continue;
                        const struct device_info *di = &inv->devices[dev];
                        snprintf(dir, sizeof(dir), "%s/devices/virtual/neuron_device/neuron%u", tree, dev);
                        if (s->metric == METRIC_CORE_MEMORY_USED && label_u(s, 1, &core) == 0 &&
                            core >= di->first_core && core < di->first_core + di->core_count) {
                                snprintf(name, sizeof(name), "neuron_core%u/stats/memory_usage/device_mem/total",
                                         core - di->first_core);
                                snprintf(text, sizeof(text), "%.0f\n", values[i]);
                                if (put(dir, name, text) < 0)
                                        goto fail_write;
                        } else if (s->metric == METRIC_CORE_UTILIZATION && label_u(s, 1, &core) == 0 &&
                                   core < n_cores && core >= di->first_core && core < di->first_core + di->core_count) {
                                busy[core] += values[i] * CYCLES_PER_MS * (double) interval_ms;
                                idle[core] += (1 - values[i]) * CYCLES_PER_MS * (double) interval_ms;
                                snprintf(name, sizeof(name), "neuron_core%u/stats/tensor_engine/pe_cntrs",
                                         core - di->first_core);
                                snprintf(text, sizeof(text), "xrow_grp,mm_active,wl_active,idle\n0,%.0f,0,%.0f\n",
                                         busy[core], idle[core]);
                                if (put(dir, name, text) < 0)
                                        goto fail_write;
                        } else if (s->metric == METRIC_DEVICE_MEMORY_USED) {
                                printf("%ld %u %.0f\n", t, dev, values[i]);
                        } else if (driver_file(s, di, values[i], now.tv_sec, name, sizeof(name), text, sizeof(text)) ==
                                   0) {
                                if (put(dir, name, text) < 0)
                                        goto fail_write;
                        }
                }
                /* Swap DIR to this tick's tree; drop the one before last (a
                 * reader may still hold the last one open). */
                const char *base = strrchr(tree, '/');
                snprintf(target, sizeof(target), "%s", base ? base + 1 : tree);
                snprintf(link_tmp, sizeof(link_tmp), "%s.link", argv[2]);
                unlink(link_tmp);
                if (symlink(target, link_tmp) < 0 || rename(link_tmp, argv[2]) < 0)
                        goto fail_write;
                if (t > 2) {
                        snprintf(tree, sizeof(tree), "%s.%ld.%ld", argv[2], (long) getpid(), t - 2);
                        nftw(tree, remove_entry, 16, FTW_DEPTH | FTW_PHYS);
                }
                fflush(stdout);
                if (t < ticks) {
                        struct timespec ts = { .tv_sec = interval_ms / 1000,
                                               .tv_nsec = (interval_ms % 1000) * 1000000 };
                        nanosleep(&ts, NULL);
                }
        }
        status = EXIT_SUCCESS;
        goto out;
fail_write:
        fprintf(stderr, "model-sysfs: writing %s failed: %s\n", argv[2], strerror(errno));
out:
        free(values);
        free(valid);
        free(busy);
        free(idle);
        collector_close(c);
        return status;
}
