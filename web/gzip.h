/* gzip (RFC 1952) of a whole buffer, for response bodies. */
#pragma once

#include "lib/buf.h"

/* Compresses in into out (which should be empty) at the fastest level.
 * Returns 0, -ENOMEM or -EIO; out may hold partial data on failure. */
int gzip_encode(const struct buf *in, struct buf *out);
