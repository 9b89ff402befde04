#include "config.h"

#include <errno.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

#include "lib/file.h"
#include "lib/log.h"
#include "web/admin.h"
#include "web/http.h"
#include "web/routes.h"
#include "web/scrape.h"

#define PEM_MAX (64 * 1024)

struct http_server {
        struct MHD_Daemon *mhd;
        const struct web_context *ctx;
        struct scrape_cache *scrape;
        size_t max_header_bytes;
};

/* Takes a request through the steps of web/routes.h, the same for every
 * route, and sends what the step that ended it answered. */
static enum MHD_Result dispatch(struct http_server *srv, struct MHD_Connection *conn, const char *url,
                                const char *method) {
        const struct web_context *ctx = srv->ctx;
        const struct route *route = routes_find(url);
        bool reads_params = route->params == ROUTE_PARAMS_READ;
        struct web_reply reply = { 0 };
        struct request_params p;

        request_collect_params(conn, &p);
        struct web_request req = {
                .conn = conn,
                .method = method,
                .path = url,
                .params = reads_params ? p.params : NULL,
                .n_params = reads_params ? p.n : 0,
                .scrape = srv->scrape,
        };
        if (routes_refuse_method(route, method, ctx, &reply) ||
            request_refuse_oversized(url, &p, request_header_bytes(conn), srv->max_header_bytes, &reply) ||
            request_refuse_malformed(url, &p, &reply) || routes_refuse_access(route, ctx, &req, &reply) ||
            (reads_params && request_refuse_params(&p, &reply)))
                return reply_send(conn, ctx, &reply);
        route->handler(ctx, &req, &reply);
        return reply_send(conn, ctx, &reply);
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *conn, const char *url, const char *method,
                                  const char *version, const char *upload_data, size_t *upload_data_size,
                                  void **req_cls) {
        static int request_seen, request_with_nul;

        /* libmicrohttpd keeps a connection alive only when the response is
         * queued after the whole request has arrived: the first call just
         * marks the request (and checks its head for NUL bytes), any body
         * is read and dropped, then we answer. */
        if (*req_cls != &request_seen && *req_cls != &request_with_nul) {
                *req_cls =
                        request_head_has_nul(conn, method, url, version, *req_cls) ? &request_with_nul : &request_seen;
                return MHD_YES;
        }
        if (*upload_data_size) {
                *upload_data_size = 0;
                return MHD_YES;
        }
        if (*req_cls == &request_with_nul) {
                struct http_server *srv = cls;
                struct web_reply reply = { 0 };
                reply_error(&reply, 400, "bad_data", "a NUL byte in the request line or a header");
                return reply_send(conn, srv->ctx, &reply);
        }
        return dispatch(cls, conn, url, method);
}

__attribute__((format(printf, 2, 0))) static void on_mhd_log(void *cls, const char *fmt, va_list ap) {
        char msg[512];
        vsnprintf(msg, sizeof(msg), fmt, ap);
        msg[strcspn(msg, "\n")] = '\0';
        log_debug("http: %s", msg);
}

int http_read_pem(const char *path, const char *what, char **ret, char *err, size_t errlen) {
        char marker[32], why[128];
        char *text = NULL;
        size_t len;

        int r = file_read_text(path, PEM_MAX, &text, &len, why, sizeof(why));
        if (r == -EFBIG)
                snprintf(err, errlen, "%s %s; is it a PEM file?", path, why);
        else if (r < 0)
                snprintf(err, errlen, "reading %s: %s", path, why);
        if (r < 0)
                return r;
        snprintf(marker, sizeof(marker), "%s-----", what);
        if (!strstr(text, "-----BEGIN ") || !strstr(text, marker)) {
                snprintf(err, errlen, "%s holds no PEM %s", path, what);
                http_free_pem(text);
                return -EINVAL;
        }
        *ret = text;
        return 0;
}

/* Keeps libmicrohttpd's first complaint (GnuTLS's reason) for
 * http_check_tls(). */
struct tls_check {
        char *err;
        size_t errlen;
        bool said;
};

__attribute__((format(printf, 2, 0))) static void on_tls_check_log(void *cls, const char *fmt, va_list ap) {
        struct tls_check *check = cls;
        if (check->said)
                return;
        int n = snprintf(check->err, check->errlen, "tls_cert and tls_key: ");
        if (n > 0 && (size_t) n < check->errlen)
                vsnprintf(check->err + n, check->errlen - (size_t) n, fmt, ap);
        check->err[strcspn(check->err, "\n")] = '\0';
        check->said = true;
}

int http_check_tls(const char *cert, const char *key, char *err, size_t errlen) {
        struct tls_check check = { .err = err, .errlen = errlen };
        /* A server without a socket or a thread, which no request reaches:
         * starting it loads the pair into GnuTLS as serving would. */
        struct MHD_Daemon *mhd =
                MHD_start_daemon(MHD_USE_NO_LISTEN_SOCKET | MHD_USE_TLS | MHD_USE_ERROR_LOG, 0, NULL, NULL, on_request,
                                 NULL, MHD_OPTION_EXTERNAL_LOGGER, on_tls_check_log, &check, MHD_OPTION_HTTPS_MEM_CERT,
                                 cert, MHD_OPTION_HTTPS_MEM_KEY, key, MHD_OPTION_END);
        if (!mhd) {
                if (!check.said)
                        snprintf(err, errlen, "tls_cert and tls_key: not a certificate and its private key");
                return -EINVAL;
        }
        MHD_stop_daemon(mhd);
        return 0;
}

void http_free_pem(char *pem) {
        if (pem)
                explicit_bzero(pem, strlen(pem));
        free(pem);
}

/* Every connection is a descriptor: lift the soft limit toward the hard
 * one so that max_connections is reachable. */
static void raise_fd_limit(unsigned connections) {
        struct rlimit rl;
        rlim_t want = (rlim_t) connections + 64;
        if (getrlimit(RLIMIT_NOFILE, &rl) < 0 || rl.rlim_cur >= want)
                return;
        rl.rlim_cur = rl.rlim_max == RLIM_INFINITY || rl.rlim_max > want ? want : rl.rlim_max;
        if (setrlimit(RLIMIT_NOFILE, &rl) < 0 || rl.rlim_cur < want)
                log_warning("only %llu file descriptors available; fewer than %u connections fit",
                            (unsigned long long) rl.rlim_cur, connections);
}

void http_stop(struct http_server *srv) {
        if (!srv)
                return;
        if (srv->mhd)
                MHD_stop_daemon(srv->mhd);
        scrape_cache_free(srv->scrape);
        free(srv);
}

/* Starts libmicrohttpd either binding addr, or on listen_fd (>= 0) that was
 * bound by someone else (socket activation). */
static int http_start_on(const struct sockaddr *addr, int listen_fd, const struct web_context *ctx,
                         struct http_server **ret) {
        unsigned max_conn = ctx->max_connections ? ctx->max_connections : HTTP_DEFAULT_MAX_CONNECTIONS;
        unsigned timeout_s = ctx->connection_timeout_s ? ctx->connection_timeout_s : HTTP_DEFAULT_CONNECTION_TIMEOUT_S;
        size_t mem = ctx->max_header_bytes ? ctx->max_header_bytes : HTTP_DEFAULT_MAX_HEADER_BYTES;
        bool tls = ctx->tls_cert && ctx->tls_key;
        static const struct sockaddr unknown = { .sa_family = AF_UNSPEC };
        const struct sockaddr *addr_seen = addr ? addr : &unknown;
        int r;

        struct http_server *srv = calloc(1, sizeof(*srv));
        if (!srv)
                return -ENOMEM;
        srv->ctx = ctx;
        srv->max_header_bytes = mem;
        r = scrape_cache_new(&srv->scrape);
        if (r < 0)
                goto fail;
        struct sockaddr_storage bound;
        socklen_t bound_len = sizeof(bound);
        if (!addr && getsockname(listen_fd, (struct sockaddr *) &bound, &bound_len) == 0)
                addr_seen = (const struct sockaddr *) &bound;
        if (!admin_is_loopback(addr_seen) && !tls && !ctx->auth)
                log_warning("serving on a non-loopback address without TLS or authentication: "
                            "anyone who can reach it can read the metrics; set tls_cert/tls_key and "
                            "basic_auth_users or bearer_token_file");
        else if (!admin_is_loopback(addr_seen) && !tls)
                log_warning("serving on a non-loopback address without TLS: credentials travel in clear text");
        raise_fd_limit(max_conn);

        unsigned flags = MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_EPOLL | MHD_USE_ERROR_LOG;
        /* The IPv6 wildcard takes IPv4 clients too, as exporters' ":PORT"
         * and "[::]:PORT" do. */
        if (addr && addr->sa_family == AF_INET6)
                flags |= IN6_IS_ADDR_UNSPECIFIED(&((const struct sockaddr_in6 *) addr)->sin6_addr) ? MHD_USE_DUAL_STACK
                                                                                                   : MHD_USE_IPv6;
        if (tls)
                flags |= MHD_USE_TLS;
        /* Where to listen and the TLS credentials go in as an option array,
         * so that one call covers every case; the logger goes first so that
         * libmicrohttpd uses it from the start. */
        struct MHD_OptionItem options[] = {
                addr ? (struct MHD_OptionItem){ MHD_OPTION_SOCK_ADDR, 0, (void *) addr }
                     : (struct MHD_OptionItem){ MHD_OPTION_LISTEN_SOCKET, listen_fd, NULL },
                { tls ? MHD_OPTION_HTTPS_MEM_CERT : MHD_OPTION_END, 0, (void *) ctx->tls_cert },
                { MHD_OPTION_HTTPS_MEM_KEY, 0, (void *) ctx->tls_key },
                { MHD_OPTION_END, 0, NULL },
        };
        /* Laid out by hand, an option and its arguments to a line. */
        /* clang-format off */
        srv->mhd = MHD_start_daemon(flags, 0, NULL, NULL, on_request, srv,
                                    MHD_OPTION_EXTERNAL_LOGGER, on_mhd_log, NULL,
                                    MHD_OPTION_UNESCAPE_CALLBACK, request_unescape, NULL,
                                    MHD_OPTION_URI_LOG_CALLBACK, request_uri_end, NULL,
                                    MHD_OPTION_STRICT_FOR_CLIENT, (int) 1,
                                    MHD_OPTION_ARRAY, options,
                                    MHD_OPTION_THREAD_POOL_SIZE, (unsigned) HTTP_THREADS,
                                    MHD_OPTION_CONNECTION_LIMIT, max_conn,
                                    MHD_OPTION_CONNECTION_TIMEOUT, timeout_s,
                                    /* Room for the largest request we answer ourselves, with
                                     * a clean JSON 414/431, plus the response headers; past
                                     * it libmicrohttpd answers 414/431 itself. */
                                    MHD_OPTION_CONNECTION_MEMORY_LIMIT, mem + REQUEST_URL_MAX_BYTES + 16384,
                                    MHD_OPTION_END);
        /* clang-format on */
        if (!srv->mhd) {
                int err = errno;
                if (tls)
                        log_error("starting HTTPS failed; check that tls_cert and tls_key are a matching PEM pair");
                r = err == EADDRINUSE || err == EACCES ? -err : -EIO;
                goto fail;
        }
        *ret = srv;
        return 0;
fail:
        http_stop(srv);
        return r;
}

int http_start(const struct sockaddr *addr, socklen_t addr_len, const struct web_context *ctx,
               struct http_server **ret) {
        return http_start_on(addr, -1, ctx, ret);
}

int http_start_fd(int listen_fd, const struct web_context *ctx, struct http_server **ret) {
        if (listen_fd < 0)
                return -EBADF;
        return http_start_on(NULL, listen_fd, ctx, ret);
}

uint16_t http_port(const struct http_server *srv) {
        const union MHD_DaemonInfo *info = MHD_get_daemon_info(srv->mhd, MHD_DAEMON_INFO_BIND_PORT);
        return info ? info->port : 0;
}
