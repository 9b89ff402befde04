#include "config.h"

#include <errno.h>
#include <stdbool.h>
#include <zlib.h>

#include "web/gzip.h"

/* The fastest level: a scrape is repetitive text, and level 1 already
 * shrinks it about sixfold. A small input gets a small window and hash, so
 * compressing it allocates little. */
int gzip_encode(const struct buf *in, struct buf *out) {
        z_stream zs = { 0 };
        bool small = in->len < 8192;
        int r = 0;

        if (deflateInit2(&zs, Z_BEST_SPEED, Z_DEFLATED, (small ? 10 : 15) + 16, small ? 2 : 8, Z_DEFAULT_STRATEGY) !=
            Z_OK)
                return -ENOMEM;
        uLong bound = deflateBound(&zs, (uLong) in->len) + 32;
        if (!buf_reserve(out, bound)) {
                r = -ENOMEM;
                goto out;
        }
        zs.next_in = (Bytef *) in->data;
        zs.avail_in = (uInt) in->len;
        zs.next_out = (Bytef *) out->data;
        zs.avail_out = (uInt) bound;
        if (deflate(&zs, Z_FINISH) != Z_STREAM_END) {
                r = -EIO;
                goto out;
        }
        out->len = zs.total_out;
out:
        deflateEnd(&zs);
        return r;
}
