#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <microhttpd.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "daemon/log.h"
#include "web/admin.h"
#include "web/api.h"
#include "web/http.h"

#define PARAMS_PER_REQUEST_MAX 32
#define CONNECTIONS_MAX 512
#define CONNECTION_TIMEOUT_S 15
#define THREADS 2

#define CSP "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; " \
            "frame-ancestors 'none'; base-uri 'none'; form-action 'none'"

struct http_server {
        struct MHD_Daemon *mhd;
        const struct web_context *ctx;
};

void web_reply_error(struct web_reply *reply, unsigned status, const char *error_type, const char *fmt, ...) {
        char msg[512];
        va_list ap;

        va_start(ap, fmt);
        vsnprintf(msg, sizeof(msg), fmt, ap);
        va_end(ap);
        buf_free(&reply->body);
        buf_puts(&reply->body, "{\"status\":\"error\",\"errorType\":");
        json_string(&reply->body, error_type);
        buf_puts(&reply->body, ",\"error\":");
        json_string(&reply->body, msg);
        buf_puts(&reply->body, "}\n");
        reply->status = status;
        reply->content_type = "application/json";
}

static enum MHD_Result queue(struct MHD_Connection *conn, unsigned status, struct MHD_Response *resp,
                             const char *content_type) {
        if (!resp)
                return MHD_NO;
        MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE, content_type);
        MHD_add_response_header(resp, "X-Content-Type-Options", "nosniff");
        MHD_add_response_header(resp, "Content-Security-Policy", CSP);
        MHD_add_response_header(resp, "Referrer-Policy", "no-referrer");
        enum MHD_Result ret = MHD_queue_response(conn, status, resp);
        MHD_destroy_response(resp);
        return ret;
}

static enum MHD_Result send_reply(struct MHD_Connection *conn, struct web_reply *reply) {
        if (reply->body.failed) {
                buf_free(&reply->body);
                web_reply_error(reply, 500, "internal", "out of memory");
        }
        struct MHD_Response *resp = MHD_create_response_from_buffer(reply->body.len, reply->body.data,
                                                                    MHD_RESPMEM_MUST_FREE);
        if (!resp) {
                buf_free(&reply->body);
                return MHD_NO;
        }
        /* The response owns the body now. */
        reply->body = (struct buf){ 0 };
        if (reply->allow)
                MHD_add_response_header(resp, MHD_HTTP_HEADER_ALLOW, reply->allow);
        MHD_add_response_header(resp, MHD_HTTP_HEADER_CACHE_CONTROL, "no-store");
        return queue(conn, reply->status, resp, reply->content_type);
}

static const char *mime_type(const char *path) {
        static const struct {
                const char *ext, *type;
        } types[] = {
                { ".html", "text/html; charset=utf-8" },
                { ".js", "text/javascript; charset=utf-8" },
                { ".mjs", "text/javascript; charset=utf-8" },
                { ".css", "text/css; charset=utf-8" },
                { ".svg", "image/svg+xml" },
                { ".png", "image/png" },
                { ".ico", "image/x-icon" },
                { ".json", "application/json" },
                { ".map", "application/json" },
                { ".txt", "text/plain; charset=utf-8" },
        };
        const char *dot = strrchr(path, '.');
        for (size_t i = 0; dot && i < sizeof(types) / sizeof(types[0]); i++)
                if (strcmp(dot, types[i].ext) == 0)
                        return types[i].type;
        return "application/octet-stream";
}

/* Opens url below the web root, refusing anything that could leave it:
 * dot segments, backslashes, and symlinks that resolve outside. */
static int open_static(const char *web_root, const char *url, int *ret_fd, struct stat *ret_st) {
        char path[PATH_MAX], real_root[PATH_MAX], real_path[PATH_MAX];

        if (url[0] != '/' || strstr(url, "/.") || strchr(url, '\\') || strstr(url, "//"))
                return -ENOENT;
        const char *rel = strcmp(url, "/") == 0 ? "/index.html" : url;
        if ((size_t) snprintf(path, sizeof(path), "%s%s", web_root, rel) >= sizeof(path))
                return -ENOENT;
        if (!realpath(web_root, real_root) || !realpath(path, real_path))
                return -ENOENT;
        size_t root_len = strlen(real_root);
        if (strncmp(real_path, real_root, root_len) != 0 || real_path[root_len] != '/')
                return -ENOENT;
        int fd = open(real_path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
        if (fd < 0)
                return -errno;
        if (fstat(fd, ret_st) < 0 || !S_ISREG(ret_st->st_mode)) {
                close(fd);
                return -ENOENT;
        }
        *ret_fd = fd;
        return 0;
}

static enum MHD_Result serve_static(struct MHD_Connection *conn, const struct web_context *ctx, const char *url) {
        struct stat st;
        int fd;

        if (open_static(ctx->web_root, url, &fd, &st) < 0) {
                struct web_reply reply = { 0 };
                web_reply_error(&reply, 404, "not_found", "no such path: %.200s", url);
                return send_reply(conn, &reply);
        }
        const char *rel = strcmp(url, "/") == 0 ? "/index.html" : url;
        struct MHD_Response *resp = MHD_create_response_from_fd((uint64_t) st.st_size, fd);
        if (!resp) {
                close(fd);
                return MHD_NO;
        }
        MHD_add_response_header(resp, MHD_HTTP_HEADER_CACHE_CONTROL, "no-cache");
        return queue(conn, 200, resp, mime_type(rel));
}

struct param_collector {
        struct param params[PARAMS_PER_REQUEST_MAX];
        size_t n;
        bool overflow;
};

static enum MHD_Result collect_param(void *cls, enum MHD_ValueKind kind, const char *key, const char *value) {
        struct param_collector *pc = cls;
        if (pc->n == PARAMS_PER_REQUEST_MAX) {
                pc->overflow = true;
                return MHD_NO;
        }
        pc->params[pc->n++] = (struct param){ .key = key, .value = value ? value : "" };
        return MHD_YES;
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *conn, const char *url, const char *method,
                                  const char *version, const char *upload_data, size_t *upload_data_size,
                                  void **req_cls) {
        const struct http_server *srv = cls;
        struct web_reply reply = { 0 };

        if (admin_owns(url))
                return admin_request(srv->ctx, conn, url, method, upload_data_size, req_cls, &reply)
                               ? send_reply(conn, &reply)
                               : MHD_YES;
        if (strcmp(method, MHD_HTTP_METHOD_GET) != 0 && strcmp(method, MHD_HTTP_METHOD_HEAD) != 0) {
                web_reply_error(&reply, 405, "bad_data", "method %.16s not allowed; use GET or HEAD", method);
                reply.allow = "GET, HEAD";
                return send_reply(conn, &reply);
        }
        /* GET has no body: answer on the first call. */
        api_handler handler = api_route(url);
        if (!handler) {
                if (strncmp(url, "/api/", 5) == 0 || strcmp(url, "/api") == 0) {
                        web_reply_error(&reply, 404, "not_found", "no such API endpoint: %.200s", url);
                        return send_reply(conn, &reply);
                }
                return serve_static(conn, srv->ctx, url);
        }
        struct param_collector pc = { .n = 0 };
        MHD_get_connection_values(conn, MHD_GET_ARGUMENT_KIND, collect_param, &pc);
        if (pc.overflow) {
                web_reply_error(&reply, 400, "bad_data", "more than %d query parameters", PARAMS_PER_REQUEST_MAX);
                return send_reply(conn, &reply);
        }
        handler(srv->ctx, pc.params, pc.n, &reply);
        return send_reply(conn, &reply);
}

__attribute__((format(printf, 2, 0))) static void on_mhd_log(void *cls, const char *fmt, va_list ap) {
        char msg[512];
        vsnprintf(msg, sizeof(msg), fmt, ap);
        msg[strcspn(msg, "\n")] = '\0';
        log_debug("http: %s", msg);
}

/* Starts libmicrohttpd either binding addr, or on listen_fd (>= 0) that was
 * bound by someone else (socket activation). */
static int http_start_on(const struct sockaddr *addr, int listen_fd, const struct web_context *ctx,
                         struct http_server **ret) {
        struct http_server *srv = calloc(1, sizeof(*srv));
        if (!srv)
                return -ENOMEM;
        srv->ctx = ctx;
        unsigned flags = MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_EPOLL | MHD_USE_ERROR_LOG;
        if (addr && addr->sa_family == AF_INET6)
                flags |= MHD_USE_IPv6;
        /* The two options take different argument types, hence two calls;
         * the logger goes first so that libmicrohttpd uses it from the start. */
        if (addr)
                srv->mhd = MHD_start_daemon(flags, 0, NULL, NULL, on_request, srv,
                                            MHD_OPTION_EXTERNAL_LOGGER, on_mhd_log, NULL,
                                            MHD_OPTION_SOCK_ADDR, addr,
                                            MHD_OPTION_THREAD_POOL_SIZE, (unsigned) THREADS,
                                            MHD_OPTION_CONNECTION_LIMIT, (unsigned) CONNECTIONS_MAX,
                                            MHD_OPTION_CONNECTION_TIMEOUT, (unsigned) CONNECTION_TIMEOUT_S,
                                            MHD_OPTION_END);
        else
                srv->mhd = MHD_start_daemon(flags, 0, NULL, NULL, on_request, srv,
                                            MHD_OPTION_EXTERNAL_LOGGER, on_mhd_log, NULL,
                                            MHD_OPTION_LISTEN_SOCKET, (MHD_socket) listen_fd,
                                            MHD_OPTION_THREAD_POOL_SIZE, (unsigned) THREADS,
                                            MHD_OPTION_CONNECTION_LIMIT, (unsigned) CONNECTIONS_MAX,
                                            MHD_OPTION_CONNECTION_TIMEOUT, (unsigned) CONNECTION_TIMEOUT_S,
                                            MHD_OPTION_END);
        if (!srv->mhd) {
                int err = errno;
                free(srv);
                return err == EADDRINUSE || err == EACCES ? -err : -EIO;
        }
        *ret = srv;
        return 0;
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

void http_stop(struct http_server *srv) {
        if (!srv)
                return;
        MHD_stop_daemon(srv->mhd);
        free(srv);
}
