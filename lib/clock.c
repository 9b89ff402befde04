#include "config.h"

#include "lib/clock.h"

int64_t clock_ns(clockid_t id) {
        struct timespec ts;
        clock_gettime(id, &ts);
        return (int64_t) ts.tv_sec * 1000000000 + ts.tv_nsec;
}

int64_t clock_wall_ms(void) {
        return clock_ns(CLOCK_REALTIME) / 1000000;
}

int64_t clock_monotonic_ms(void) {
        return clock_ns(CLOCK_MONOTONIC) / 1000000;
}
