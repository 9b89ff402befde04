/* The route table: every path neurond answers, with the methods it
 * allows, who may ask, whether it reads query parameters, and its handler.
 * Rows are tried in order and the first whose path matches wins; the last
 * row, the dashboard's files, takes every path no other row matched.
 *
 * The server (web/http.c) takes every request through the same steps:
 *   0. As soon as its head has arrived: request_refuse_head (400, 501) and
 *      the Host check of web/hosts.h (421, 400).
 *   1. routes_refuse_method: OPTIONS on a row that allows it, while
 *      cors_origin is set, gets the CORS preflight; a method the row does
 *      not allow gets 405 with Allow.
 *   2. request_refuse_oversized and request_refuse_malformed (414, 431, 400).
 *   3. routes_check_access: the row's auth rule (401; admin rows 404, 403);
 *      a password to hash goes to a worker thread first (web/queue.h).
 *   4. request_refuse_params, for rows that read parameters (400).
 *   5. For queued rows, the row's admission check on the polling thread
 *      (say, a query's cost: 422), then the handler on a query worker
 *      thread, its place bounded (503 with Retry-After beyond it); for the
 *      others the handler, at once. With the parameters when the row reads
 *      them. */
#pragma once

#include <stdbool.h>
#include <stddef.h>

#include "web/context.h"
#include "web/reply.h"
#include "web/request.h"

enum route_match {
        ROUTE_EXACT,   /* the path itself */
        ROUTE_SEGMENT, /* the path, which ends in '/', and one more non-empty segment: /api/v1/devices/3 */
        ROUTE_SUBTREE, /* the path and every path below it */
        ROUTE_ANY,     /* every path */
};

/* Methods, as bits of a row's methods. */
enum {
        ROUTE_GET = 1 << 0,
        ROUTE_HEAD = 1 << 1,
        ROUTE_POST = 1 << 2,
        ROUTE_DELETE = 1 << 3,
        ROUTE_OPTIONS = 1 << 4, /* a CORS preflight, answered while cors_origin is set */
};
#define ROUTE_READ (ROUTE_GET | ROUTE_HEAD | ROUTE_OPTIONS)

enum route_auth {
        ROUTE_AUTH_NORMAL,  /* credentials when authentication is configured */
        ROUTE_AUTH_HEALTHZ, /* as NORMAL, but open while healthz_open is set */
        ROUTE_AUTH_ADMIN,   /* as NORMAL, then 404 unless the admin setting is on, 403 unless from loopback */
};

enum route_params {
        ROUTE_PARAMS_READ,    /* limits checked, handed to the handler */
        ROUTE_PARAMS_IGNORED, /* not checked, not handed over (a scrape config may add some) */
};

/* Fills reply. An admission check leaves reply->status 0 to let the
 * request through. */
typedef void (*route_handler)(const struct web_context *ctx, const struct web_request *req, struct web_reply *reply);

struct route {
        const char *path;
        enum route_match match;
        unsigned methods; /* ROUTE_GET | ... */
        enum route_auth auth;
        enum route_params params;
        route_handler handler;
        /* Queued rows read the store: their handler runs on a query worker
         * thread, after admit (may be NULL) on the polling thread. */
        bool queued;
        route_handler admit;
};

extern const struct route routes_table[];
extern const size_t routes_count;

/* The first row that matches path; never NULL. */
const struct route *routes_find(const char *path);

/* Step 1 above. Returns true with reply filled (204 or 405) when the
 * request ends here. */
bool routes_refuse_method(const struct route *route, const char *method, const struct web_context *ctx,
                          struct web_reply *reply);

enum route_access {
        ROUTE_ACCESS_GRANTED,
        ROUTE_ACCESS_REFUSED, /* reply filled */
        ROUTE_ACCESS_VERIFY,  /* attempt filled: auth_verify() decides, then ask again with req->auth set */
};

/* Step 3 above. */
enum route_access routes_check_access(const struct route *route, const struct web_context *ctx,
                                      const struct web_request *req, struct auth_attempt *attempt,
                                      struct web_reply *reply);
