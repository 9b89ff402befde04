#include "config.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "collectors/sysfs.h"
#include "lib/catalog.h"
#include "lib/driver.h"
#include "lib/file.h"

#define DEFAULT_ROOT "/sys"
#define MAX_DEVICES 1024
#define MAX_CORES 64
/* Attributes are one page at most (sysfs_emit). */
#define ATTR_MAX 4096

enum source_kind {
        SOURCE_U64,        /* a counter or gauge file, value as printed */
        SOURCE_CORE_MEM,   /* device_mem/total of a core, also summed per device */
        SOURCE_CORE_BUSY,  /* pe_cntrs, a ratio of deltas */
        SOURCE_DEVICE_UP,  /* 1 while the device directory exists */
        SOURCE_DEVICE_MEM, /* the sum of the device's SOURCE_CORE_MEM */
        SOURCE_CAPACITY,   /* constant from the catalog */
        SOURCE_POWER,      /* stats/power/utilization, VALID lines only */
};

/* How to read one series; parallel to inventory.series. */
struct source {
        enum source_kind kind;
        unsigned dev; /* position in inventory.devices */
        char *path;   /* relative to the root; NULL for derived series */
        bool counter; /* a _total series: must not go backwards */
        double last;  /* the counter's previous value, when has_last */
        bool has_last;
        struct sysfs_pe_counters prev;
        bool has_prev;
};

struct sysfs {
        struct collector base;
        char *root;
        int root_fd;
        struct source *sources;
        char **dev_paths; /* per device, relative to the root */
        uint8_t *dev_up;  /* per device, this tick */
        double *dev_mem;  /* per device, this tick's sum */
        uint8_t *dev_mem_ok;
};

static int read_string(int dir_fd, const char *path, char *out, size_t size) {
        char buf[256];
        size_t len;
        /* A sysfs attribute longer than the buffer is not one we know:
         * file_read_at() refuses it. */
        int r = file_read_at(dir_fd, path, buf, sizeof(buf), 0, &len);
        if (r < 0)
                return r;
        return sysfs_parse_string(buf, len, out, size);
}

static bool exists(int dir_fd, const char *path) {
        return faccessat(dir_fd, path, F_OK, 0) == 0;
}

static int cmp_unsigned(const void *a, const void *b) {
        unsigned x = *(const unsigned *) a, y = *(const unsigned *) b;
        return x < y ? -1 : x > y;
}

/* Lists the numbers N of the entries "<prefix>N" in a directory, sorted.
 * Returns how many it found (at most max) or a negative errno. */
static int list_numbered(int dir_fd, const char *path, const char *prefix, unsigned *out, size_t max) {
        int fd = openat(dir_fd, path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        size_t n = 0, plen = strlen(prefix);
        if (fd < 0)
                return -errno;
        DIR *d = fdopendir(fd);
        if (!d) {
                int r = -errno;
                close(fd);
                return r;
        }
        for (struct dirent *e; (e = readdir(d)) && n < max;) {
                char name[64];
                unsigned v;
                /* Reuse the "neuron<N>" parser for any prefix. */
                if (strncmp(e->d_name, prefix, plen) != 0)
                        continue;
                snprintf(name, sizeof(name), "neuron%s", e->d_name + plen);
                if (sysfs_parse_device_name(name, &v) == 0)
                        out[n++] = v;
        }
        closedir(d);
        qsort(out, n, sizeof(*out), cmp_unsigned);
        return (int) n;
}

/* Appends a series and how to read it. */
static int add(struct sysfs *s, enum metric_id metric, const char *const *labels, enum source_kind kind, unsigned dev,
               const char *path) {
        struct inventory *inv = &s->base.inv;
        size_t n = inv->n_series;
        /* inventory_add_series grows by doubling; follow the same sizes. */
        if ((n & (n - 1)) == 0) {
                struct source *grown = realloc(s->sources, (n ? 2 * n : 1) * sizeof(*grown));
                if (!grown)
                        return -ENOMEM;
                s->sources = grown;
        }
        s->sources[n] = (struct source){
                .kind = kind,
                .dev = dev,
                .counter = metric_table[metric].type == METRIC_COUNTER,
        };
        if (path) {
                s->sources[n].path = strdup(path);
                if (!s->sources[n].path)
                        return -ENOMEM;
        }
        int r = inventory_add_series(inv, metric, labels);
        if (r < 0) {
                free(s->sources[n].path);
                return r;
        }
        return 0;
}

/* Adds the series of file "<base>/<rel>" when the file exists now. */
static int add_if_exists(struct sysfs *s, enum metric_id metric, const char *const *labels, enum source_kind kind,
                         unsigned dev, const char *base, const char *rel) {
        char path[512];
        int n = snprintf(path, sizeof(path), "%s/%s", base, rel);
        if (n < 0 || (size_t) n >= sizeof(path))
                return -ENAMETOOLONG;
        if (!exists(s->root_fd, path))
                return 0;
        return add(s, metric, labels, kind, dev, path);
}

static int add_core(struct sysfs *s, unsigned pos, unsigned phys, unsigned host_core, bool *ret_has_mem) {
        const struct device_info *di = &s->base.inv.devices[pos];
        char base[256], dev[16], core[16], rel[128];
        bool has_mem = false;
        int r;

        snprintf(base, sizeof(base), "%s/neuron_core%u", s->dev_paths[pos], phys);
        snprintf(dev, sizeof(dev), "%u", di->index);
        snprintf(core, sizeof(core), "%u", host_core);
        const char *const labels[] = { dev, core };

        r = add_if_exists(s, METRIC_CORE_UTILIZATION, labels, SOURCE_CORE_BUSY, pos, base,
                          "stats/tensor_engine/pe_cntrs");
        if (r < 0)
                return r;
        size_t before = s->base.inv.n_series;
        r = add_if_exists(s, METRIC_CORE_MEMORY_USED, labels, SOURCE_CORE_MEM, pos, base,
                          "stats/memory_usage/device_mem/total");
        if (r < 0)
                return r;
        has_mem = s->base.inv.n_series > before;
        for (size_t i = 0; i < DRIVER_MEMORY_CATEGORIES; i++) {
                snprintf(rel, sizeof(rel), "stats/memory_usage/device_mem/%s/total", driver_memory_categories[i]);
                r = add_if_exists(s, METRIC_CORE_MEMORY_CATEGORY,
                                  (const char *const[]){ dev, core, driver_memory_categories[i] }, SOURCE_U64, pos,
                                  base, rel);
                if (r < 0)
                        return r;
        }
        for (size_t i = 0; i < DRIVER_STATUS_NAMES; i++) {
                snprintf(rel, sizeof(rel), "stats/status/%s/total", driver_status_names[i]);
                r = add_if_exists(s, METRIC_CORE_EXECUTION_STATUS,
                                  (const char *const[]){ dev, core, driver_status_names[i] }, SOURCE_U64, pos, base,
                                  rel);
                if (r < 0)
                        return r;
        }
        *ret_has_mem = has_mem;
        return 0;
}

int sysfs_capacity_for(const char *device_name, uint64_t *ret) {
        for (size_t i = 0; i < catalog_size; i++) {
                const struct catalog_chip *chip = catalog[i].chip;
                if (strcmp(chip->device_name, device_name) == 0) {
                        *ret = chip->memory_bytes;
                        return 0;
                }
        }
        return -ENOENT;
}

/* Reads one device's inventory and adds its series. */
static int add_device(struct sysfs *s, unsigned pos, unsigned index, unsigned first_core) {
        struct device_info *di = &s->base.inv.devices[pos];
        char path[512], dev[16];
        unsigned cores[MAX_CORES];
        bool any_mem = false;
        int r;

        snprintf(path, sizeof(path), "%s/neuron%u", SYSFS_DEVICE_DIR, index);
        s->dev_paths[pos] = strdup(path);
        if (!s->dev_paths[pos])
                return -ENOMEM;
        const char *base = s->dev_paths[pos];
        di->index = index;
        di->first_core = first_core;
        /* Missing strings stay empty: the inventory says "unknown". */
        snprintf(path, sizeof(path), "%s/info/architecture/device_name", base);
        (void) read_string(s->root_fd, path, di->name, sizeof(di->name));
        snprintf(path, sizeof(path), "%s/info/architecture/arch_type", base);
        (void) read_string(s->root_fd, path, di->arch, sizeof(di->arch));
        snprintf(path, sizeof(path), "%s/info/serial_number", base);
        (void) read_string(s->root_fd, path, di->serial, sizeof(di->serial));
        if (pos == 0) {
                snprintf(path, sizeof(path), "%s/info/architecture/instance_type", base);
                (void) read_string(s->root_fd, path, s->base.inv.instance_type, sizeof(s->base.inv.instance_type));
        }

        r = list_numbered(s->root_fd, base, "neuron_core", cores, MAX_CORES);
        if (r < 0)
                return r;
        di->core_count = (unsigned) r;
        if (di->core_count > 0) {
                snprintf(path, sizeof(path), "%s/neuron_core%u/info/architecture/arch_type", base, cores[0]);
                (void) read_string(s->root_fd, path, di->core_arch, sizeof(di->core_arch));
        }

        snprintf(dev, sizeof(dev), "%u", index);
        const char *const labels[] = { dev };
        r = add(s, METRIC_DEVICE_UP, labels, SOURCE_DEVICE_UP, pos, NULL);
        for (unsigned c = 0; c < di->core_count && r == 0; c++) {
                bool has_mem = false;
                r = add_core(s, pos, cores[c], first_core + c, &has_mem);
                any_mem = any_mem || has_mem;
        }
        if (r == 0 && any_mem)
                r = add(s, METRIC_DEVICE_MEMORY_USED, labels, SOURCE_DEVICE_MEM, pos, NULL);
        if (r == 0 && sysfs_capacity_for(di->name, &di->memory_bytes) == 0)
                r = add(s, METRIC_DEVICE_MEMORY_TOTAL, labels, SOURCE_CAPACITY, pos, NULL);
        if (r == 0)
                r = add_if_exists(s, METRIC_DEVICE_POWER_UTILIZATION, labels, SOURCE_POWER, pos, base,
                                  "stats/power/utilization");
        for (size_t i = 0; i < DRIVER_ECC__COUNT && r == 0; i++) {
                snprintf(path, sizeof(path), "stats/hardware/%s", driver_ecc_names[i]);
                r = add_if_exists(s, METRIC_DEVICE_ECC_EVENTS, (const char *const[]){ dev, driver_ecc_names[i] },
                                  SOURCE_U64, pos, base, path);
        }
        return r;
}

static void sysfs_close(struct collector *c) {
        struct sysfs *s = (struct sysfs *) c;
        if (!s)
                return;
        for (size_t i = 0; i < s->base.inv.n_series; i++)
                free(s->sources[i].path);
        if (s->dev_paths)
                for (unsigned d = 0; d < s->base.inv.n_devices; d++)
                        free(s->dev_paths[d]);
        free(s->dev_paths);
        free(s->sources);
        free(s->dev_up);
        free(s->dev_mem);
        free(s->dev_mem_ok);
        free(s->root);
        inventory_free(&s->base.inv);
        if (s->root_fd >= 0)
                close(s->root_fd);
        free(s);
}

static const char *root_of(const struct collector_args *args) {
        return args->options && args->options[0] ? args->options : DEFAULT_ROOT;
}

/* Opens the root and lists its devices. Returns the count (> 0), -ENODEV
 * when the driver directory is missing or empty, or another errno (the
 * root's own: -ENOENT, -ENOTDIR, -EACCES ...). */
static int list_devices(const char *root, int *ret_fd, unsigned *out, size_t max) {
        int fd = open(root, O_PATH | O_DIRECTORY | O_CLOEXEC);
        if (fd < 0)
                return -errno;
        int n = list_numbered(fd, SYSFS_DEVICE_DIR, "neuron", out, max);
        if (n == -ENOENT || n == -ENOTDIR || n == 0)
                n = -ENODEV;
        if (n < 0) {
                close(fd);
                return n;
        }
        *ret_fd = fd;
        return n;
}

static int sysfs_probe(const struct collector_args *args) {
        const char *root = root_of(args);
        unsigned idx[MAX_DEVICES];
        int fd;
        int n = list_devices(root, &fd, idx, MAX_DEVICES);
        /* No root is no driver, for "auto". */
        if (n == -ENOENT || n == -ENOTDIR)
                n = -ENODEV;
        if (n < 0) {
                snprintf(args->err, args->errlen, "%s/%s %s", root, SYSFS_DEVICE_DIR,
                         n == -ENODEV ? "is missing or lists no devices" : strerror(-n));
                return n;
        }
        close(fd);
        snprintf(args->err, args->errlen, "%s/%s lists %d devices", root, SYSFS_DEVICE_DIR, n);
        return 0;
}

static int sysfs_open(const struct collector_args *args, struct collector **ret) {
        const char *root = root_of(args);
        unsigned idx[MAX_DEVICES];
        int r;

        struct sysfs *s = calloc(1, sizeof(*s));
        if (!s)
                return -ENOMEM;
        s->root_fd = -1;
        s->base.ops = &sysfs_collector_ops;
        s->base.time_scale = 1;
        struct inventory *inv = &s->base.inv;
        snprintf(inv->backend, sizeof(inv->backend), "sysfs:%s", root);
        s->root = strdup(root);
        if (!s->root) {
                r = -ENOMEM;
                goto fail;
        }

        r = list_devices(root, &s->root_fd, idx, MAX_DEVICES);
        if (r == -ENODEV) {
                /* The driver may load later: not the settings' fault. */
                snprintf(args->err, args->errlen, "sysfs: %s/%s is missing or lists no devices", root,
                         SYSFS_DEVICE_DIR);
                goto fail;
        }
        if (r < 0) {
                /* A root that is no directory is a bad setting. */
                snprintf(args->err, args->errlen, "sysfs: the root %s: %s", root, strerror(-r));
                r = -EINVAL;
                goto fail;
        }
        unsigned n = (unsigned) r;
        inv->devices = calloc(n, sizeof(*inv->devices));
        s->dev_paths = calloc(n, sizeof(*s->dev_paths));
        s->dev_up = calloc(n, 1);
        s->dev_mem = calloc(n, sizeof(*s->dev_mem));
        s->dev_mem_ok = calloc(n, 1);
        if (!inv->devices || !s->dev_paths || !s->dev_up || !s->dev_mem || !s->dev_mem_ok) {
                r = -ENOMEM;
                goto fail;
        }
        /* Only now: the destructors walk n_devices entries of these arrays. */
        inv->n_devices = n;
        (void) read_string(s->root_fd, SYSFS_VERSION_FILE, inv->driver_version, sizeof(inv->driver_version));
        unsigned first_core = 0;
        for (unsigned d = 0; d < inv->n_devices; d++) {
                r = add_device(s, d, idx[d], first_core);
                if (r < 0) {
                        snprintf(args->err, args->errlen, "sysfs: reading %s/%s/neuron%u: %s", root, SYSFS_DEVICE_DIR,
                                 idx[d], strerror(-r));
                        goto fail;
                }
                first_core += inv->devices[d].core_count;
        }
        *ret = &s->base;
        return 0;
fail:
        sysfs_close(&s->base);
        return r;
}

/* Reads one file-backed series. Returns 0 with the value, or a negative
 * errno that leaves the series invalid this tick. */
static int read_source(struct sysfs *s, struct source *src, double *ret) {
        char buf[ATTR_MAX];
        size_t len;
        uint64_t v;
        int r = file_read_at(s->root_fd, src->path, buf, sizeof(buf), 0, &len);
        if (r < 0) {
                /* A failed read of pe_cntrs breaks the delta chain. */
                src->has_prev = false;
                return r;
        }
        switch (src->kind) {
        case SOURCE_U64:
        case SOURCE_CORE_MEM:
                r = sysfs_parse_u64(buf, len, &v);
                if (r < 0)
                        return r;
                /* A counter cleared by root: absent this tick, and the new
                 * value is the baseline from the next tick on. */
                if (src->counter && src->has_last && (double) v < src->last) {
                        src->last = (double) v;
                        return -ERANGE;
                }
                src->last = (double) v;
                src->has_last = src->counter;
                *ret = (double) v;
                return 0;
        case SOURCE_POWER: {
                struct sysfs_power p;
                r = sysfs_parse_power(buf, len, &p);
                if (r < 0)
                        return r;
                /* The driver has no figure this minute: not a failure. */
                if (p.status != SYSFS_POWER_VALID)
                        return -EAGAIN;
                if (p.avg > 100)
                        return -ERANGE;
                *ret = p.avg / 100.0;
                return 0;
        }
        case SOURCE_CORE_BUSY: {
                struct sysfs_pe_counters cur;
                r = sysfs_parse_pe_counters(buf, len, &cur);
                if (r < 0) {
                        src->has_prev = false;
                        return r;
                }
                bool had = src->has_prev;
                struct sysfs_pe_counters prev = src->prev;
                src->prev = cur;
                src->has_prev = true;
                /* The first reading (or the first after a reset) is only a baseline. */
                if (!had)
                        return -EAGAIN;
                r = sysfs_busy_ratio(&prev, &cur, ret);
                /* An idle clock between two ticks: nothing to report, nothing wrong. */
                return r == -ENODATA ? -EAGAIN : r;
        }
        default:
                return -EINVAL;
        }
}

static int sysfs_read(struct collector *c, int64_t now_ms, struct sample_batch *out) {
        struct sysfs *s = (struct sysfs *) c;
        const struct inventory *inv = &c->inv;
        unsigned up = 0;
        int failed = 0, attempted = 0;

        (void) now_ms;
        c->reason[0] = '\0';
        /* Reopen the root each tick: a container's sysfs mount may have been
         * replaced since the last one, and the old fd would show a dead tree. */
        int fd = open(s->root, O_PATH | O_DIRECTORY | O_CLOEXEC);
        if (fd < 0)
                return -errno;
        close(s->root_fd);
        s->root_fd = fd;
        for (unsigned d = 0; d < inv->n_devices; d++) {
                s->dev_up[d] = exists(s->root_fd, s->dev_paths[d]);
                s->dev_mem[d] = 0;
                s->dev_mem_ok[d] = s->dev_up[d];
                up += s->dev_up[d];
        }
        for (size_t i = 0; i < out->n; i++) {
                struct source *src = &s->sources[i];
                double v = 0;
                switch (src->kind) {
                case SOURCE_DEVICE_UP:
                        out->values[i] = s->dev_up[src->dev];
                        out->valid[i] = 1;
                        continue;
                case SOURCE_DEVICE_MEM:
                        continue; /* second pass */
                case SOURCE_CAPACITY:
                        out->values[i] = (double) inv->devices[src->dev].memory_bytes;
                        out->valid[i] = s->dev_up[src->dev];
                        continue;
                default:
                        break;
                }
                if (!s->dev_up[src->dev]) {
                        src->has_prev = false;
                        if (src->kind == SOURCE_CORE_MEM)
                                s->dev_mem_ok[src->dev] = 0;
                        continue;
                }
                int r = read_source(s, src, &v);
                /* -EAGAIN: a baseline or no figure this tick, not a failure. */
                if (r < 0 && r != -EAGAIN && failed++ == 0)
                        snprintf(c->reason, sizeof(c->reason), "%s: %s", src->path,
                                 r == -ERANGE ? "value out of range or went backwards" : strerror(-r));
                attempted++;
                if (src->kind == SOURCE_CORE_MEM) {
                        if (r < 0)
                                s->dev_mem_ok[src->dev] = 0;
                        else
                                s->dev_mem[src->dev] += v;
                }
                if (r < 0)
                        continue;
                out->values[i] = v;
                out->valid[i] = 1;
        }
        for (size_t i = 0; i < out->n; i++) {
                const struct source *src = &s->sources[i];
                if (src->kind != SOURCE_DEVICE_MEM)
                        continue;
                out->values[i] = s->dev_mem[src->dev];
                out->valid[i] = s->dev_mem_ok[src->dev];
        }
        /* Every device gone at once: the driver was unloaded. */
        if (up == 0)
                return -ENODEV;
        /* Not one file readable: the collector is down, not partly up. */
        return attempted > 0 && failed == attempted ? -EIO : failed;
}

const struct collector_ops sysfs_collector_ops = {
        .name = "sysfs",
        .probe = sysfs_probe,
        .open = sysfs_open,
        .read = sysfs_read,
        .close = sysfs_close,
};
