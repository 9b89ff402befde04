#include "config.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
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
/* Physical cores per logical one at most (LNC). */
#define SOURCE_PATHS_MAX 2
/* Attributes are one page at most (sysfs_emit). */
#define ATTR_MAX 4096

enum source_kind {
        SOURCE_U64,        /* a counter or gauge file, value as printed */
        SOURCE_CORE_MEM,   /* device_mem/total of a core, also summed per device */
        SOURCE_CORE_BUSY,  /* pe_cntrs, a ratio of deltas */
        SOURCE_BUSY_TIME,  /* the busy ratio of series `ratio` times each interval, summed */
        SOURCE_DEVICE_UP,  /* 1 while the device directory exists */
        SOURCE_DEVICE_MEM, /* the sum of the device's SOURCE_CORE_MEM */
        SOURCE_CAPACITY,   /* constant from the catalog */
        SOURCE_POWER,      /* stats/power/utilization, VALID lines only */
};

/* How to read one series; parallel to inventory.series. A series of a
 * logical core reads the same file of each of its physical cores: values
 * add up, busy ratios average. */
struct source {
        enum source_kind kind;
        unsigned dev; /* position in inventory.devices */
        unsigned n_paths;
        char *paths[SOURCE_PATHS_MAX]; /* relative to the root; none for derived series */
        bool counter;                  /* a _total series: no file of it may go backwards */
        double last[SOURCE_PATHS_MAX]; /* each counter file's previous value, when has_last */
        bool has_last[SOURCE_PATHS_MAX];
        struct sysfs_pe_counters prev[SOURCE_PATHS_MAX];
        bool has_prev[SOURCE_PATHS_MAX];
        size_t ratio;     /* SOURCE_BUSY_TIME: the index of its SOURCE_CORE_BUSY series */
        uint64_t busy_us; /* SOURCE_BUSY_TIME: the sum so far */
};

/* The driver's status counters that are neuron-monitor's execution
 * outcomes and error types: the runtime writes the same datastore counters
 * (aws-neuron-driver share/neuron_driver_shared.h: NDS_NC_COUNTER_INFER_*
 * and NDS_NC_COUNTER_ERR_*) that sysfs shows under these names. The error
 * types numerical, transient, model and runtime have no file in sysfs. */
static const struct {
        const char *file;
        enum metric_id metric;
        int index; /* into metric_exec_status_names or metric_exec_error_names */
} status_map[] = {
        { "success", METRIC_CORE_EXECUTION_STATUS, EXEC_COMPLETED },
        { "execute_completed_with_error", METRIC_CORE_EXECUTION_STATUS, EXEC_COMPLETED_WITH_ERR },
        { "execute_completed_with_num_error", METRIC_CORE_EXECUTION_STATUS, EXEC_COMPLETED_WITH_NUM_ERR },
        { "timeout", METRIC_CORE_EXECUTION_STATUS, EXEC_TIMED_OUT },
        { "exec_bad_input", METRIC_CORE_EXECUTION_STATUS, EXEC_INCORRECT_INPUT },
        { "execute_failed_to_queue", METRIC_CORE_EXECUTION_STATUS, EXEC_FAILED_TO_QUEUE },
        { "generic_error", METRIC_CORE_EXECUTION_ERRORS, EXEC_ERROR_GENERIC },
        { "hw_error", METRIC_CORE_EXECUTION_ERRORS, EXEC_ERROR_HARDWARE },
};

struct sysfs {
        struct collector base;
        char *root;
        unsigned lnc_option; /* lnc= of the spec; 0: the chip's default */
        int root_fd;
        struct source *sources;
        char **dev_paths; /* per device, relative to the root */
        uint8_t *dev_up;  /* per device, this tick */
        double *dev_mem;  /* per device, this tick's sum */
        uint8_t *dev_mem_ok;
        int64_t last_read_ms; /* now_ms of the previous read, which the busy ratios' deltas start at */
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

/* Appends a series and how to read it: n_paths files (relative to the
 * root), or none for a derived series. */
static int add(struct sysfs *s, enum metric_id metric, const char *const *labels, enum source_kind kind, unsigned dev,
               char *const *paths, unsigned n_paths) {
        struct inventory *inv = &s->base.inv;
        size_t n = inv->n_series;
        /* inventory_add_series grows by doubling; follow the same sizes. */
        if ((n & (n - 1)) == 0) {
                struct source *grown = realloc(s->sources, (n ? 2 * n : 1) * sizeof(*grown));
                if (!grown)
                        return -ENOMEM;
                s->sources = grown;
        }
        struct source *src = &s->sources[n];
        *src = (struct source){
                .kind = kind,
                .dev = dev,
                .counter = metric_table[metric].type == METRIC_COUNTER,
        };
        int r = 0;
        for (unsigned i = 0; i < n_paths && r == 0; i++) {
                src->paths[i] = strdup(paths[i]);
                r = src->paths[i] ? 0 : -ENOMEM;
                src->n_paths += r == 0;
        }
        if (r == 0)
                r = inventory_add_series(inv, metric, labels);
        if (r < 0)
                for (unsigned i = 0; i < src->n_paths; i++)
                        free(src->paths[i]);
        return r;
}

/* Adds the series of file "<base>/<rel>" when the file exists now in
 * every one of the bases (the physical cores of a logical one). */
static int add_if_exists(struct sysfs *s, enum metric_id metric, const char *const *labels, enum source_kind kind,
                         unsigned dev, char *const *bases, unsigned n_bases, const char *rel) {
        char buf[SOURCE_PATHS_MAX][512];
        char *paths[SOURCE_PATHS_MAX];
        for (unsigned i = 0; i < n_bases; i++) {
                int n = snprintf(buf[i], sizeof(buf[i]), "%s/%s", bases[i], rel);
                if (n < 0 || (size_t) n >= sizeof(buf[i]))
                        return -ENAMETOOLONG;
                if (!exists(s->root_fd, buf[i]))
                        return 0;
                paths[i] = buf[i];
        }
        return add(s, metric, labels, kind, dev, paths, n_bases);
}

/* The series of one logical NeuronCore: host-wide index `core`, made of
 * the physical core directories phys[0..n_phys), the first of which is the
 * host-wide physical core first_phys. */
static int add_core(struct sysfs *s, unsigned pos, unsigned core, const unsigned *phys, unsigned n_phys,
                    unsigned first_phys, bool *ret_has_mem) {
        const struct device_info *di = &s->base.inv.devices[pos];
        char bases[SOURCE_PATHS_MAX][256], dev[16], core_l[16], phys_l[16], rel[128];
        char *base_list[SOURCE_PATHS_MAX];
        int r;

        for (unsigned i = 0; i < n_phys; i++) {
                snprintf(bases[i], sizeof(bases[i]), "%s/neuron_core%u", s->dev_paths[pos], phys[i]);
                base_list[i] = bases[i];
        }
        snprintf(dev, sizeof(dev), "%u", di->index);
        snprintf(core_l, sizeof(core_l), "%u", core);
        const char *const labels[] = { dev, core_l, NULL };

        size_t ratio = s->base.inv.n_series;
        r = add_if_exists(s, METRIC_CORE_UTILIZATION, labels, SOURCE_CORE_BUSY, pos, base_list, n_phys,
                          "stats/tensor_engine/pe_cntrs");
        /* pe_cntrs counts cycles, but sysfs has no clock rate to turn them
         * into seconds: busy time is the ratio times the interval. */
        if (r == 0 && s->base.inv.n_series > ratio) {
                r = add(s, METRIC_CORE_BUSY_SECONDS, labels, SOURCE_BUSY_TIME, pos, NULL, 0);
                if (r == 0)
                        s->sources[s->base.inv.n_series - 1].ratio = ratio;
        }
        /* The physical breakdown of a logical core, as neuron-monitor's v3d object. */
        for (unsigned i = 0; i < n_phys && n_phys > 1 && r == 0; i++) {
                snprintf(phys_l, sizeof(phys_l), "%u", first_phys + i);
                r = add_if_exists(s, METRIC_CORE_PHYSICAL_UTILIZATION, (const char *const[]){ dev, core_l, phys_l },
                                  SOURCE_CORE_BUSY, pos, &base_list[i], 1, "stats/tensor_engine/pe_cntrs");
        }
        size_t before = s->base.inv.n_series;
        if (r == 0)
                r = add_if_exists(s, METRIC_CORE_MEMORY_USED, labels, SOURCE_CORE_MEM, pos, base_list, n_phys,
                                  "stats/memory_usage/device_mem/total");
        *ret_has_mem = s->base.inv.n_series > before;
        for (size_t i = 0; i < DRIVER_MEMORY_CATEGORIES && r == 0; i++) {
                snprintf(rel, sizeof(rel), "stats/memory_usage/device_mem/%s/total", driver_memory_categories[i]);
                r = add_if_exists(s, METRIC_CORE_MEMORY_CATEGORY,
                                  (const char *const[]){ dev, core_l, driver_memory_categories[i] }, SOURCE_U64, pos,
                                  base_list, n_phys, rel);
        }
        /* neuron-monitor's five kinds are five of the driver's categories. */
        for (int k = 0; k < METRIC_CORE_MEMORY_KINDS && r == 0; k++) {
                snprintf(rel, sizeof(rel), "stats/memory_usage/device_mem/%s/total", metric_core_memory_kinds[k]);
                r = add_if_exists(s, METRIC_CORE_MEMORY_CONSTANTS + k, labels, SOURCE_U64, pos, base_list, n_phys, rel);
        }
        for (size_t i = 0; i < sizeof(status_map) / sizeof(status_map[0]) && r == 0; i++) {
                const char *value = status_map[i].metric == METRIC_CORE_EXECUTION_STATUS
                                            ? metric_exec_status_names[status_map[i].index]
                                            : metric_exec_error_names[status_map[i].index];
                snprintf(rel, sizeof(rel), "stats/status/%s/total", status_map[i].file);
                r = add_if_exists(s, status_map[i].metric, (const char *const[]){ dev, core_l, NULL, value },
                                  SOURCE_U64, pos, base_list, n_phys, rel);
        }
        for (size_t i = 0; i < DRIVER_STATUS_NAMES && r == 0; i++) {
                snprintf(rel, sizeof(rel), "stats/status/%s/total", driver_status_names[i]);
                r = add_if_exists(s, METRIC_CORE_DRIVER_STATUS,
                                  (const char *const[]){ dev, core_l, driver_status_names[i] }, SOURCE_U64, pos,
                                  base_list, n_phys, rel);
        }
        return r;
}

int sysfs_capacity_for(const char *device_name, uint64_t *ret) {
        const struct catalog_chip *chip = catalog_chip_by_device_name(device_name);
        if (!chip)
                return -ENOENT;
        *ret = chip->memory_bytes;
        return 0;
}

/* Reads one device's inventory and adds its series; first_core and
 * first_phys are the host-wide indexes of its first logical and physical
 * cores. */
static int add_device(struct sysfs *s, unsigned pos, unsigned index, unsigned first_core, unsigned first_phys) {
        struct device_info *di = &s->base.inv.devices[pos];
        struct inventory *inv = &s->base.inv;
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
                (void) read_string(s->root_fd, path, inv->instance_type, sizeof(inv->instance_type));
        }

        r = list_numbered(s->root_fd, base, "neuron_core", cores, MAX_CORES);
        if (r < 0)
                return r;
        di->physical_core_count = (unsigned) r;
        if (di->physical_core_count > 0) {
                snprintf(path, sizeof(path), "%s/neuron_core%u/info/architecture/arch_type", base, cores[0]);
                (void) read_string(s->root_fd, path, di->core_arch, sizeof(di->core_arch));
        }
        /* The first device decides the grouping, as the runtime applies one
         * LNC to the whole instance. */
        if (pos == 0) {
                const struct catalog_chip *chip = catalog_chip_by_device_name(di->name);
                inv->lnc = s->lnc_option ? s->lnc_option : chip ? catalog_default_lnc(chip) : 1;
                if (s->lnc_option > 1 && chip && !catalog_lnc_supported(chip, s->lnc_option))
                        return -EOPNOTSUPP;
        }
        unsigned lnc = inv->lnc;
        di->core_count = (di->physical_core_count + lnc - 1) / lnc;

        snprintf(dev, sizeof(dev), "%u", index);
        const char *const labels[] = { dev };
        r = add(s, METRIC_DEVICE_UP, labels, SOURCE_DEVICE_UP, pos, NULL, 0);
        for (unsigned c = 0; c < di->core_count && r == 0; c++) {
                bool has_mem = false;
                unsigned n_phys = di->physical_core_count - c * lnc < lnc ? di->physical_core_count - c * lnc : lnc;
                r = add_core(s, pos, first_core + c, &cores[c * lnc], n_phys, first_phys + c * lnc, &has_mem);
                any_mem = any_mem || has_mem;
        }
        char *const base_list[] = { s->dev_paths[pos] };
        if (r == 0 && any_mem)
                r = add(s, METRIC_DEVICE_MEMORY_USED, labels, SOURCE_DEVICE_MEM, pos, NULL, 0);
        if (r == 0 && sysfs_capacity_for(di->name, &di->memory_bytes) == 0)
                r = add(s, METRIC_DEVICE_MEMORY_TOTAL, labels, SOURCE_CAPACITY, pos, NULL, 0);
        if (r == 0)
                r = add_if_exists(s, METRIC_DEVICE_POWER_UTILIZATION, labels, SOURCE_POWER, pos, base_list, 1,
                                  "stats/power/utilization");
        for (size_t i = 0; i < DRIVER_ECC__COUNT && r == 0; i++) {
                snprintf(path, sizeof(path), "stats/hardware/%s", driver_ecc_names[i]);
                r = add_if_exists(s, METRIC_DEVICE_ECC_EVENTS, (const char *const[]){ dev, driver_ecc_names[i] },
                                  SOURCE_U64, pos, base_list, 1, path);
        }
        return r;
}

static void sysfs_close(struct collector *c) {
        struct sysfs *s = (struct sysfs *) c;
        if (!s)
                return;
        for (size_t i = 0; i < s->base.inv.n_series; i++)
                for (unsigned k = 0; k < s->sources[i].n_paths; k++)
                        free(s->sources[i].paths[k]);
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

/* Splits the spec's options "[<root>][,lnc=1|2]" into the root (default
 * /sys) and lnc (0 when not given). Returns 0, or -EINVAL with a reason. */
static int parse_options(const struct collector_args *args, char *root, size_t size, unsigned *ret_lnc) {
        const char *o = args->options ? args->options : "";
        const char *comma = strchr(o, ',');
        size_t len = comma ? (size_t) (comma - o) : strlen(o);
        unsigned lnc = 0;

        if (len >= size) {
                snprintf(args->err, args->errlen, "sysfs: root '%.40s...' is too long", o);
                return -EINVAL;
        }
        if (len == 0)
                snprintf(root, size, "%s", DEFAULT_ROOT);
        else
                snprintf(root, size, "%.*s", (int) len, o);
        if (comma) {
                if (strcmp(comma + 1, "lnc=1") != 0 && strcmp(comma + 1, "lnc=2") != 0) {
                        snprintf(args->err, args->errlen, "sysfs: option '%.40s' is not lnc=1 or lnc=2", comma + 1);
                        return -EINVAL;
                }
                lnc = (unsigned) (comma[5] - '0');
        }
        *ret_lnc = lnc;
        return 0;
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
        char root[PATH_MAX];
        unsigned idx[MAX_DEVICES], lnc;
        int fd;
        if (parse_options(args, root, sizeof(root), &lnc) < 0)
                return -EINVAL;
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
        char root[PATH_MAX];
        unsigned idx[MAX_DEVICES], lnc;
        int r = parse_options(args, root, sizeof(root), &lnc);
        if (r < 0)
                return r;

        struct sysfs *s = calloc(1, sizeof(*s));
        if (!s)
                return -ENOMEM;
        s->lnc_option = lnc;
        s->root_fd = -1;
        s->base.ops = &sysfs_collector_ops;
        s->base.time_scale = 1;
        struct inventory *inv = &s->base.inv;
        /* A long root is cut in this one-line summary only. */
        snprintf(inv->backend, sizeof(inv->backend), "sysfs:%.*s", (int) (sizeof(inv->backend) - 7), root);
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
        unsigned first_core = 0, first_phys = 0;
        for (unsigned d = 0; d < inv->n_devices; d++) {
                r = add_device(s, d, idx[d], first_core, first_phys);
                if (r == -EOPNOTSUPP) {
                        snprintf(args->err, args->errlen, "sysfs: lnc=%u needs NeuronCore-v3 or later; %s has %s", lnc,
                                 inv->devices[0].name, inv->devices[0].core_arch);
                        r = -EINVAL;
                        goto fail;
                }
                if (r < 0) {
                        snprintf(args->err, args->errlen, "sysfs: reading %s/%s/neuron%u: %s", root, SYSFS_DEVICE_DIR,
                                 idx[d], strerror(-r));
                        goto fail;
                }
                first_core += inv->devices[d].core_count;
                first_phys += inv->devices[d].physical_core_count;
        }
        *ret = &s->base;
        return 0;
fail:
        sysfs_close(&s->base);
        return r;
}

/* Reads file k of a series. Returns 0 with its value, or a negative errno
 * that leaves the series invalid this tick. */
static int read_file(struct sysfs *s, struct source *src, unsigned k, double *ret) {
        char buf[ATTR_MAX];
        size_t len;
        uint64_t v;
        int r = file_read_at(s->root_fd, src->paths[k], buf, sizeof(buf), 0, &len);
        if (r < 0) {
                /* A failed read of pe_cntrs breaks the delta chain. */
                src->has_prev[k] = false;
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
                if (src->counter && src->has_last[k] && (double) v < src->last[k]) {
                        src->last[k] = (double) v;
                        return -ERANGE;
                }
                src->last[k] = (double) v;
                src->has_last[k] = src->counter;
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
                        src->has_prev[k] = false;
                        return r;
                }
                bool had = src->has_prev[k];
                struct sysfs_pe_counters prev = src->prev[k];
                src->prev[k] = cur;
                src->has_prev[k] = true;
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

/* Reads every file of a series: the sum of their values, or the mean of
 * their busy ratios. Every file is read even after one failed, so that
 * each keeps its baseline. Returns 0, or the first file's error with its
 * index in *ret_failed. */
static int read_source(struct sysfs *s, struct source *src, double *ret, unsigned *ret_failed) {
        double sum = 0;
        int first = 0;
        for (unsigned k = 0; k < src->n_paths; k++) {
                double v = 0;
                int r = read_file(s, src, k, &v);
                if (r < 0 && first == 0) {
                        first = r;
                        *ret_failed = k;
                }
                sum += v;
        }
        if (first < 0)
                return first;
        *ret = src->kind == SOURCE_CORE_BUSY ? sum / src->n_paths : sum;
        return 0;
}

static int sysfs_read(struct collector *c, int64_t now_ms, struct sample_batch *out) {
        struct sysfs *s = (struct sysfs *) c;
        const struct inventory *inv = &c->inv;
        unsigned up = 0;
        int failed = 0, attempted = 0;

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
                case SOURCE_BUSY_TIME:
                        continue; /* second pass */
                case SOURCE_CAPACITY:
                        out->values[i] = (double) inv->devices[src->dev].memory_bytes;
                        out->valid[i] = s->dev_up[src->dev];
                        continue;
                default:
                        break;
                }
                if (!s->dev_up[src->dev]) {
                        memset(src->has_prev, 0, sizeof(src->has_prev));
                        if (src->kind == SOURCE_CORE_MEM)
                                s->dev_mem_ok[src->dev] = 0;
                        continue;
                }
                unsigned bad = 0;
                int r = read_source(s, src, &v, &bad);
                /* -EAGAIN: a baseline or no figure this tick, not a failure. */
                if (r < 0 && r != -EAGAIN && failed++ == 0)
                        snprintf(c->reason, sizeof(c->reason), "%s: %s", src->paths[bad],
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
                struct source *src = &s->sources[i];
                if (src->kind == SOURCE_DEVICE_MEM) {
                        out->values[i] = s->dev_mem[src->dev];
                        out->valid[i] = s->dev_mem_ok[src->dev];
                } else if (src->kind == SOURCE_BUSY_TIME && out->valid[src->ratio]) {
                        /* A valid ratio spans the previous read to this one. */
                        src->busy_us += metric_busy_us(out->values[src->ratio], now_ms - s->last_read_ms);
                        out->values[i] = (double) src->busy_us / 1e6;
                        out->valid[i] = 1;
                }
        }
        s->last_read_ms = now_ms;
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
