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
/* /proc/stat grows with the CPU count; the "cpu " line comes first, so
 * the head of the file is enough. */
#define STAT_HEAD 4096
#define MEMINFO_MAX 16384

const char *const host_cpu_state_names[HOST_CPU__COUNT] = {
        [HOST_CPU_USER] = "user",        [HOST_CPU_NICE] = "nice",      [HOST_CPU_SYSTEM] = "system",
        [HOST_CPU_IDLE] = "idle",        [HOST_CPU_IOWAIT] = "io_wait", [HOST_CPU_IRQ] = "irq",
        [HOST_CPU_SOFTIRQ] = "soft_irq", [HOST_CPU_STEAL] = "steal",
};

struct host {
        struct collector base;
        int root_fd;
        struct host_cpu_times prev;
        bool has_prev;
};

/* Series order: the CPU states, then memory used, then memory total. */
static int host_read(struct collector *c, int64_t now_ms, struct sample_batch *out) {
        struct host *h = (struct host *) c;
        char buf[MEMINFO_MAX];
        size_t len;
        int failed = 0;
        struct host_cpu_times cur;

        (void) now_ms;
        /* Only the head matters (see STAT_HEAD): a longer file is fine. */
        int r = file_read_at(h->root_fd, "stat", buf, STAT_HEAD, FILE_READ_HEAD, &len);
        if (r == 0)
                r = host_parse_stat(buf, len, &cur);
        if (r == 0) {
                double ratios[HOST_CPU__COUNT];
                if (h->has_prev && host_cpu_ratios(&h->prev, &cur, ratios) == 0) {
                        for (int i = 0; i < HOST_CPU__COUNT; i++) {
                                out->values[i] = ratios[i];
                                out->valid[i] = 1;
                        }
                } else if (h->has_prev) {
                        failed++;
                }
                h->prev = cur;
                h->has_prev = true;
        } else {
                h->has_prev = false;
                failed++;
        }

        struct host_memory mem;
        /* MemTotal and MemAvailable lead the file. */
        r = file_read_at(h->root_fd, "meminfo", buf, sizeof(buf), FILE_READ_HEAD, &len);
        if (r == 0)
                r = host_parse_meminfo(buf, len, &mem);
        if (r == 0) {
                out->values[HOST_CPU__COUNT] = (double) (mem.total_bytes - mem.available_bytes);
                out->values[HOST_CPU__COUNT + 1] = (double) mem.total_bytes;
                out->valid[HOST_CPU__COUNT] = out->valid[HOST_CPU__COUNT + 1] = 1;
        } else {
                failed++;
        }
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
        for (int i = 0; i < HOST_CPU__COUNT && r == 0; i++)
                r = inventory_add_series(&h->base.inv, METRIC_SYSTEM_VCPU_USAGE,
                                         (const char *const[]){ host_cpu_state_names[i] });
        if (r == 0)
                r = inventory_add_series(&h->base.inv, METRIC_SYSTEM_MEMORY_USED, NULL);
        if (r == 0)
                r = inventory_add_series(&h->base.inv, METRIC_SYSTEM_MEMORY_TOTAL, NULL);
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
