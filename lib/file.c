#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "lib/file.h"

/* The first bytes file_read_text() reads before it knows the size. */
#define TEXT_FIRST_READ 4096

/* Opens path for reading and checks that it is a regular file. Returns
 * the descriptor, or a negative errno (-EISDIR, -EINVAL for another kind
 * of file) with the file's type in *st (0 when it was not opened). */
static int open_regular(int dir_fd, const char *path, struct stat *st) {
        /* O_NONBLOCK: a FIFO opens at once instead of waiting for a
         * writer; on a regular file it changes nothing. */
        int fd = openat(dir_fd, path, O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
        int r = 0;

        st->st_mode = 0;
        if (fd < 0)
                return -errno;
        if (fstat(fd, st) < 0)
                r = -errno;
        else if (S_ISDIR(st->st_mode))
                r = -EISDIR;
        else if (!S_ISREG(st->st_mode))
                r = -EINVAL;
        if (r < 0) {
                close(fd);
                return r;
        }
        return fd;
}

/* Reads until end of file or until *len reaches size. Returns 0 or a
 * negative errno. */
static int read_fill(int fd, char *buf, size_t size, size_t *len) {
        while (*len < size) {
                ssize_t n = read(fd, buf + *len, size - *len);
                if (n < 0 && errno == EINTR)
                        continue;
                if (n < 0)
                        return -errno;
                if (n == 0)
                        break;
                *len += (size_t) n;
        }
        return 0;
}

int file_read_at(int dir_fd, const char *path, char *buf, size_t size, unsigned flags, size_t *ret_len) {
        struct stat st;
        size_t len = 0;
        int fd = open_regular(dir_fd, path, &st);

        if (fd < 0)
                return fd;
        int r = read_fill(fd, buf, size, &len);
        if (r == 0 && len == size && !(flags & FILE_READ_HEAD)) {
                /* A full buffer: one more byte tells a file that fit
                 * exactly from a longer one. */
                char probe;
                size_t more = 0;
                r = read_fill(fd, &probe, 1, &more);
                if (r == 0 && more > 0)
                        r = -EFBIG;
        }
        close(fd);
        if (r < 0)
                return r;
        *ret_len = len;
        return 0;
}

static const char *type_name(mode_t mode) {
        return S_ISFIFO(mode)   ? "a FIFO"
               : S_ISCHR(mode)  ? "a character device"
               : S_ISBLK(mode)  ? "a block device"
               : S_ISSOCK(mode) ? "a socket"
                                : "a special file";
}

static void format_size(size_t bytes, char *out, size_t size) {
        if (bytes >= 1024 * 1024 && bytes % (1024 * 1024) == 0)
                snprintf(out, size, "%zu MiB", bytes / (1024 * 1024));
        else if (bytes >= 1024 && bytes % 1024 == 0)
                snprintf(out, size, "%zu KiB", bytes / 1024);
        else
                snprintf(out, size, "%zu bytes", bytes);
}

int file_read_text(const char *path, size_t max, char **ret, size_t *ret_len, char *err, size_t errlen) {
        struct stat st;
        char *text = NULL;
        size_t len = 0, cap = 0;
        int r = 0;

        int fd = open_regular(AT_FDCWD, path, &st);
        if (fd == -EINVAL && st.st_mode) {
                snprintf(err, errlen, "is %s, not a regular file", type_name(st.st_mode));
                return fd;
        }
        if (fd < 0) {
                snprintf(err, errlen, "%s", strerror(-fd));
                return fd;
        }
        /* Room for max + 1 bytes at most: the one more tells a file that is
         * too long. The size fstat() gave is a hint (procfs says 0). */
        size_t want = (size_t) st.st_size + 1;
        cap = want > TEXT_FIRST_READ ? want : TEXT_FIRST_READ;
        for (;;) {
                if (cap > max + 1)
                        cap = max + 1;
                char *grown = realloc(text, cap + 1);
                if (!grown) {
                        r = -ENOMEM;
                        snprintf(err, errlen, "%s", strerror(-r));
                        goto out;
                }
                text = grown;
                r = read_fill(fd, text, cap, &len);
                if (r < 0) {
                        snprintf(err, errlen, "%s", strerror(-r));
                        goto out;
                }
                if (len < cap || cap == max + 1)
                        break;
                cap *= 2;
        }
        if (len > max) {
                char limit[32];
                format_size(max, limit, sizeof(limit));
                snprintf(err, errlen, "is larger than %s", limit);
                r = -EFBIG;
                goto out;
        }
        text[len] = '\0';
        const char *nul = memchr(text, '\0', len);
        if (nul) {
                size_t line = 1;
                for (const char *p = text; p < nul; p++)
                        line += *p == '\n';
                snprintf(err, errlen, "line %zu holds a NUL byte: not a text file", line);
                r = -EINVAL;
                goto out;
        }
out:
        close(fd);
        if (r < 0) {
                free(text);
                return r;
        }
        *ret = text;
        *ret_len = len;
        return 0;
}
