/* A request as a route's handler sees it, and the checks a request passes
 * before any handler runs: raw NUL bytes in the head, the length of the
 * URL and of the headers, UTF-8 in the path and the query, and the number
 * and length of query parameters. The checks fill a web_reply with the
 * JSON error when they refuse. */
#pragma once

#include <microhttpd.h>
#include <stdbool.h>
#include <stddef.h>

#include "web/params.h"
#include "web/reply.h"

#define REQUEST_URL_MAX_BYTES 4096 /* path plus query string; longer gets 414 */
#define REQUEST_PARAMS_MAX 32      /* query parameters; more gets 400 where parameters are read */

struct scrape_cache;

struct web_request {
        struct MHD_Connection *conn; /* headers and the client's address; NULL in handler tests */
        const char *method;
        const char *path;            /* percent-decoded (request_unescape) */
        const struct param *params;  /* the query parameters, in order, within the limits above */
        size_t n_params;             /* 0 for routes that ignore parameters */
        struct scrape_cache *scrape; /* the server's /metrics cache */
};

/* The query parameters of a request, as libmicrohttpd decoded them. */
struct request_params {
        struct param params[REQUEST_PARAMS_MAX];
        size_t n;
        size_t bytes;  /* of the names and values, to bound the query string */
        bool overflow; /* more than REQUEST_PARAMS_MAX; the rest were not collected */
};

/* libmicrohttpd's MHD_OPTION_UNESCAPE_CALLBACK: percent-decoding as its
 * own, except that "%00" stays as it is. A decoded NUL would cut the
 * string short, so that "/metrics%00.json" would be served as "/metrics"
 * and "metric=x%00y" read as "x"; left encoded, such input fails the route
 * and parameter checks like any other unknown name. */
size_t request_unescape(void *cls, struct MHD_Connection *conn, char *text);

/* libmicrohttpd's MHD_OPTION_URI_LOG_CALLBACK: returns where the URI, as it
 * arrived, ends; libmicrohttpd hands that to the first call of the request
 * handler as *req_cls, for request_head_has_nul(). */
void *request_uri_end(void *cls, const char *uri, struct MHD_Connection *conn);

/* Whether a raw NUL byte hid part of the request line or of a header.
 * uri_end: what request_uri_end() returned for this request. */
bool request_head_has_nul(struct MHD_Connection *conn, const char *method, const char *url, const char *version,
                          const char *uri_end);

/* Collects the query parameters of the request on conn. */
void request_collect_params(struct MHD_Connection *conn, struct request_params *ret);

/* The bytes of the request's headers, counted as "name: value" lines. */
size_t request_header_bytes(struct MHD_Connection *conn);

/* Refuses, with 414, a URL (path plus parameters) over
 * REQUEST_URL_MAX_BYTES, or, with 431, headers over max_header_bytes.
 * Returns true with reply filled when it refuses. */
bool request_refuse_oversized(const char *path, const struct request_params *p, size_t header_bytes,
                              size_t max_header_bytes, struct web_reply *reply);

/* Refuses, with 400, a path or a parameter that is not UTF-8 once
 * percent-decoded: no metric, label or file has such a name. */
bool request_refuse_malformed(const char *path, const struct request_params *p, struct web_reply *reply);

/* Refuses, with 400, more than REQUEST_PARAMS_MAX parameters, a name over
 * PARAMS_KEY_MAX or a value over PARAMS_VALUE_MAX bytes. */
bool request_refuse_params(const struct request_params *p, struct web_reply *reply);
