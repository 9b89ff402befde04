#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <unistd.h>

#include "lib/file.h"

int file_read_at(int dir_fd, const char *path, char *buf, size_t size, size_t *ret_len) {
        int fd = openat(dir_fd, path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
        size_t len = 0;
        int r = 0;

        if (fd < 0)
                return -errno;
        while (r == 0) {
                char probe;
                /* A full buffer: one more byte tells a file that fit exactly
                 * from one that was cut. */
                ssize_t n = len < size ? read(fd, buf + len, size - len) : read(fd, &probe, 1);
                if (n < 0 && errno == EINTR)
                        continue;
                if (n < 0)
                        r = -errno;
                else if (n == 0)
                        break;
                else if (len == size)
                        r = 1;
                else
                        len += (size_t) n;
        }
        close(fd);
        if (r < 0)
                return r;
        *ret_len = len;
        return r;
}
