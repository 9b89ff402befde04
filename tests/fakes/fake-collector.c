#include "config.h"

#include <errno.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include "tests/fakes/fake-collector.h"

static int fake_read(struct collector *c, int64_t now_ms, struct sample_batch *out) {
        struct fake_collector *f = (struct fake_collector *) c;

        f->reads++;
        if (f->sleep_ms) {
                struct timespec ts = { .tv_sec = f->sleep_ms / 1000, .tv_nsec = (long) (f->sleep_ms % 1000) * 1000000 };
                nanosleep(&ts, NULL);
        }
        if (f->stop_after && f->reads == f->stop_after)
                kill(getpid(), SIGTERM);
        if (f->fail_with < 0)
                return f->fail_with;
        for (size_t i = 0; i < out->n; i++) {
                out->values[i] = (double) f->reads;
                out->valid[i] = 1;
        }
        return 0;
}

/* Lists f->devices devices, and f->runtimes runtimes, each holding core
 * k, after the two device series. */
static int fake_refresh(struct collector *c, int64_t now_ms) {
        struct fake_collector *f = (struct fake_collector *) c;
        struct inventory *inv = &c->inv;
        char tag[16], pid[16];
        bool devices_changed = inv->n_devices != f->devices;

        (void) now_ms;
        if (f->refresh_fail_with < 0)
                return f->refresh_fail_with;
        if (devices_changed) {
                struct device_info *devices = calloc(f->devices ? f->devices : 1, sizeof(*devices));
                if (!devices)
                        return -ENOMEM;
                for (unsigned k = 0; k < f->devices; k++)
                        devices[k].index = k;
                free(inv->devices);
                inv->devices = devices;
                inv->n_devices = f->devices;
                snprintf(inv->backend_reason, sizeof(inv->backend_reason), "%s", f->devices ? "" : "no fake devices");
        }
        if (inv->n_runtimes == f->runtimes)
                return devices_changed;
        inventory_clear_runtimes(inv);
        while (inv->n_series > 2)
                inv->n_series--;
        for (unsigned k = 0; k < f->runtimes; k++) {
                snprintf(tag, sizeof(tag), "rt%u", k);
                snprintf(pid, sizeof(pid), "%u", 100 + k);
                if (inventory_add_runtime(inv, 100 + k, tag, &k, 1) < 0 ||
                    inventory_add_series(inv, METRIC_RUNTIME_INFO, (const char *[]){ tag, pid }) < 0)
                        return -ENOMEM;
        }
        return 1;
}

static void fake_close(struct collector *c) {
        fake_collector_free((struct fake_collector *) c);
}

static const struct collector_ops fake_ops = {
        .name = "fake",
        .refresh = fake_refresh,
        .read = fake_read,
        .close = fake_close,
};

int fake_collector_new(struct fake_collector **ret) {
        static const char *const device[] = { "0" };
        struct fake_collector *f = calloc(1, sizeof(*f));
        if (!f)
                return -ENOMEM;
        f->base.ops = &fake_ops;
        f->base.time_scale = 1;
        snprintf(f->base.inv.backend, sizeof(f->base.inv.backend), "fake");
        if (inventory_add_series(&f->base.inv, METRIC_DEVICE_MEMORY_USED, device) < 0 ||
            inventory_add_series(&f->base.inv, METRIC_DEVICE_MEMORY_TOTAL, device) < 0) {
                fake_collector_free(f);
                return -ENOMEM;
        }
        *ret = f;
        return 0;
}

void fake_collector_free(struct fake_collector *f) {
        if (!f)
                return;
        inventory_free(&f->base.inv);
        free(f);
}
