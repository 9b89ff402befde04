/* The HTTP server: libmicrohttpd's lifecycle, request dispatch and static
 * files. Handlers run on libmicrohttpd's threads; everything they read
 * through web_context is either immutable after start or thread safe
 * (the snapshot slot, the store's query path). */
#pragma once

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/socket.h>

#include "lib/buf.h"
#include "lib/faults.h"
#include "lib/history.h"
#include "lib/inventory.h"
#include "lib/snapshot.h"
#include "web/auth.h"
#include "web/expo.h"

/* Defaults for the limits a web_context leaves at zero. */
#define HTTP_DEFAULT_MAX_CONNECTIONS 2048
#define HTTP_DEFAULT_CONNECTION_TIMEOUT_S 10
#define HTTP_DEFAULT_MAX_HEADER_BYTES 8192
#define HTTP_MAX_URL_BYTES 4096 /* path plus query string; longer gets 414 */
#define HTTP_THREADS 2          /* the concurrency cap: requests served at once */

struct web_context {
        const char *web_root;
        const struct inventory *inv;      /* devices of the accelerator backend */
        const struct series_desc *series; /* every series, parallel to snapshots */
        size_t n_series;
        const struct expo *expo;
        struct expo_self self;
        struct snapshot_slot *latest;
        struct history history;      /* stored history; ops NULL when there is none */
        int64_t interval_ms;         /* simulated time between ticks */
        double time_scale;           /* simulated seconds per wall second */
        int64_t started_ms;          /* Unix ms when the daemon started */
        bool admin;                  /* serve the admin endpoint (web/admin.h) */
        struct fault_control faults; /* what it injects faults into; ops NULL when the backend cannot */

        /* Security and limits. Numbers left at 0 take the defaults above. */
        const char *tls_cert; /* PEM text (http_read_pem); with tls_key, serve HTTPS */
        const char *tls_key;
        struct auth *auth;       /* NULL: no authentication */
        bool healthz_open;       /* /healthz answers without credentials */
        const char *cors_origin; /* Access-Control-Allow-Origin, NULL or "" for off */
        unsigned max_connections;
        unsigned connection_timeout_s;       /* idle time before a connection is closed */
        size_t max_header_bytes;             /* request headers; past it 431 */
        atomic_uint_fast64_t *http_requests; /* EXPO_HTTP_CODES counters, or NULL */
};

/* What a handler answers; the server adds the common headers. */
struct web_reply {
        unsigned status;
        const char *content_type;
        struct buf body;
        const char *allow; /* Allow header for 405, or NULL */
        const char *path;  /* in: the request path, for routes matched by prefix */
};

struct http_server;

/* Reads a PEM file of at most 64 KiB that holds a "-----BEGIN ...what-----"
 * block (what: "CERTIFICATE", "PRIVATE KEY") into a new string. Returns 0,
 * or a negative errno with err saying what is wrong with the file. */
int http_read_pem(const char *path, const char *what, char **ret, char *err, size_t errlen);
void http_free_pem(char *pem); /* wipes it first; NULL-safe */

/* Binds addr and starts serving (HTTPS when ctx names a certificate and
 * key). Logs a warning when addr is not loopback and neither TLS nor
 * authentication is set up. Returns 0, -EADDRINUSE, -EACCES, -EINVAL (an
 * unreadable certificate or key) or -EIO. */
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
