/* Test-only: LD_PRELOAD this into neurond to step its wall clock.
 *
 * CLOCK_REALTIME (clock_gettime, gettimeofday, time) is shifted by the
 * number of seconds written in the file that $NEUROND_CLOCK_SHIM names
 * (for example "-3600"); tests rewrite the file while the daemon runs.
 * The file is re-read at most every 20 ms. CLOCK_MONOTONIC is untouched,
 * exactly as when an administrator or NTP steps the clock. */
#include "config.h"

#include <dlfcn.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

typedef int (*clock_gettime_fn)(clockid_t, struct timespec *);

static atomic_llong shim_offset_s;
static atomic_llong shim_next_read_ns;

static clock_gettime_fn real_clock_gettime(void) {
        static _Atomic(clock_gettime_fn) real;
        clock_gettime_fn fn = atomic_load(&real);
        if (!fn) {
                fn = (clock_gettime_fn) dlsym(RTLD_NEXT, "clock_gettime");
                atomic_store(&real, fn);
        }
        return fn;
}

static long long shim_offset(void) {
        struct timespec now;
        const char *path = getenv("NEUROND_CLOCK_SHIM");

        if (!path || real_clock_gettime()(CLOCK_MONOTONIC, &now) < 0)
                return 0;
        long long now_ns = (long long) now.tv_sec * 1000000000 + now.tv_nsec;
        if (now_ns < atomic_load(&shim_next_read_ns))
                return atomic_load(&shim_offset_s);
        atomic_store(&shim_next_read_ns, now_ns + 20000000);
        /* Plain read(2): no stdio buffers, safe from any thread. */
        int fd = open(path, O_RDONLY | O_CLOEXEC);
        if (fd >= 0) {
                char text[32];
                ssize_t n = read(fd, text, sizeof(text) - 1);
                close(fd);
                if (n > 0) {
                        text[n] = '\0';
                        atomic_store(&shim_offset_s, strtoll(text, NULL, 10));
                }
        }
        return atomic_load(&shim_offset_s);
}

int clock_gettime(clockid_t id, struct timespec *ts) {
        int r = real_clock_gettime()(id, ts);
        if (r == 0 && (id == CLOCK_REALTIME || id == CLOCK_REALTIME_COARSE))
                ts->tv_sec += (time_t) shim_offset();
        return r;
}

int gettimeofday(struct timeval *restrict tv, void *restrict tz) {
        struct timespec ts;
        if (clock_gettime(CLOCK_REALTIME, &ts) < 0)
                return -1;
        tv->tv_sec = ts.tv_sec;
        tv->tv_usec = ts.tv_nsec / 1000;
        return 0;
}

time_t time(time_t *out) {
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        if (out)
                *out = ts.tv_sec;
        return ts.tv_sec;
}
