/* Test-only: LD_PRELOAD this into neurond to make reads of one file hang,
 * as a driver whose show() never returns would.
 *
 * While the file that $NEUROND_HANG_GATE names exists, read(2) of a file
 * whose path ends with $NEUROND_HANG_PATH waits; tests create the gate to
 * hang the next read and remove it to release a read that waits. The file
 * stays a regular file, which neurond reads like any other; a FIFO, which
 * would hang a blocking read just as well, neurond refuses to open. */
#include "config.h"

#include <dlfcn.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

typedef ssize_t (*read_fn)(int, void *, size_t);

static read_fn real_read(void) {
        static _Atomic(read_fn) real;
        read_fn fn = atomic_load(&real);
        if (!fn) {
                fn = (read_fn) dlsym(RTLD_NEXT, "read");
                atomic_store(&real, fn);
        }
        return fn;
}

/* Whether fd is open on a file whose path ends with suffix. */
static int fd_ends_with(int fd, const char *suffix) {
        char link[64], path[4096];
        snprintf(link, sizeof(link), "/proc/self/fd/%d", fd);
        ssize_t n = readlink(link, path, sizeof(path) - 1);
        size_t len = strlen(suffix);
        if (n < 0 || (size_t) n < len)
                return 0;
        path[n] = '\0';
        return strcmp(path + n - len, suffix) == 0;
}

ssize_t read(int fd, void *buf, size_t count) {
        const char *gate = getenv("NEUROND_HANG_GATE"), *suffix = getenv("NEUROND_HANG_PATH");

        if (gate && suffix && *suffix && fd_ends_with(fd, suffix)) {
                const struct timespec pause = { .tv_nsec = 10 * 1000 * 1000 };
                while (access(gate, F_OK) == 0)
                        nanosleep(&pause, NULL);
        }
        return real_read()(fd, buf, count);
}
