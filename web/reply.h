/* Answers: what a handler fills in, and how it goes out. Every response
 * gets the same common headers (Content-Type, nosniff, the CSP, the
 * referrer policy, CORS when configured) and is counted by status code in
 * web_context.http_requests. Thread safe: nothing here keeps state. */
#pragma once

#include <microhttpd.h>

#include "lib/buf.h"
#include "web/context.h"

/* What a handler answers. Usually a status, a content type and a body;
 * a handler that needs a response of its own (a file descriptor, a shared
 * buffer, extra headers) builds it and leaves it in response instead. */
struct web_reply {
        unsigned status;
        const char *content_type;
        struct buf body;               /* gzip-compressed on the way out when large and the client accepts it */
        char allow[64];                /* Allow header, for 405; or "" */
        unsigned retry_after_s;        /* Retry-After header, for 503; or 0 */
        struct MHD_Response *response; /* instead of body; reply_send() adds the common headers and owns it */
        /* With release set, response is shared by many requests and carries
         * every header already (reply_common_headers()): reply_send()
         * queues it as it is, and reply_send() or reply_free() then calls
         * release(release_cls) instead of destroying it. */
        void (*release)(void *cls);
        void *release_cls;
};

/* Fills reply with a Prometheus-style JSON error:
 * {"status":"error","errorType":"<error_type>","error":"<message>"}. */
void reply_error(struct web_reply *reply, unsigned status, const char *error_type, const char *fmt, ...)
        __attribute__((format(printf, 4, 5)));

/* Starts a successful JSON answer, {"status":"success","tick":N,"data":,
 * with the tick it was read from: snap's, the latest published when the
 * request was read (null before the first tick). A range query sees at
 * least that tick's samples. The caller writes the data and the closing
 * brace. */
void reply_json_success(struct buf *b, const struct snapshot *snap);

/* The 401 with the WWW-Authenticate challenge for the configured scheme. */
void reply_unauthorized(const struct web_context *ctx, struct web_reply *reply);

/* The 204 answer to a CORS preflight; methods: what the path allows,
 * such as "GET, HEAD". */
void reply_preflight(struct web_reply *reply, const char *methods);

/* Adds the headers every response carries (Content-Type, nosniff, the
 * CSP, the referrer policy, CORS when configured) to resp. */
void reply_common_headers(struct MHD_Response *resp, const struct web_context *ctx, const char *content_type);

/* Turns reply's body into its response: a body that failed to grow is
 * answered 500; a body of 1 KiB or more is gzip-compressed when the
 * request's Accept-Encoding allows it. Does nothing when reply already
 * holds a response. May run on any thread while conn is suspended; false
 * when out of memory. */
bool reply_prepare(struct MHD_Connection *conn, struct web_reply *reply);

/* Queues reply on conn (reply_prepare() first, unless done) with the
 * common headers, and frees what it holds. Returns MHD_NO when the
 * response could not be queued (libmicrohttpd then closes the
 * connection). */
enum MHD_Result reply_send(struct MHD_Connection *conn, const struct web_context *ctx, struct web_reply *reply);

/* Frees what reply holds without sending it. */
void reply_free(struct web_reply *reply);
