#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "collectors/host.h"
#include "lib/file.h"

#define DEFAULT_ROOT "/proc"
/* /proc/stat grows with the CPU count; the cpu lines come first, so the
 * head of the file is enough: 64 KiB holds a thousand of them. */
#define STAT_HEAD 65536
#define MEMINFO_MAX 16384

const char *const host_cpu_state_names[HOST_CPU__COUNT] = {
        [HOST_CPU_USER] = "user",        [HOST_CPU_NICE] = "nice",      [HOST_CPU_SYSTEM] = "system",
        [HOST_CPU_IDLE] = "idle",        [HOST_CPU_IOWAIT] = "io_wait", [HOST_CPU_IRQ] = "irq",
        [HOST_CPU_SOFTIRQ] = "soft_irq", [HOST_CPU_STEAL] = "steal",
};

struct host {
        struct collector base;
        int root_fd;
        long clock_ticks; /* USER_HZ */
        struct host_cpu_times prev;
        bool has_prev;
        char stat[STAT_HEAD]; /* the head of /proc/stat, this tick */
};

/* The series, in this order. */
enum {
        SERIES_VCPU_COUNT,
        SERIES_USAGE_USER,
        SERIES_USAGE_SYSTEM,
        SERIES_SECONDS, /* HOST_CPU__COUNT of them */
        SERIES_MEMORY_USED = SERIES_SECONDS + HOST_CPU__COUNT,
        SERIES_MEMORY_TOTAL,
        SERIES_SWAP_USED,
        SERIES_SWAP_TOTAL,
        SERIES__COUNT,
};

static void put(struct sample_batch *out, size_t i, double v) {
        out->values[i] = v;
        out->valid[i] = 1;
}

static int read_cpu(struct host *h, struct sample_batch *out) {
        struct host_cpu_times cur;
        size_t len;

        /* Only the head matters (see STAT_HEAD): a longer file is fine. */
        int r = file_read_at(h->root_fd, "stat", h->stat, sizeof(h->stat), FILE_READ_HEAD, &len);
        if (r == 0)
                r = host_parse_stat(h->stat, len, &cur);
        if (r < 0) {
                h->has_prev = false;
                return r;
        }
        if (cur.vcpus > 0)
                put(out, SERIES_VCPU_COUNT, cur.vcpus);
        for (int i = 0; i < HOST_CPU__COUNT; i++)
                put(out, SERIES_SECONDS + i, (double) cur.ticks[i] / (double) h->clock_ticks);
        struct host_cpu_usage usage;
        if (h->has_prev)
                r = host_cpu_usage(&h->prev, &cur, &usage);
        if (h->has_prev && r == 0) {
                put(out, SERIES_USAGE_USER, usage.user);
                put(out, SERIES_USAGE_SYSTEM, usage.system);
        }
        h->prev = cur;
        h->has_prev = true;
        /* No time elapsed between two reads: nothing to report, nothing wrong. */
        return r == -ENODATA ? 0 : r;
}

static int read_memory(struct host *h, struct sample_batch *out) {
        char buf[MEMINFO_MAX];
        struct host_memory mem;
        size_t len;

        /* MemTotal and MemAvailable lead the file, the swap lines follow. */
        int r = file_read_at(h->root_fd, "meminfo", buf, sizeof(buf), FILE_READ_HEAD, &len);
        if (r == 0)
                r = host_parse_meminfo(buf, len, &mem);
        if (r < 0)
                return r;
        put(out, SERIES_MEMORY_USED, (double) (mem.total_bytes - mem.available_bytes));
        put(out, SERIES_MEMORY_TOTAL, (double) mem.total_bytes);
        if (mem.has_swap) {
                put(out, SERIES_SWAP_USED, (double) (mem.swap_total_bytes - mem.swap_free_bytes));
                put(out, SERIES_SWAP_TOTAL, (double) mem.swap_total_bytes);
        }
        return 0;
}

static int host_read(struct collector *c, int64_t now_ms, struct sample_batch *out) {
        struct host *h = (struct host *) c;
        (void) now_ms;
        int failed = (read_cpu(h, out) < 0) + (read_memory(h, out) < 0);
        /* Neither file readable: the collector is down, not partly up. */
        return failed == 2 ? -EIO : failed;
}

static void host_close(struct collector *c) {
        struct host *h = (struct host *) c;
        if (!h)
                return;
        inventory_free(&h->base.inv);
        if (h->root_fd >= 0)
                close(h->root_fd);
        free(h);
}

static const char *root_of(const struct collector_args *args) {
        return args->options && args->options[0] ? args->options : DEFAULT_ROOT;
}

static int host_probe(const struct collector_args *args) {
        char path[512];
        snprintf(path, sizeof(path), "%s/stat", root_of(args));
        return access(path, R_OK) == 0 ? 0 : -ENODEV;
}

static int host_open(const struct collector_args *args, struct collector **ret) {
        const char *root = root_of(args);
        int r = 0;

        struct host *h = calloc(1, sizeof(*h));
        if (!h)
                return -ENOMEM;
        h->base.ops = &host_collector_ops;
        h->base.time_scale = 1;
        snprintf(h->base.inv.backend, sizeof(h->base.inv.backend), "host:%s", root);
        h->root_fd = open(root, O_PATH | O_DIRECTORY | O_CLOEXEC);
        if (h->root_fd < 0) {
                r = -errno;
                snprintf(args->err, args->errlen, "host: %s: %s", root, strerror(-r));
                goto fail;
        }
        h->clock_ticks = sysconf(_SC_CLK_TCK);
        if (h->clock_ticks <= 0)
                h->clock_ticks = 100;
        /* In the order of the SERIES_ enum. */
        struct inventory *inv = &h->base.inv;
        r = inventory_add_series(inv, METRIC_SYSTEM_VCPU_COUNT, NULL);
        if (r == 0)
                r = inventory_add_series(inv, METRIC_SYSTEM_VCPU_USAGE, (const char *const[]){ "user" });
        if (r == 0)
                r = inventory_add_series(inv, METRIC_SYSTEM_VCPU_USAGE, (const char *const[]){ "system" });
        for (int i = 0; i < HOST_CPU__COUNT && r == 0; i++)
                r = inventory_add_series(inv, METRIC_SYSTEM_VCPU_SECONDS,
                                         (const char *const[]){ host_cpu_state_names[i] });
        static const enum metric_id memory[] = { METRIC_SYSTEM_MEMORY_USED, METRIC_SYSTEM_MEMORY_TOTAL,
                                                 METRIC_SYSTEM_SWAP_USED, METRIC_SYSTEM_SWAP_TOTAL };
        for (size_t i = 0; i < sizeof(memory) / sizeof(memory[0]) && r == 0; i++)
                r = inventory_add_series(inv, memory[i], NULL);
        if (r < 0)
                goto fail;
        *ret = &h->base;
        return 0;
fail:
        host_close(&h->base);
        return r;
}

const struct collector_ops host_collector_ops = {
        .name = "host",
        .probe = host_probe,
        .open = host_open,
        .read = host_read,
        .close = host_close,
};
