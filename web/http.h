/* The HTTP server: libmicrohttpd's lifecycle, and the dispatcher that
 * takes every request through the route table's steps (web/routes.h).
 * Handlers run on libmicrohttpd's threads (web/context.h says what they
 * may read). */
#pragma once

#include <stdint.h>
#include <sys/socket.h>

#include "web/context.h"

/* Defaults for the limits a web_context leaves at zero. */
#define HTTP_DEFAULT_MAX_CONNECTIONS 2048
#define HTTP_DEFAULT_CONNECTION_TIMEOUT_S 10
#define HTTP_DEFAULT_HEADER_TIMEOUT_S 10
#define HTTP_DEFAULT_MAX_HEADER_BYTES 8192
#define HTTP_DEFAULT_MAX_QUERIES 2
#define HTTP_DEFAULT_MAX_QUERY_SERIES 10000
#define HTTP_DEFAULT_MAX_QUERY_POINTS 1000000
/* TLS 1.2 and 1.3 only, with GnuTLS's normal choice of ciphers. */
#define HTTP_DEFAULT_TLS_PRIORITIES "NORMAL:-VERS-ALL:+VERS-TLS1.3:+VERS-TLS1.2"

#define HTTP_THREADS 2 /* polling threads: requests served at once, their work being quick */
/* Queries waiting for a place beyond max_queries, and for how long. */
#define HTTP_QUERIES_WAITING 32
#define HTTP_QUERY_WAIT_MS 10000
/* Passwords waiting for their hash, and for how long. */
#define HTTP_VERIFY_WAITING 64
#define HTTP_VERIFY_WAIT_MS 5000

struct http_server;

/* Reads a PEM file of at most 64 KiB that holds a "-----BEGIN ...what-----"
 * block (what: "CERTIFICATE", "PRIVATE KEY") into a new string. Returns 0,
 * or a negative errno with err saying what is wrong with the file. */
int http_read_pem(const char *path, const char *what, char **ret, char *err, size_t errlen);
void http_free_pem(char *pem); /* wipes it first; NULL-safe */

/* Checks that cert and key (PEM text) are a certificate chain and its
 * private key that TLS can serve with. Returns 0, or -EINVAL with err
 * saying why (GnuTLS's words). */
int http_check_tls(const char *cert, const char *key, char *err, size_t errlen);

/* Checks the settings of ctx that could keep the server from starting
 * (tls_priorities, allowed_hosts), for --check-config. Returns 0, or
 * -EINVAL with err saying what is wrong. */
int http_check_settings(const struct web_context *ctx, char *err, size_t errlen);

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
