#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <microhttpd.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include "lib/log.h"
#include "web/accept.h"
#include "web/admin.h"
#include "web/api.h"
#include "web/http.h"

#define PARAMS_PER_REQUEST_MAX 32
#define PEM_MAX (64 * 1024)
#define GZIP_MIN_BYTES 1024 /* below this, compressing saves nothing worth the time */

#define CSP                                                                                                            \
        "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; "          \
        "frame-ancestors 'none'; base-uri 'none'; form-action 'none'"

/* The series half of /metrics, rendered once per tick, format and
 * encoding, and shared by every scrape of that tick. */
struct rendered {
        atomic_int refs;
        uint64_t tick;
        struct buf body;
};

struct http_server {
        struct MHD_Daemon *mhd;
        const struct web_context *ctx;
        pthread_mutex_t cache_lock;
        struct rendered *cache[2][2]; /* [accept_format][gzip] */
        size_t max_header_bytes;
};

static int hex_digit(char c) {
        if (c >= '0' && c <= '9')
                return c - '0';
        if (c >= 'a' && c <= 'f')
                return c - 'a' + 10;
        if (c >= 'A' && c <= 'F')
                return c - 'A' + 10;
        return -1;
}

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

/* Adds the headers every response carries, counts it and queues it. */
static enum MHD_Result queue(struct MHD_Connection *conn, const struct web_context *ctx, unsigned status,
                             struct MHD_Response *resp, const char *content_type) {
        if (!resp)
                return MHD_NO;
        MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE, content_type);
        MHD_add_response_header(resp, "X-Content-Type-Options", "nosniff");
        MHD_add_response_header(resp, "Content-Security-Policy", CSP);
        MHD_add_response_header(resp, "Referrer-Policy", "no-referrer");
        if (ctx->cors_origin && *ctx->cors_origin) {
                MHD_add_response_header(resp, "Access-Control-Allow-Origin", ctx->cors_origin);
                MHD_add_response_header(resp, MHD_HTTP_HEADER_VARY, "Origin");
        }
        if (ctx->http_requests)
                atomic_fetch_add_explicit(&ctx->http_requests[expo_http_code_index(status)], 1, memory_order_relaxed);
        enum MHD_Result ret = MHD_queue_response(conn, status, resp);
        MHD_destroy_response(resp);
        return ret;
}

/* gzip (RFC 1952) of in into out, at the fastest level: a scrape is
 * repetitive text, and level 1 already shrinks it about sixfold. A small
 * input gets a small window and hash, so compressing it allocates little. */
static int gzip_buf(const struct buf *in, struct buf *out) {
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

static enum MHD_Result send_reply(struct MHD_Connection *conn, const struct web_context *ctx, struct web_reply *reply) {
        if (reply->body.failed) {
                buf_free(&reply->body);
                web_reply_error(reply, 500, "internal", "out of memory");
        }
        bool gzipped = false;
        if (reply->body.len >= GZIP_MIN_BYTES &&
            accept_gzip(MHD_lookup_connection_value(conn, MHD_HEADER_KIND, MHD_HTTP_HEADER_ACCEPT_ENCODING))) {
                struct buf z = { 0 };
                if (gzip_buf(&reply->body, &z) == 0) {
                        buf_free(&reply->body);
                        reply->body = z;
                        gzipped = true;
                } else {
                        buf_free(&z);
                }
        }
        struct MHD_Response *resp =
                MHD_create_response_from_buffer(reply->body.len, reply->body.data, MHD_RESPMEM_MUST_FREE);
        if (!resp) {
                buf_free(&reply->body);
                return MHD_NO;
        }
        /* The response owns the body now. */
        reply->body = (struct buf){ 0 };
        if (reply->allow)
                MHD_add_response_header(resp, MHD_HTTP_HEADER_ALLOW, reply->allow);
        if (gzipped)
                MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_ENCODING, "gzip");
        MHD_add_response_header(resp, MHD_HTTP_HEADER_VARY, "Accept-Encoding");
        MHD_add_response_header(resp, MHD_HTTP_HEADER_CACHE_CONTROL, "no-store");
        return queue(conn, ctx, reply->status, resp, reply->content_type);
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
                { ".woff2", "font/woff2" },
        };
        const char *dot = strrchr(path, '.');
        for (size_t i = 0; dot && i < sizeof(types) / sizeof(types[0]); i++)
                if (strcmp(dot, types[i].ext) == 0)
                        return types[i].type;
        return "application/octet-stream";
}

/* Opens url below the web root, refusing anything that could leave it.
 * libmicrohttpd has already decoded %XX, so "%2e%2e" arrives as "..":
 * dot segments, backslashes and empty segments are refused, and the
 * resolved path (symlinks followed) must still lie below the root. */
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

/* True when an If-None-Match list names etag (or is "*"). */
static bool etag_matches(const char *if_none_match, const char *etag) {
        if (!if_none_match)
                return false;
        if (strcmp(if_none_match, "*") == 0)
                return true;
        size_t n = strlen(etag);
        for (const char *p = strstr(if_none_match, etag); p; p = strstr(p + 1, etag)) {
                /* A weak validator W/"x" matches too (If-None-Match uses weak comparison). */
                char after = p[n];
                if (after == '\0' || after == ',' || after == ' ')
                        return true;
        }
        return false;
}

static enum MHD_Result serve_static(struct MHD_Connection *conn, const struct web_context *ctx, const char *url) {
        struct stat st;
        int fd;
        char etag[64];

        if (open_static(ctx->web_root, url, &fd, &st) < 0) {
                struct web_reply reply = { 0 };
                web_reply_error(&reply, 404, "not_found", "no such path: %.200s", url);
                return send_reply(conn, ctx, &reply);
        }
        const char *rel = strcmp(url, "/") == 0 ? "/index.html" : url;
        snprintf(etag, sizeof(etag), "\"%llx-%llx-%llx\"", (unsigned long long) st.st_ino,
                 (unsigned long long) st.st_size,
                 (unsigned long long) st.st_mtim.tv_sec * 1000000000ULL + (unsigned long long) st.st_mtim.tv_nsec);
        struct MHD_Response *resp;
        unsigned status;
        if (etag_matches(MHD_lookup_connection_value(conn, MHD_HEADER_KIND, MHD_HTTP_HEADER_IF_NONE_MATCH), etag)) {
                close(fd);
                resp = MHD_create_response_from_buffer(0, NULL, MHD_RESPMEM_PERSISTENT);
                status = MHD_HTTP_NOT_MODIFIED;
        } else {
                resp = MHD_create_response_from_fd((uint64_t) st.st_size, fd);
                if (!resp)
                        close(fd);
                status = MHD_HTTP_OK;
        }
        if (!resp)
                return MHD_NO;
        MHD_add_response_header(resp, MHD_HTTP_HEADER_ETAG, etag);
        /* The dashboard changes with upgrades: revalidate every time, cheaply. */
        MHD_add_response_header(resp, MHD_HTTP_HEADER_CACHE_CONTROL, "no-cache");
        return queue(conn, ctx, status, resp, mime_type(rel));
}

static void rendered_unref(struct rendered *r) {
        if (r && atomic_fetch_sub(&r->refs, 1) == 1) {
                buf_free(&r->body);
                free(r);
        }
}

/* A reference to the series half of /metrics for snap, rendered now unless
 * another scrape of the same tick already did. NULL when out of memory. */
static struct rendered *cached_series(struct http_server *srv, const struct snapshot *snap, enum accept_format format,
                                      bool gzip) {
        struct rendered *r, *old = NULL;

        pthread_mutex_lock(&srv->cache_lock);
        r = srv->cache[format][gzip];
        if (r && r->tick == snap->tick)
                atomic_fetch_add(&r->refs, 1);
        else
                r = NULL;
        pthread_mutex_unlock(&srv->cache_lock);
        if (r)
                return r;

        r = calloc(1, sizeof(*r));
        if (!r)
                return NULL;
        atomic_init(&r->refs, 1);
        r->tick = snap->tick;
        expo_render_series(srv->ctx->expo, snap, format, &r->body);
        if (gzip && !r->body.failed) {
                struct buf z = { 0 };
                if (gzip_buf(&r->body, &z) < 0)
                        z.failed = true;
                buf_free(&r->body);
                r->body = z;
        }
        if (r->body.failed) {
                rendered_unref(r);
                return NULL;
        }
        pthread_mutex_lock(&srv->cache_lock);
        struct rendered **slot = &srv->cache[format][gzip];
        if (!*slot || (*slot)->tick < r->tick) {
                old = *slot;
                atomic_fetch_add(&r->refs, 1);
                *slot = r;
        }
        pthread_mutex_unlock(&srv->cache_lock);
        rendered_unref(old);
        return r;
}

struct metrics_body {
        struct rendered *series; /* shared, or NULL before the first tick */
        struct buf self;         /* this request's own part */
};

static void metrics_body_free(void *cls) {
        struct metrics_body *m = cls;
        rendered_unref(m->series);
        buf_free(&m->self);
        free(m);
}

/* /metrics: the cached series half, then neurond's own metrics rendered
 * for this request. Compressed, the two halves are two gzip members, which
 * RFC 1952 allows and every client library reads as one stream. */
static enum MHD_Result serve_metrics(struct MHD_Connection *conn, struct http_server *srv) {
        const struct web_context *ctx = srv->ctx;
        enum accept_format format =
                accept_format(MHD_lookup_connection_value(conn, MHD_HEADER_KIND, MHD_HTTP_HEADER_ACCEPT));
        bool gzip = accept_gzip(MHD_lookup_connection_value(conn, MHD_HEADER_KIND, MHD_HTTP_HEADER_ACCEPT_ENCODING));
        struct metrics_body *m = calloc(1, sizeof(*m));
        struct snapshot *snap = snapshot_slot_get(ctx->latest);
        bool failed = !m;

        if (m && snap) {
                m->series = cached_series(srv, snap, format, gzip);
                failed = !m->series;
        }
        if (m && !failed) {
                expo_render_self(snap, &ctx->self, format, &m->self);
                if (gzip && !m->self.failed) {
                        struct buf z = { 0 };
                        if (gzip_buf(&m->self, &z) < 0)
                                z.failed = true;
                        buf_free(&m->self);
                        m->self = z;
                }
                failed = m->self.failed;
        }
        snapshot_unref(snap);
        if (failed) {
                if (m)
                        metrics_body_free(m);
                struct web_reply reply = { 0 };
                web_reply_error(&reply, 500, "internal", "out of memory");
                return send_reply(conn, ctx, &reply);
        }
        struct MHD_IoVec iov[2] = {
                { .iov_base = m->series ? m->series->body.data : "", .iov_len = m->series ? m->series->body.len : 0 },
                { .iov_base = m->self.data, .iov_len = m->self.len },
        };
        struct MHD_Response *resp = MHD_create_response_from_iovec(iov, 2, metrics_body_free, m);
        if (!resp) {
                metrics_body_free(m);
                return MHD_NO;
        }
        if (gzip)
                MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_ENCODING, "gzip");
        MHD_add_response_header(resp, MHD_HTTP_HEADER_VARY, "Accept, Accept-Encoding");
        MHD_add_response_header(resp, MHD_HTTP_HEADER_CACHE_CONTROL, "no-store");
        return queue(conn, ctx, 200, resp,
                     format == ACCEPT_OPENMETRICS ? EXPO_OPENMETRICS_CONTENT_TYPE : EXPO_CONTENT_TYPE);
}

struct param_collector {
        struct param params[PARAMS_PER_REQUEST_MAX];
        size_t n;
        size_t bytes; /* keys and values, to bound the query string */
        bool overflow;
};

static enum MHD_Result collect_param(void *cls, enum MHD_ValueKind kind, const char *key, const char *value) {
        struct param_collector *pc = cls;
        if (pc->n == PARAMS_PER_REQUEST_MAX) {
                pc->overflow = true;
                return MHD_NO;
        }
        pc->params[pc->n++] = (struct param){ .key = key, .value = value ? value : "" };
        pc->bytes += strlen(key) + (value ? strlen(value) : 0) + 2;
        return MHD_YES;
}

static enum MHD_Result count_header(void *cls, enum MHD_ValueKind kind, const char *key, const char *value) {
        size_t *total = cls;
        *total += strlen(key) + (value ? strlen(value) : 0) + 4; /* ": " and CRLF */
        return MHD_YES;
}

/* Whether the request may proceed: no authentication configured, an open
 * /healthz, a valid bearer token, or valid basic credentials. */
static bool authorized(struct MHD_Connection *conn, const struct web_context *ctx, const char *url) {
        if (!ctx->auth || (ctx->healthz_open && strcmp(url, "/healthz") == 0))
                return true;
        const char *header = MHD_lookup_connection_value(conn, MHD_HEADER_KIND, MHD_HTTP_HEADER_AUTHORIZATION);
        if (!header)
                return false;
        if (strncasecmp(header, "Bearer ", 7) == 0)
                return auth_check_bearer(ctx->auth, header + 7);
        if (!auth_has_users(ctx->auth))
                return false;
        char *password = NULL;
        char *user = MHD_basic_auth_get_username_password(conn, &password);
        bool ok = user && password && auth_check_basic(ctx->auth, user, password);
        if (password) {
                explicit_bzero(password, strlen(password));
                MHD_free(password);
        }
        if (user)
                MHD_free(user);
        return ok;
}

static enum MHD_Result send_unauthorized(struct MHD_Connection *conn, const struct web_context *ctx) {
        struct web_reply reply = { 0 };
        web_reply_error(&reply, 401, "unauthorized", "authentication required");
        struct MHD_Response *resp =
                MHD_create_response_from_buffer(reply.body.len, reply.body.data, MHD_RESPMEM_MUST_FREE);
        if (!resp) {
                buf_free(&reply.body);
                return MHD_NO;
        }
        MHD_add_response_header(resp, MHD_HTTP_HEADER_WWW_AUTHENTICATE,
                                auth_has_users(ctx->auth) ? "Basic realm=\"neurond\", charset=\"UTF-8\""
                                                          : "Bearer realm=\"neurond\"");
        MHD_add_response_header(resp, MHD_HTTP_HEADER_CACHE_CONTROL, "no-store");
        return queue(conn, ctx, 401, resp, reply.content_type);
}

static enum MHD_Result send_preflight(struct MHD_Connection *conn, const struct web_context *ctx) {
        struct MHD_Response *resp = MHD_create_response_from_buffer(0, NULL, MHD_RESPMEM_PERSISTENT);
        if (!resp)
                return MHD_NO;
        MHD_add_response_header(resp, "Access-Control-Allow-Methods", "GET, HEAD");
        MHD_add_response_header(resp, "Access-Control-Allow-Headers", "Authorization");
        MHD_add_response_header(resp, "Access-Control-Max-Age", "600");
        MHD_add_response_header(resp, MHD_HTTP_HEADER_ALLOW, "GET, HEAD, OPTIONS");
        return queue(conn, ctx, 204, resp, "text/plain; charset=utf-8");
}

/* Percent-decoding for the path and the query parameters, as
 * libmicrohttpd's own except that "%00" stays as it is: a decoded NUL would
 * cut the string short, so that "/metrics%00.json" would be served as
 * "/metrics" and "metric=x%00y" read as "x". Left encoded, such input fails
 * the route and parameter checks like any other unknown name. */
static size_t unescape(void *cls, struct MHD_Connection *conn, char *text) {
        char *out = text;
        for (const char *p = text; *p; p++) {
                int hi, lo;
                if (p[0] == '%' && (hi = hex_digit(p[1])) >= 0 && (lo = hex_digit(p[2])) >= 0 && (hi | lo) != 0) {
                        *out++ = (char) (hi << 4 | lo);
                        p += 2;
                } else {
                        *out++ = *p;
                }
        }
        *out = '\0';
        return (size_t) (out - text);
}

/* Refuses a path or query parameter that is not UTF-8 once decoded: no
 * metric, label or file has such a name. Returns true with the reply
 * filled in when the request is refused. */
static bool refuse_malformed(const char *url, const struct param *params, size_t n, struct web_reply *reply) {
        if (!utf8_valid(url)) {
                web_reply_error(reply, 400, "bad_data", "the path is not valid UTF-8 once percent-decoded");
                return true;
        }
        for (size_t i = 0; i < n; i++)
                if (!utf8_valid(params[i].key) || !utf8_valid(params[i].value)) {
                        web_reply_error(reply, 400, "bad_data",
                                        "a query parameter is not valid UTF-8 once percent-decoded");
                        return true;
                }
        return false;
}

/* Raw NUL bytes in the request head. libmicrohttpd 0.9.75 parses the head
 * in place, in one buffer, and hands over the method, URI, version and each
 * header's name and value as C strings, ended by NULs it writes over the
 * space, colon, CR or LF after them; the lengths it reports are theirs. A
 * NUL sent by the client cuts such a string short, and the rest of it is
 * dropped without a word: "GET /metrics\0junk" is served as /metrics, a
 * header "X: a\0b" reads "a". Where the strings lie in the buffer still
 * shows it: between one and the next there may only be their separators.
 * A head laid out otherwise (strings outside it, out of order) is not
 * judged. */
struct head_walk {
        uintptr_t end;  /* the head runs from the method to here, past the blank line */
        const char *at; /* how far the walk got */
        bool judged;    /* every string lay inside the head, in order */
        bool hidden;    /* bytes other than separators lie between two */
};

/* Walks from the end of the last string to next, the start of the next
 * one: the byte there must be the NUL that ended that string, the others
 * (at most max in all) NULs when nul_ok (an overwritten CR or LF) or bytes
 * of allowed. */
static void head_gap(struct head_walk *w, const char *next, const char *allowed, bool nul_ok, size_t max) {
        uintptr_t at = (uintptr_t) w->at, to = (uintptr_t) next;

        if (!w->judged || w->hidden)
                return;
        if (to <= at || to > w->end) {
                w->judged = false;
                return;
        }
        if (to - at > max || w->at[0] != '\0') {
                w->hidden = true;
                return;
        }
        for (const char *p = w->at + 1; p < next; p++)
                if (*p == '\0' ? !nul_ok : !strchr(allowed, *p)) {
                        w->hidden = true;
                        return;
                }
        w->at = next;
}

/* Steps over a string that starts where the walk is, to its end. */
static void head_string(struct head_walk *w, const char *end) {
        if ((uintptr_t) end < (uintptr_t) w->at || (uintptr_t) end > w->end)
                w->judged = false;
        else
                w->at = end;
}

static enum MHD_Result head_header(void *cls, enum MHD_ValueKind kind, const char *key, size_t key_size,
                                   const char *value, size_t value_size) {
        struct head_walk *w = cls;
        (void) kind;
        head_gap(w, key, "", true, 2); /* CR LF, or LF */
        head_string(w, key + key_size);
        head_gap(w, value, " \t", false, SIZE_MAX); /* the colon, then blanks */
        head_string(w, value + value_size);
        return w->judged && !w->hidden ? MHD_YES : MHD_NO;
}

/* Whether a raw NUL byte hid part of the request line or of a header.
 * uri_end: where the URI, as libmicrohttpd read it before splitting and
 * decoding it, ends as a string. */
static bool head_has_nul(struct MHD_Connection *conn, const char *method, const char *url, const char *version,
                         const char *uri_end) {
        const union MHD_ConnectionInfo *info = MHD_get_connection_info(conn, MHD_CONNECTION_INFO_REQUEST_HEADER_SIZE);
        if (!info || !uri_end)
                return false;
        struct head_walk w = {
                .end = (uintptr_t) method + info->header_size,
                .at = method,
                .judged = true,
        };
        head_string(&w, method + strlen(method));
        head_gap(&w, url, " ", false, SIZE_MAX); /* a space, then any more spaces */
        head_string(&w, uri_end);
        head_gap(&w, version, "", false, 1); /* the one space before the version */
        head_string(&w, version + strlen(version));
        MHD_get_connection_values_n(conn, MHD_HEADER_KIND, head_header, &w);
        head_gap(&w, (const char *) w.end, "", true, 4); /* the last line's end and the blank line */
        return w.judged && w.hidden;
}

/* libmicrohttpd calls this with the URI as it arrived, before splitting
 * off the query and decoding it; what it returns is the request's
 * *req_cls when on_request is first called. */
static void *uri_seen(void *cls, const char *uri, struct MHD_Connection *conn) {
        (void) cls;
        (void) conn;
        return uri ? (char *) uri + strlen(uri) : NULL;
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *conn, const char *url, const char *method,
                                  const char *version, const char *upload_data, size_t *upload_data_size,
                                  void **req_cls) {
        struct http_server *srv = cls;
        const struct web_context *ctx = srv->ctx;
        struct web_reply reply = { .path = url };
        static int request_seen, request_with_nul;

        /* libmicrohttpd keeps a connection alive only when the response is
         * queued after the whole request has arrived: the first call just
         * marks the request (and checks its head for NUL bytes), any body
         * is read and dropped, then we answer. */
        if (*req_cls != &request_seen && *req_cls != &request_with_nul) {
                *req_cls = head_has_nul(conn, method, url, version, *req_cls) ? &request_with_nul : &request_seen;
                return MHD_YES;
        }
        if (*upload_data_size) {
                *upload_data_size = 0;
                return MHD_YES;
        }
        if (*req_cls == &request_with_nul) {
                web_reply_error(&reply, 400, "bad_data", "a NUL byte in the request line or a header");
                return send_reply(conn, ctx, &reply);
        }
        if (admin_owns(url)) {
                /* Fault injection is loopback-only, and behind the same
                 * authentication as everything else. */
                if (!authorized(conn, ctx, url))
                        return send_unauthorized(conn, ctx);
                admin_request(ctx, conn, url, method, &reply);
                return send_reply(conn, ctx, &reply);
        }
        if (strcmp(method, MHD_HTTP_METHOD_OPTIONS) == 0 && ctx->cors_origin && *ctx->cors_origin)
                return send_preflight(conn, ctx);
        if (strcmp(method, MHD_HTTP_METHOD_GET) != 0 && strcmp(method, MHD_HTTP_METHOD_HEAD) != 0) {
                web_reply_error(&reply, 405, "bad_data", "method %.16s not allowed; use GET or HEAD", method);
                reply.allow = "GET, HEAD";
                return send_reply(conn, ctx, &reply);
        }
        struct param_collector pc = { .n = 0 };
        MHD_get_connection_values(conn, MHD_GET_ARGUMENT_KIND, collect_param, &pc);
        if (strlen(url) + pc.bytes > HTTP_MAX_URL_BYTES) {
                web_reply_error(&reply, 414, "bad_data", "the URL is longer than %d bytes", HTTP_MAX_URL_BYTES);
                return send_reply(conn, ctx, &reply);
        }
        size_t header_bytes = 0;
        MHD_get_connection_values(conn, MHD_HEADER_KIND, count_header, &header_bytes);
        if (header_bytes > srv->max_header_bytes) {
                web_reply_error(&reply, 431, "bad_data", "the request headers are longer than %zu bytes",
                                srv->max_header_bytes);
                return send_reply(conn, ctx, &reply);
        }
        if (refuse_malformed(url, pc.params, pc.n, &reply))
                return send_reply(conn, ctx, &reply);
        if (!authorized(conn, ctx, url))
                return send_unauthorized(conn, ctx);
        if (strcmp(url, "/metrics") == 0)
                return serve_metrics(conn, srv);
        api_handler handler = api_route(url);
        if (!handler) {
                if (strncmp(url, "/api/", 5) == 0 || strcmp(url, "/api") == 0) {
                        web_reply_error(&reply, 404, "not_found", "no such API endpoint: %.200s", url);
                        return send_reply(conn, ctx, &reply);
                }
                return serve_static(conn, ctx, url);
        }
        if (pc.overflow) {
                web_reply_error(&reply, 400, "bad_data", "more than %d query parameters", PARAMS_PER_REQUEST_MAX);
                return send_reply(conn, ctx, &reply);
        }
        for (size_t i = 0; i < pc.n; i++) {
                if (strlen(pc.params[i].key) > PARAMS_KEY_MAX) {
                        web_reply_error(&reply, 400, "bad_data", "parameter '%.64s...': name longer than %d bytes",
                                        pc.params[i].key, PARAMS_KEY_MAX);
                        return send_reply(conn, ctx, &reply);
                }
                if (strlen(pc.params[i].value) > PARAMS_VALUE_MAX) {
                        web_reply_error(&reply, 400, "bad_data", "parameter '%.64s': value longer than %d bytes",
                                        pc.params[i].key, PARAMS_VALUE_MAX);
                        return send_reply(conn, ctx, &reply);
                }
        }
        reply.content_type = "application/json";
        handler(ctx, pc.params, pc.n, &reply);
        return send_reply(conn, ctx, &reply);
}

__attribute__((format(printf, 2, 0))) static void on_mhd_log(void *cls, const char *fmt, va_list ap) {
        char msg[512];
        vsnprintf(msg, sizeof(msg), fmt, ap);
        msg[strcspn(msg, "\n")] = '\0';
        log_debug("http: %s", msg);
}

int http_read_pem(const char *path, const char *what, char **ret, char *err, size_t errlen) {
        char marker[32];
        char *text = NULL;
        size_t n = 0;
        int r = 0;
        FILE *f = fopen(path, "re");

        if (!f) {
                r = -errno;
                snprintf(err, errlen, "reading %s: %s", path, strerror(-r));
                return r;
        }
        text = malloc(PEM_MAX + 1);
        if (!text) {
                r = -ENOMEM;
                snprintf(err, errlen, "reading %s: %s", path, strerror(-r));
                goto out;
        }
        errno = 0;
        n = fread(text, 1, PEM_MAX + 1, f);
        text[n > PEM_MAX ? PEM_MAX : n] = '\0';
        if (ferror(f)) {
                r = errno ? -errno : -EIO; /* EISDIR for a directory */
                snprintf(err, errlen, "reading %s: %s", path, strerror(-r));
                goto out;
        }
        snprintf(marker, sizeof(marker), "%s-----", what);
        if (n > PEM_MAX) {
                r = -EFBIG;
                snprintf(err, errlen, "%s is larger than %d KiB; is it a PEM file?", path, PEM_MAX / 1024);
        } else if (!strstr(text, "-----BEGIN ") || !strstr(text, marker)) {
                r = -EINVAL;
                snprintf(err, errlen, "%s holds no PEM %s", path, what);
        }
out:
        if (r == 0)
                *ret = text;
        else
                http_free_pem(text);
        fclose(f);
        return r;
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
        for (int f = 0; f < 2; f++)
                for (int z = 0; z < 2; z++)
                        rendered_unref(srv->cache[f][z]);
        pthread_mutex_destroy(&srv->cache_lock);
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
        pthread_mutex_init(&srv->cache_lock, NULL);
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
        if (addr && addr->sa_family == AF_INET6)
                flags |= MHD_USE_IPv6;
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
                                    MHD_OPTION_UNESCAPE_CALLBACK, unescape, NULL,
                                    MHD_OPTION_URI_LOG_CALLBACK, uri_seen, NULL,
                                    MHD_OPTION_STRICT_FOR_CLIENT, (int) 1,
                                    MHD_OPTION_ARRAY, options,
                                    MHD_OPTION_THREAD_POOL_SIZE, (unsigned) HTTP_THREADS,
                                    MHD_OPTION_CONNECTION_LIMIT, max_conn,
                                    MHD_OPTION_CONNECTION_TIMEOUT, timeout_s,
                                    /* Room for the largest request we answer ourselves, with
                                     * a clean JSON 414/431, plus the response headers; past
                                     * it libmicrohttpd answers 414/431 itself. */
                                    MHD_OPTION_CONNECTION_MEMORY_LIMIT, mem + HTTP_MAX_URL_BYTES + 16384,
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
