/* The HTTP server: libmicrohttpd's lifecycle, request dispatch and static
 * files. Handlers run on libmicrohttpd's threads; everything they read
 * through web_context is either immutable after start or thread safe
 * (the snapshot slot, the store's query path). */
#pragma once

#include <stdint.h>
#include <sys/socket.h>

#include "collectors/collector.h"
#include "daemon/snapshot.h"
#include "storage/store.h"
#include "web/buf.h"
#include "web/expo.h"

struct web_context {
        const char *web_root;
        const struct inventory *inv;       /* devices of the accelerator backend */
        const struct series_desc *series;  /* every series, parallel to snapshots */
        size_t n_series;
        const struct expo *expo;
        struct expo_self self;
        struct snapshot_slot *latest;
        struct store *store;
        int64_t interval_ms;               /* simulated time between ticks */
        double time_scale;                 /* simulated seconds per wall second */
        int64_t started_ms;                /* Unix ms when the daemon started */
        struct collector *admin;           /* the backend web/admin.c pokes; NULL when admin is off */
};

/* What a handler answers; the server adds the common headers. */
struct web_reply {
        unsigned status;
        const char *content_type;
        struct buf body;
        const char *allow; /* Allow header for 405, or NULL */
};

struct http_server;

/* Binds addr and starts serving. Returns 0, -EADDRINUSE, -EACCES or -EIO. */
int http_start(const struct sockaddr *addr, socklen_t addr_len, const struct web_context *ctx,
               struct http_server **ret);
/* Serves on an already bound, listening stream socket (socket activation);
 * the server owns listen_fd from then on. Returns 0, -EBADF or -EIO. */
int http_start_fd(int listen_fd, const struct web_context *ctx, struct http_server **ret);
/* The port actually bound (useful with port 0). */
uint16_t http_port(const struct http_server *srv);
void http_stop(struct http_server *srv); /* NULL-safe; waits for handlers */

/* Fills a Prometheus-style JSON error reply. */
void web_reply_error(struct web_reply *reply, unsigned status, const char *error_type, const char *fmt, ...)
        __attribute__((format(printf, 4, 5)));
