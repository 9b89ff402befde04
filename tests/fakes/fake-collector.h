/* A collector for loop tests: two series whose reads can be made to fail,
 * to take longer than the interval, or to stop the loop; and runtimes that
 * come and go (each with a neuron_runtime_info series) and devices that
 * appear and go (with backend_reason "no fake devices") at its refresh. */
#pragma once

#include <stdint.h>

#include "collectors/collector.h"

struct fake_collector {
        struct collector base;
        int fail_with;         /* <0: every read returns this */
        unsigned sleep_ms;     /* each read takes this long */
        uint64_t stop_after;   /* >0: raise SIGTERM at this read (blocked: it stays pending for the signalfd) */
        uint64_t reads;        /* reads so far */
        unsigned runtimes;     /* runtimes "rt0", "rt1" ... the next refresh lists */
        unsigned devices;      /* devices 0, 1 ... the next refresh lists */
        int refresh_fail_with; /* <0: every refresh returns this */
};

/* Returns 0 or -ENOMEM. */
int fake_collector_new(struct fake_collector **ret);
void fake_collector_free(struct fake_collector *f); /* NULL-safe */
