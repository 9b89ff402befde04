#include "config.h"

#include <errno.h>
#include <gnutls/gnutls.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

#include "lib/file.h"
#include "lib/log.h"
#include "web/admin.h"
#include "web/conns.h"
#include "web/hosts.h"
#include "web/http.h"
#include "web/queue.h"
#include "web/routes.h"
#include "web/scrape.h"

#define PEM_MAX (64 * 1024)

struct http_server {
        struct MHD_Daemon *mhd;
        const struct web_context *ctx;
        struct scrape_cache *scrape;
        struct conns *conns;
        struct hosts *hosts;
        struct queue *queries; /* range and series queries: the store's work */
        struct queue *verify;  /* password hashes; NULL without basic auth */
        size_t max_header_bytes;
};

/* A request in progress on a connection, from its request line to the end
 * of its answer: one per connection (web/conns.h keeps it), reused by the
 * next request on a kept-alive connection. */
struct call {
        struct http_server *srv;
        struct request_head head;
        bool head_checked;         /* the handler's first call for this request has been */
        bool answered;             /* a worker thread filled reply */
        bool gone;                 /* the client left while its job waited */
        const struct route *route; /* of a queued job */
        struct request_params params;
        struct web_request req;
        struct web_reply reply;
        struct auth_attempt attempt;
        struct queue_job job;
};

static void call_free(void *request) {
        struct call *call = request;
        reply_free(&call->reply);
        explicit_bzero(&call->attempt, sizeof(call->attempt));
        free(call);
}

/* libmicrohttpd's MHD_OPTION_URI_LOG_CALLBACK: a request line has arrived.
 * Returns the connection's call, reset for this request; libmicrohttpd
 * hands it to the request handler as *req_cls. */
static void *on_request_line(void *cls, const char *uri, struct MHD_Connection *conn) {
        struct conn *c = conns_get(conn);
        if (!c)
                return NULL;
        struct call *call = c->request;
        if (!call) {
                call = calloc(1, sizeof(*call));
                if (!call)
                        return NULL;
                c->request = call;
        }
        reply_free(&call->reply);
        *call = (struct call){ .srv = cls };
        request_note_uri(uri, &call->head);
        return call;
}

/* libmicrohttpd's MHD_OPTION_NOTIFY_COMPLETED: the answer has gone out, or
 * the connection ended. */
static void on_request_done(void *cls, struct MHD_Connection *conn, void **req_cls,
                            enum MHD_RequestTerminationCode toe) {
        struct http_server *srv = cls;
        struct call *call = *req_cls;
        struct conn *c = conns_get(conn);

        if (call) {
                if (call->job.queue)
                        queue_release(&call->job);
                reply_free(&call->reply);
                explicit_bzero(&call->attempt, sizeof(call->attempt));
        }
        if (c)
                conns_answered(srv->conns, c);
}

static struct call *call_of(struct queue_job *job) {
        return (struct call *) ((char *) job - offsetof(struct call, job));
}

/* A job that did not run: the client left, or 503. */
static void answer_unrun(struct call *call, enum queue_verdict verdict, const char *what) {
        if (verdict == QUEUE_CLIENT_GONE) {
                call->gone = true;
                return;
        }
        if (verdict == QUEUE_STOPPING)
                reply_error(&call->reply, 503, "unavailable", "neurond is stopping");
        else
                reply_error(&call->reply, 503, "unavailable", "%s waited too long for its turn; retry later", what);
        call->reply.retry_after_s = 1;
        call->answered = true;
}

/* A queued row's handler, on a query worker thread. */
static void run_route(struct queue_job *job, enum queue_verdict verdict) {
        struct call *call = call_of(job);

        if (verdict != QUEUE_RUN) {
                answer_unrun(call, verdict, "the query");
                return;
        }
        call->route->handler(call->srv->ctx, &call->req, &call->reply);
        /* Compressing a large answer is work too: done here. */
        if (!reply_prepare(call->req.conn, &call->reply))
                call->gone = true;
        call->answered = true;
}

/* A password's bcrypt verification, on the verify worker thread. */
static void run_verify(struct queue_job *job, enum queue_verdict verdict) {
        struct call *call = call_of(job);

        if (verdict == QUEUE_RUN)
                call->req.auth = auth_verify(call->srv->ctx->auth, &call->attempt);
        else
                answer_unrun(call, verdict, "checking the credentials");
}

/* Hands the call to a worker thread; the handler is called again when it
 * is done. 503 with Retry-After when the queue is full. */
static enum MHD_Result submit(struct queue *q, struct call *call, void (*run)(struct queue_job *, enum queue_verdict),
                              struct MHD_Connection *conn, const char *what) {
        call->job.run = run;
        call->job.conn = conn;
        if (queue_submit(q, &call->job))
                return MHD_YES;
        reply_error(&call->reply, 503, "unavailable", "too many %s at once; retry later", what);
        call->reply.retry_after_s = 1;
        return reply_send(conn, call->srv->ctx, &call->reply);
}

/* Takes a request through the steps of web/routes.h, the same for every
 * route, and sends what the step that ended it answered. Called again
 * for a request that comes back from a worker thread. */
static enum MHD_Result dispatch(struct http_server *srv, struct call *call, struct MHD_Connection *conn,
                                const char *url, const char *method) {
        const struct web_context *ctx = srv->ctx;
        const struct route *route = routes_find(url);
        bool reads_params = route->params == ROUTE_PARAMS_READ;
        struct web_reply *reply = &call->reply;

        if (call->gone)
                return MHD_NO; /* closes the connection */
        if (call->answered)
                return reply_send(conn, ctx, reply);
        request_collect_params(conn, &call->params);
        call->route = route;
        call->req = (struct web_request){
                .conn = conn,
                .method = method,
                .path = url,
                .params = reads_params ? call->params.params : NULL,
                .n_params = reads_params ? call->params.n : 0,
                .scrape = srv->scrape,
                .auth = call->req.auth,
                .job = route->queued ? &call->job : NULL,
        };
        if (routes_refuse_method(route, method, ctx, reply) ||
            request_refuse_oversized(url, &call->params, request_header_bytes(conn), srv->max_header_bytes, reply) ||
            request_refuse_malformed(url, &call->params, reply))
                return reply_send(conn, ctx, reply);
        switch (routes_check_access(route, ctx, &call->req, &call->attempt, reply)) {
        case ROUTE_ACCESS_REFUSED:
                return reply_send(conn, ctx, reply);
        case ROUTE_ACCESS_VERIFY:
                return submit(srv->verify, call, run_verify, conn, "password checks");
        case ROUTE_ACCESS_GRANTED:
                break;
        }
        if (reads_params && request_refuse_params(&call->params, reply))
                return reply_send(conn, ctx, reply);
        if (!route->queued) {
                route->handler(ctx, &call->req, reply);
                return reply_send(conn, ctx, reply);
        }
        if (route->admit)
                route->admit(ctx, &call->req, reply);
        if (reply->status)
                return reply_send(conn, ctx, reply);
        return submit(srv->queries, call, run_route, conn, "queries");
}

/* The head of a request has arrived: step 0 of web/routes.h. */
static bool refuse_head(struct http_server *srv, struct call *call, struct web_reply *reply) {
        if (request_refuse_head(&call->head, reply))
                return true;
        switch (call->head.host ? hosts_check(srv->hosts, call->head.host) : HOSTS_ALLOWED) {
        case HOSTS_ALLOWED:
                return false;
        case HOSTS_MALFORMED:
                reply_error(reply, 400, "bad_data", "the Host header is not host[:port]");
                return true;
        case HOSTS_NOT_ALLOWED:
                reply_error(reply, 421, "forbidden",
                            "Host '%.100s' is not an address of this server nor a name in allowed_hosts",
                            call->head.host);
                return true;
        }
        return false;
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *conn, const char *url, const char *method,
                                  const char *version, const char *upload_data, size_t *upload_data_size,
                                  void **req_cls) {
        struct http_server *srv = cls;
        struct call *call = *req_cls;

        if (!call) {
                struct web_reply reply = { 0 };
                reply_error(&reply, 500, "internal", "out of memory");
                return reply_send(conn, srv->ctx, &reply);
        }
        /* The first call comes once the head has arrived. A head that must
         * be refused is answered now, and libmicrohttpd closes the
         * connection after it without reading a body. Otherwise the answer
         * waits for the last call: libmicrohttpd keeps a connection alive
         * only when the response is queued after the whole request has
         * arrived. Any body is read and dropped. */
        if (!call->head_checked) {
                struct conn *c = conns_get(conn);
                call->head_checked = true;
                if (c)
                        conns_head_arrived(srv->conns, c);
                request_read_head(conn, method, url, version, &call->head);
                if (refuse_head(srv, call, &call->reply))
                        return reply_send(conn, srv->ctx, &call->reply);
                return MHD_YES;
        }
        if (*upload_data_size) {
                *upload_data_size = 0;
                return MHD_YES;
        }
        return dispatch(srv, call, conn, url, method);
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

int http_check_settings(const struct web_context *ctx, char *err, size_t errlen) {
        struct hosts *hosts = NULL;
        gnutls_priority_t priorities;
        const char *where = NULL;
        char why[200];

        if (hosts_new(ctx->allowed_hosts, &hosts, why, sizeof(why)) < 0) {
                snprintf(err, errlen, "allowed_hosts: %s", why);
                return -EINVAL;
        }
        hosts_free(hosts);
        if (ctx->tls_priorities && *ctx->tls_priorities) {
                if (gnutls_priority_init(&priorities, ctx->tls_priorities, &where) < 0) {
                        snprintf(err, errlen, "tls_priorities: not a GnuTLS priority string (at '%.40s')",
                                 where ? where : ctx->tls_priorities);
                        return -EINVAL;
                }
                gnutls_priority_deinit(priorities);
        }
        return 0;
}

/* Every connection is a descriptor: lift the soft limit toward the hard
 * one so that max_connections fit beside what the daemon has open and the
 * reserve web/conns.h keeps. */
static void raise_fd_limit(unsigned connections) {
        struct rlimit rl;
        rlim_t want = (rlim_t) connections + 2 * CONNS_FD_RESERVE;
        if (getrlimit(RLIMIT_NOFILE, &rl) < 0 || rl.rlim_cur >= want)
                return;
        rl.rlim_cur = rl.rlim_max == RLIM_INFINITY || rl.rlim_max > want ? want : rl.rlim_max;
        setrlimit(RLIMIT_NOFILE, &rl);
}

void http_stop(struct http_server *srv) {
        if (!srv)
                return;
        /* Every suspended connection is resumed first: libmicrohttpd must not
         * find one when it stops, and no request then waits on a worker. */
        queue_stop(srv->queries);
        queue_stop(srv->verify);
        if (srv->mhd)
                MHD_stop_daemon(srv->mhd);
        queue_free(srv->queries);
        queue_free(srv->verify);
        conns_free(srv->conns);
        hosts_free(srv->hosts);
        scrape_cache_free(srv->scrape);
        free(srv);
}

/* Starts libmicrohttpd either binding addr, or on listen_fd (>= 0) that was
 * bound by someone else (socket activation). */
static int http_start_on(const struct sockaddr *addr, int listen_fd, const struct web_context *ctx,
                         struct http_server **ret) {
        unsigned max_conn = ctx->max_connections ? ctx->max_connections : HTTP_DEFAULT_MAX_CONNECTIONS;
        unsigned timeout_s = ctx->connection_timeout_s ? ctx->connection_timeout_s : HTTP_DEFAULT_CONNECTION_TIMEOUT_S;
        unsigned head_s = ctx->header_timeout_s ? ctx->header_timeout_s : HTTP_DEFAULT_HEADER_TIMEOUT_S;
        unsigned max_queries = ctx->max_queries ? ctx->max_queries : HTTP_DEFAULT_MAX_QUERIES;
        size_t mem = ctx->max_header_bytes ? ctx->max_header_bytes : HTTP_DEFAULT_MAX_HEADER_BYTES;
        const char *priorities =
                ctx->tls_priorities && *ctx->tls_priorities ? ctx->tls_priorities : HTTP_DEFAULT_TLS_PRIORITIES;
        bool tls = ctx->tls_cert && ctx->tls_key;
        static const struct sockaddr unknown = { .sa_family = AF_UNSPEC };
        const struct sockaddr *addr_seen = addr ? addr : &unknown;
        char err[256];
        int r;

        struct http_server *srv = calloc(1, sizeof(*srv));
        if (!srv)
                return -ENOMEM;
        srv->ctx = ctx;
        srv->max_header_bytes = mem;
        r = hosts_new(ctx->allowed_hosts, &srv->hosts, err, sizeof(err));
        if (r < 0) {
                log_error("allowed_hosts: %s", err);
                goto fail;
        }
        raise_fd_limit(max_conn);
        r = scrape_cache_new(&srv->scrape);
        if (r >= 0)
                r = conns_new(max_conn, head_s * 1000LL, call_free, &srv->conns);
        if (r >= 0)
                r = queue_new("neurond-query", 1, max_queries, HTTP_QUERIES_WAITING, HTTP_QUERY_WAIT_MS, true,
                              &srv->queries);
        if (r >= 0 && auth_has_users(ctx->auth))
                r = queue_new("neurond-verify", 1, 1, HTTP_VERIFY_WAITING, HTTP_VERIFY_WAIT_MS, false, &srv->verify);
        if (r < 0)
                goto fail;
        unsigned conn_limit = conns_limit(srv->conns);
        if (conn_limit < max_conn)
                log_warning("the file descriptor limit leaves room for %u connections, not max_connections %u",
                            conn_limit, max_conn);
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

        unsigned flags = MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_EPOLL | MHD_USE_ERROR_LOG | MHD_ALLOW_SUSPEND_RESUME;
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
                { MHD_OPTION_HTTPS_PRIORITIES, 0, (void *) priorities },
                { MHD_OPTION_END, 0, NULL },
        };
        /* Laid out by hand, an option and its arguments to a line. */
        /* clang-format off */
        srv->mhd = MHD_start_daemon(flags, 0, NULL, NULL, on_request, srv,
                                    MHD_OPTION_EXTERNAL_LOGGER, on_mhd_log, NULL,
                                    MHD_OPTION_UNESCAPE_CALLBACK, request_unescape, NULL,
                                    MHD_OPTION_URI_LOG_CALLBACK, on_request_line, srv,
                                    MHD_OPTION_NOTIFY_COMPLETED, on_request_done, srv,
                                    MHD_OPTION_NOTIFY_CONNECTION, conns_notify, srv->conns,
                                    /* Not strict: libmicrohttpd 0.9.75 answers a missing Host
                                     * with its status line twice; request_refuse_head makes
                                     * every check it would, and more. */
                                    MHD_OPTION_STRICT_FOR_CLIENT, (int) 0,
                                    MHD_OPTION_ARRAY, options,
                                    MHD_OPTION_THREAD_POOL_SIZE, (unsigned) HTTP_THREADS,
                                    MHD_OPTION_CONNECTION_LIMIT, conn_limit ? conn_limit : 1,
                                    MHD_OPTION_CONNECTION_TIMEOUT, timeout_s,
                                    /* Room for the largest request we answer ourselves, with
                                     * a clean JSON 414/431, plus the response headers; past
                                     * it libmicrohttpd answers 414/431 itself. */
                                    MHD_OPTION_CONNECTION_MEMORY_LIMIT, mem + REQUEST_URL_MAX_BYTES + 16384,
                                    MHD_OPTION_END);
        /* clang-format on */
        if (!srv->mhd) {
                int e = errno;
                if (tls)
                        log_error("starting HTTPS failed; check that tls_cert and tls_key are a matching PEM pair "
                                  "and tls_priorities a GnuTLS priority string");
                r = e == EADDRINUSE || e == EACCES ? -e : -EIO;
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
