/* Reading small files whole: sysfs and procfs attributes, and the files
 * the settings name (the config file, the authentication and TLS files).
 *
 * Every file is opened without blocking (O_NONBLOCK: opening a FIFO does
 * not wait for a writer) and must be a regular file: a FIFO, a device such
 * as /dev/zero, a socket or a directory is refused before a byte is read,
 * so that no read here waits on another process or runs without end.
 * Sysfs and procfs attributes are regular files. Reads stop at the
 * caller's cap: a longer file is an error unless the caller asks for its
 * head only. */
#pragma once

#include <stddef.h>

/* file_read_at() flag: a file longer than the buffer is fine; its first
 * size bytes are read (procfs files that grow with the machine, whose
 * head holds what the caller wants). */
#define FILE_READ_HEAD 1u

/* Reads path (relative to dir_fd, or AT_FDCWD) into buf, at most size
 * bytes, retrying EINTR. Returns 0, or -EFBIG when the file is longer than
 * size (without FILE_READ_HEAD), -EISDIR for a directory, -EINVAL for
 * another file that is not regular (a FIFO, a device, a socket), or the
 * errno of open(2) or read(2). */
int file_read_at(int dir_fd, const char *path, char *buf, size_t size, unsigned flags, size_t *ret_len);

/* Reads the text file path whole, at most max bytes, into a new string
 * (free() it) of *ret_len bytes plus a terminating NUL. Text holds no NUL
 * byte. Returns 0, or a negative errno with err saying what is wrong, not
 * naming the file (the caller does): "is a FIFO, not a regular file", "is
 * larger than 64 KiB", "line 3 holds a NUL byte: not a text file", or the
 * system's words for the other errors ("Is a directory"). */
int file_read_text(const char *path, size_t max, char **ret, size_t *ret_len, char *err, size_t errlen);
