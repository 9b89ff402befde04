/* Reading small files whole: sysfs and procfs attributes, and the files
 * the settings name. */
#pragma once

#include <stddef.h>

/* Reads up to size bytes of path (relative to dir_fd, or AT_FDCWD) into
 * buf, retrying EINTR. Returns 0 when the whole file fit, 1 when it is
 * longer and only its first size bytes were read, or a negative errno. */
int file_read_at(int dir_fd, const char *path, char *buf, size_t size, size_t *ret_len);
