/* Answers written while they are sent. A producer appends the next piece
 * of the body when libmicrohttpd has sent what came before, so a large
 * answer (a range query's matrix) is never whole in memory, and a client
 * that reads slowly holds only its socket's buffers and one piece. The
 * body goes out chunked, gzip-compressed on the way when asked. */
#pragma once

#include <microhttpd.h>
#include <stdbool.h>

#include "lib/buf.h"

#define STREAM_PIECE_BYTES (32 * 1024) /* what a producer appends at a time, about */

/* Appends the next piece of the body to out, about STREAM_PIECE_BYTES;
 * returns false once the body is complete. */
typedef bool (*stream_produce)(void *cls, struct buf *out);

/* A response whose body produce writes; free_cls(cls) runs when the
 * response goes (also on failure). NULL when out of memory. */
struct MHD_Response *stream_response(stream_produce produce, void *cls, void (*free_cls)(void *cls), bool gzip);
