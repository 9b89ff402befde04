#include "config.h"

#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <zlib.h>

#include "web/stream.h"

struct stream {
        stream_produce produce;
        void *cls;
        void (*free_cls)(void *cls);
        bool gzip;
        bool produced_all;
        bool ended; /* everything is in out */
        z_stream z;
        struct buf piece; /* produced, to compress */
        struct buf out;   /* ready to send from out_pos */
        size_t out_pos;
};

static void stream_free(void *cls) {
        struct stream *s = cls;
        if (s->gzip)
                deflateEnd(&s->z);
        s->free_cls(s->cls);
        buf_free(&s->piece);
        buf_free(&s->out);
        free(s);
}

/* Compresses piece into out, finishing the gzip stream with the last
 * piece. */
static bool deflate_piece(struct stream *s) {
        int flush = s->produced_all ? Z_FINISH : Z_NO_FLUSH;

        s->z.next_in = (Bytef *) s->piece.data;
        s->z.avail_in = (uInt) s->piece.len;
        for (;;) {
                if (!buf_reserve(&s->out, 16384))
                        return false;
                s->z.next_out = (Bytef *) s->out.data + s->out.len;
                s->z.avail_out = 16384;
                int r = deflate(&s->z, flush);
                s->out.len += 16384 - s->z.avail_out;
                if (r == Z_STREAM_END)
                        return true;
                if (r != Z_OK && r != Z_BUF_ERROR)
                        return false;
                if (s->z.avail_in == 0 && s->z.avail_out > 0 && flush == Z_NO_FLUSH)
                        return true;
        }
}

/* Makes the next bytes to send; false on failure. */
static bool refill(struct stream *s) {
        s->out.len = 0;
        s->out_pos = 0;
        s->piece.len = 0;
        s->produced_all = !s->produce(s->cls, s->gzip ? &s->piece : &s->out);
        if (s->gzip && !s->piece.failed && !deflate_piece(s))
                return false;
        s->ended = s->produced_all;
        return !s->piece.failed && !s->out.failed;
}

static ssize_t stream_read(void *cls, uint64_t pos, char *buf, size_t max) {
        struct stream *s = cls;

        /* A gzip stream may take several pieces before it puts out a byte. */
        while (s->out_pos == s->out.len) {
                if (s->ended)
                        return MHD_CONTENT_READER_END_OF_STREAM;
                if (!refill(s))
                        return MHD_CONTENT_READER_END_WITH_ERROR;
        }
        size_t n = s->out.len - s->out_pos < max ? s->out.len - s->out_pos : max;
        memcpy(buf, s->out.data + s->out_pos, n);
        s->out_pos += n;
        return (ssize_t) n;
}

struct MHD_Response *stream_response(stream_produce produce, void *cls, void (*free_cls)(void *cls), bool gzip) {
        struct stream *s = calloc(1, sizeof(*s));

        if (!s) {
                free_cls(cls);
                return NULL;
        }
        *s = (struct stream){ .produce = produce, .cls = cls, .free_cls = free_cls, .gzip = gzip };
        /* Level 1, as web/gzip.c; gzip framing (15 + 16). */
        if (gzip && deflateInit2(&s->z, Z_BEST_SPEED, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) != Z_OK) {
                s->gzip = false;
                stream_free(s);
                return NULL;
        }
        struct MHD_Response *r =
                MHD_create_response_from_callback(MHD_SIZE_UNKNOWN, STREAM_PIECE_BYTES, stream_read, s, stream_free);
        if (!r)
                stream_free(s);
        return r;
}
