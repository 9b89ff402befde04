#include "config.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "web/accept.h"
#include "web/gzip.h"
#include "web/reply.h"

#define GZIP_MIN_BYTES 1024 /* below this, compressing saves nothing worth the time */

#define CSP                                                                                                            \
        "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; "          \
        "frame-ancestors 'none'; base-uri 'none'; form-action 'none'"

void reply_error(struct web_reply *reply, unsigned status, const char *error_type, const char *fmt, ...) {
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

void reply_json_success(struct buf *b, const struct snapshot *snap) {
        if (snap)
                buf_printf(b, "{\"status\":\"success\",\"tick\":%llu,\"data\":", (unsigned long long) snap->tick);
        else
                buf_puts(b, "{\"status\":\"success\",\"tick\":null,\"data\":");
}

/* A response for reply's body, which it then owns; NULL when out of memory. */
static struct MHD_Response *body_response(struct web_reply *reply) {
        struct MHD_Response *resp =
                MHD_create_response_from_buffer(reply->body.len, reply->body.data, MHD_RESPMEM_MUST_FREE);
        if (!resp)
                buf_free(&reply->body);
        reply->body = (struct buf){ 0 };
        return resp;
}

void reply_unauthorized(const struct web_context *ctx, struct web_reply *reply) {
        reply_error(reply, 401, "unauthorized", "authentication required");
        reply->response = body_response(reply);
        if (!reply->response) {
                reply_error(reply, 500, "internal", "out of memory");
                return;
        }
        MHD_add_response_header(reply->response, MHD_HTTP_HEADER_WWW_AUTHENTICATE,
                                auth_has_users(ctx->auth) ? "Basic realm=\"neurond\", charset=\"UTF-8\""
                                                          : "Bearer realm=\"neurond\"");
        MHD_add_response_header(reply->response, MHD_HTTP_HEADER_CACHE_CONTROL, "no-store");
}

void reply_preflight(struct web_reply *reply, const char *methods) {
        char allow[128];

        reply->status = 204;
        reply->content_type = "text/plain; charset=utf-8";
        reply->response = MHD_create_response_from_buffer(0, NULL, MHD_RESPMEM_PERSISTENT);
        if (!reply->response) {
                reply_error(reply, 500, "internal", "out of memory");
                return;
        }
        snprintf(allow, sizeof(allow), "%s, OPTIONS", methods);
        MHD_add_response_header(reply->response, "Access-Control-Allow-Methods", methods);
        MHD_add_response_header(reply->response, "Access-Control-Allow-Headers", "Authorization");
        MHD_add_response_header(reply->response, "Access-Control-Max-Age", "600");
        MHD_add_response_header(reply->response, MHD_HTTP_HEADER_ALLOW, allow);
}

/* Compresses the body when that is worth it and the client takes gzip;
 * true when it did. */
static bool compress_body(struct MHD_Connection *conn, struct web_reply *reply) {
        if (reply->body.len < GZIP_MIN_BYTES ||
            !accept_gzip(MHD_lookup_connection_value(conn, MHD_HEADER_KIND, MHD_HTTP_HEADER_ACCEPT_ENCODING)))
                return false;
        struct buf z = { 0 };
        if (gzip_encode(&reply->body, &z) < 0) {
                buf_free(&z);
                return false;
        }
        buf_free(&reply->body);
        reply->body = z;
        return true;
}

bool reply_prepare(struct MHD_Connection *conn, struct web_reply *reply) {
        if (reply->response)
                return true;
        if (reply->body.failed)
                reply_error(reply, 500, "internal", "out of memory");
        bool gzipped = compress_body(conn, reply);
        struct MHD_Response *resp = body_response(reply);
        if (!resp)
                return false;
        if (reply->allow[0])
                MHD_add_response_header(resp, MHD_HTTP_HEADER_ALLOW, reply->allow);
        if (gzipped)
                MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_ENCODING, "gzip");
        MHD_add_response_header(resp, MHD_HTTP_HEADER_VARY, "Accept-Encoding");
        MHD_add_response_header(resp, MHD_HTTP_HEADER_CACHE_CONTROL, "no-store");
        reply->response = resp;
        return true;
}

void reply_free(struct web_reply *reply) {
        if (reply->release)
                reply->release(reply->release_cls);
        else if (reply->response)
                MHD_destroy_response(reply->response);
        reply->response = NULL;
        reply->release = NULL;
        buf_free(&reply->body);
}

void reply_common_headers(struct MHD_Response *resp, const struct web_context *ctx, const char *content_type) {
        MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE, content_type);
        MHD_add_response_header(resp, "X-Content-Type-Options", "nosniff");
        MHD_add_response_header(resp, "Content-Security-Policy", CSP);
        MHD_add_response_header(resp, "Referrer-Policy", "no-referrer");
        if (ctx->cors_origin && *ctx->cors_origin) {
                MHD_add_response_header(resp, "Access-Control-Allow-Origin", ctx->cors_origin);
                MHD_add_response_header(resp, MHD_HTTP_HEADER_VARY, "Origin");
        }
}

static void count_status(const struct web_context *ctx, unsigned status) {
        if (ctx->http_requests)
                atomic_fetch_add_explicit(&ctx->http_requests[expo_http_code_index(status)], 1, memory_order_relaxed);
}

enum MHD_Result reply_send(struct MHD_Connection *conn, const struct web_context *ctx, struct web_reply *reply) {
        if (reply->release) {
                /* Shared: libmicrohttpd takes its own reference when queueing. */
                count_status(ctx, reply->status);
                enum MHD_Result ret = MHD_queue_response(conn, reply->status, reply->response);
                reply_free(reply);
                return ret;
        }
        if (!reply_prepare(conn, reply))
                return MHD_NO;
        count_status(ctx, reply->status);
        struct MHD_Response *resp = reply->response;
        reply->response = NULL;
        buf_free(&reply->body);
        reply_common_headers(resp, ctx, reply->content_type);
        if (reply->retry_after_s) {
                char seconds[16];
                snprintf(seconds, sizeof(seconds), "%u", reply->retry_after_s);
                MHD_add_response_header(resp, MHD_HTTP_HEADER_RETRY_AFTER, seconds);
        }
        enum MHD_Result ret = MHD_queue_response(conn, reply->status, resp);
        MHD_destroy_response(resp);
        return ret;
}
