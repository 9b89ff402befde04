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

/* Forgets the devices, their series and what was read with them: the
 * driver's devices are gone, or could not be taken in whole. */
static void drop_devices(struct sysfs *s) {
        struct inventory *inv = &s->base.inv;
        for (size_t i = 0; i < inv->n_series; i++)
                for (unsigned k = 0; k < s->sources[i].n_paths; k++)
                        free(s->sources[i].paths[k]);
        if (s->dev_paths)
                for (unsigned d = 0; d < inv->n_devices; d++)
                        free(s->dev_paths[d]);
        free(s->dev_paths);
        free(s->sources);
        free(s->dev_up);
        free(s->dev_mem);
        free(s->dev_mem_ok);
        s->dev_paths = NULL;
        s->sources = NULL;
        s->dev_up = NULL;
        s->dev_mem = NULL;
        s->dev_mem_ok = NULL;
        s->last_read_ms = 0;
        inventory_clear_series(inv);
        free(inv->devices); /* sysfs knows no peers: nothing else to free */
        inv->devices = NULL;
        inv->n_devices = 0;
        inv->lnc = 0;
        inv->instance_type[0] = '\0';
        inv->driver_version[0] = '\0';
        inv->ultraserver = (struct ultraserver_identity){ 0 };
}

static void sysfs_close(struct collector *c) {
        struct sysfs *s = (struct sysfs *) c;
        if (!s)
                return;
        drop_devices(s);
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

/* Lists the driver's devices under the root (root_fd, named root) into
 * idx, sorted. Returns how many; when none, why in reason: a Neuron
 * driver that is not loaded, or one that lists no device. */
static unsigned list_devices(int root_fd, const char *root, unsigned *idx, char *reason, size_t size) {
        char version[32] = "";
        int n = list_numbered(root_fd, SYSFS_DEVICE_DIR, "neuron", idx, MAX_DEVICES);
        if (n > 0)
                return (unsigned) n;
        /* The module's version says whether the driver is loaded at all. */
        bool loaded = read_string(root_fd, SYSFS_VERSION_FILE, version, sizeof(version)) == 0;
        if (n == -ENOENT && !loaded)
                snprintf(reason, size, "%s/%s is missing: is the Neuron driver loaded?", root, SYSFS_DEVICE_DIR);
        else if (n == -ENOENT)
                snprintf(reason, size, "%s/%s is missing, though the Neuron driver %s is loaded", root,
                         SYSFS_DEVICE_DIR, version);
        else if (n == 0)
                snprintf(reason, size, "%s/%s lists no device%s%s%s", root, SYSFS_DEVICE_DIR,
                         loaded ? " (Neuron driver " : "", version, loaded ? ")" : "");
        else
                snprintf(reason, size, "%s/%s: %s", root, SYSFS_DEVICE_DIR, strerror(-n));
        return 0;
}

static int sysfs_probe(const struct collector_args *args) {
        char root[PATH_MAX];
        unsigned idx[MAX_DEVICES], lnc;
        if (parse_options(args, root, sizeof(root), &lnc) < 0)
                return -EINVAL;
        int fd = open(root, O_PATH | O_DIRECTORY | O_CLOEXEC);
        if (fd < 0) {
                snprintf(args->err, args->errlen, "the root %s: %s", root, strerror(errno));
                return -ENODEV; /* no root is no driver */
        }
        unsigned n = list_devices(fd, root, idx, args->err, args->errlen);
        close(fd);
        if (n == 0)
                return -ENODEV;
        snprintf(args->err, args->errlen, "%s/%s lists %u devices", root, SYSFS_DEVICE_DIR, n);
        return 0;
}

/* Reads a class attribute of the UltraServer files into buf (NUL-free). */
static int read_class_file(int root_fd, const char *name, char *buf, size_t size, size_t *ret_len) {
        char path[64];
        snprintf(path, sizeof(path), "%s/%s", SYSFS_CLASS_DIR, name);
        return file_read_at(root_fd, path, buf, size, 0, ret_len);
}

static void ultraserver_error(struct ultraserver_identity *us, const char *name, int r) {
        snprintf(us->error, sizeof(us->error), "%s/%s: %s", SYSFS_CLASS_DIR, name,
                 r == -EBUSY     ? "busy: the driver is still electing the UltraServer's nodes"
                 : r == -EINVAL  ? "not in the driver's format"
                 : r == -ENODATA ? "empty"
                                 : strerror(-r));
}

/* The UltraServer this host is a node of (sysfs.h names the files): the
 * largest size whose node id and serial say it is one. Without the files
 * (an older driver, a chip without UltraServers) it is none; a file that
 * cannot be read or parsed leaves it none with the reason. Read once, at
 * open: a host changes UltraServer only with a driver reload. */
static void read_ultraserver(int root_fd, struct ultraserver_identity *ret) {
        static const unsigned sizes[] = { 4, 2 };
        struct ultraserver_identity us = { 0 };
        char buf[64], name[32], id[24];
        size_t len;
        int node;

        int r = read_class_file(root_fd, "ultraserver_mode", buf, sizeof(buf), &len);
        if (r == -ENOENT)
                goto done;
        if (r >= 0)
                r = sysfs_parse_ultraserver_modes(buf, len, &us.modes);
        if (r < 0) {
                ultraserver_error(&us, "ultraserver_mode", r);
                goto done;
        }
        for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
                snprintf(name, sizeof(name), "node_id_%u", sizes[i]);
                r = read_class_file(root_fd, name, buf, sizeof(buf), &len);
                if (r >= 0)
                        r = sysfs_parse_node_id(buf, len, &node);
                if (r >= 0 && node >= (int) sizes[i])
                        r = -EINVAL;
                if (r == -ENOENT || (r >= 0 && node < 0))
                        continue;
                if (r < 0) {
                        ultraserver_error(&us, name, r);
                        goto done;
                }
                snprintf(name, sizeof(name), "server_id_%u", sizes[i]);
                r = read_class_file(root_fd, name, buf, sizeof(buf), &len);
                if (r >= 0)
                        r = sysfs_parse_server_id(buf, len, id, sizeof(id));
                if (r < 0) {
                        ultraserver_error(&us, name, r);
                        goto done;
                }
                snprintf(us.id, sizeof(us.id), "%s", id);
                us.node = (unsigned) node;
                us.nodes = sizes[i];
                break;
        }
done:
        *ret = us;
}

/* Takes in the devices idx[0..n): their inventory and series, and what
 * the driver says of the host. Returns 0, or a negative errno with why in
 * err (-EOPNOTSUPP: the lnc= of the spec does not fit the chip), the
 * collector then without devices. */
static int add_devices(struct sysfs *s, const unsigned *idx, unsigned n, char *err, size_t errlen) {
        struct inventory *inv = &s->base.inv;
        inv->devices = calloc(n, sizeof(*inv->devices));
        s->dev_paths = calloc(n, sizeof(*s->dev_paths));
        s->dev_up = calloc(n, 1);
        s->dev_mem = calloc(n, sizeof(*s->dev_mem));
        s->dev_mem_ok = calloc(n, 1);
        if (!inv->devices || !s->dev_paths || !s->dev_up || !s->dev_mem || !s->dev_mem_ok) {
                drop_devices(s);
                snprintf(err, errlen, "sysfs: %s", strerror(ENOMEM));
                return -ENOMEM;
        }
        /* Only now: drop_devices() walks n_devices entries of these arrays. */
        inv->n_devices = n;
        (void) read_string(s->root_fd, SYSFS_VERSION_FILE, inv->driver_version, sizeof(inv->driver_version));
        read_ultraserver(s->root_fd, &inv->ultraserver);
        unsigned first_core = 0, first_phys = 0;
        for (unsigned d = 0; d < n; d++) {
                int r = add_device(s, d, idx[d], first_core, first_phys);
                if (r == -EOPNOTSUPP)
                        snprintf(err, errlen, "sysfs: lnc=%u needs NeuronCore-v3 or later; %s has %s", s->lnc_option,
                                 inv->devices[0].name, inv->devices[0].core_arch);
                else if (r < 0)
                        snprintf(err, errlen, "sysfs: reading %s/%s/neuron%u: %s", s->root, SYSFS_DEVICE_DIR, idx[d],
                                 strerror(-r));
                if (r < 0) {
                        drop_devices(s);
                        return r;
                }
                first_core += inv->devices[d].core_count;
                first_phys += inv->devices[d].physical_core_count;
        }
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
        s->root_fd = open(root, O_PATH | O_DIRECTORY | O_CLOEXEC);
        if (s->root_fd < 0) {
                /* A root that is no directory is a bad setting. */
                snprintf(args->err, args->errlen, "sysfs: the root %s: %s", root, strerror(errno));
                r = -EINVAL;
                goto fail;
        }
        /* No devices is no error: the driver may load later (refresh()). */
        unsigned n = list_devices(s->root_fd, root, idx, inv->backend_reason, sizeof(inv->backend_reason));
        r = n > 0 ? add_devices(s, idx, n, args->err, args->errlen) : 0;
        if (r < 0) {
                /* The spec's lnc= is a setting too. */
                r = r == -EOPNOTSUPP ? -EINVAL : r;
                goto fail;
        }
        *ret = &s->base;
        return 0;
fail:
        sysfs_close(&s->base);
        return r;
}

/* Takes in the driver's devices when there were none (the driver loaded
 * after the daemon started), or forgets them when every one is gone (it
 * was unloaded). While there are some, the set is fixed: a device that
 * vanishes is down (neuron_device_up 0), and one added later is not seen. */
static int sysfs_refresh(struct collector *c, int64_t now_ms) {
        struct sysfs *s = (struct sysfs *) c;
        struct inventory *inv = &c->inv;
        char reason[sizeof(inv->backend_reason)] = "";
        unsigned idx[MAX_DEVICES];
        bool changed = false;

        (void) now_ms;
        /* A fresh view of the root, as read() takes one. */
        int fd = open(s->root, O_PATH | O_DIRECTORY | O_CLOEXEC);
        if (fd < 0)
                return -errno;
        close(s->root_fd);
        s->root_fd = fd;
        unsigned n = list_devices(s->root_fd, s->root, idx, reason, sizeof(reason));
        if (n > 0 && inv->n_devices > 0)
                return 0;
        if (n > 0) {
                int r = add_devices(s, idx, n, reason, sizeof(reason));
                /* Without memory the list stays as it was: no devices. */
                if (r == -ENOMEM)
                        return r;
                changed = r == 0;
        } else if (inv->n_devices > 0) {
                drop_devices(s);
                changed = true;
        }
        /* Devices that cannot be taken in (lnc= that does not fit) are
         * none, with the reason, and tried again next time. */
        changed = changed || strcmp(reason, inv->backend_reason) != 0;
        snprintf(inv->backend_reason, sizeof(inv->backend_reason), "%s", reason);
        return changed;
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
        /* Every device gone at once: the driver was unloaded (the next
         * refresh() forgets them). */
        if (inv->n_devices > 0 && up == 0)
                return -ENODEV;
        /* Not one file readable: the collector is down, not partly up. */
        return attempted > 0 && failed == attempted ? -EIO : failed;
}

const struct collector_ops sysfs_collector_ops = {
        .name = "sysfs",
        .probe = sysfs_probe,
        .open = sysfs_open,
        .refresh = sysfs_refresh,
        .read = sysfs_read,
        .close = sysfs_close,
};
