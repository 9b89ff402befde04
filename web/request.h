/* A request as a route's handler sees it, and the checks a request passes
 * before any handler runs: raw NUL bytes in the head, the length of the
 * URL and of the headers, UTF-8 in the path and the query, and the number
 * and length of query parameters. The checks fill a web_reply with the
 * JSON error when they refuse. */
#pragma once

#include <microhttpd.h>
#include <stdbool.h>
#include <stddef.h>

#include "web/auth.h"
#include "web/params.h"
#include "web/reply.h"

#define REQUEST_URL_MAX_BYTES 4096 /* path plus query string; longer gets 414 */
#define REQUEST_PARAMS_MAX 32      /* query parameters; more gets 400 where parameters are read */

struct scrape_cache;
struct queue_job;

struct web_request {
        struct MHD_Connection *conn; /* headers and the client's address; NULL in handler tests */
        const char *method;
        const char *path;            /* percent-decoded (request_unescape) */
        const struct param *params;  /* the query parameters, in order, within the limits above */
        size_t n_params;             /* 0 for routes that ignore parameters */
        struct scrape_cache *scrape; /* the server's /metrics cache */
        enum auth_verdict auth;      /* auth_verify()'s verdict once it ran, else AUTH_UNCHECKED */
        const struct queue_job *job; /* a queued row's job (queue_job_cancelled), else NULL */
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

/* What the checks of a request head (RFC 9112) look at: taken from the
 * request line as it arrived (request_note_uri) and from libmicrohttpd's
 * list of the headers (request_read_head). */
struct request_head {
        const char *uri_end; /* where the URI, as it arrived, ends; for request_head_has_nul() */
        bool blank_in_uri;   /* a space or tab inside the request target */
        bool nul;            /* request_head_has_nul() */
        bool http_1_1;       /* HTTP/1.1: Host is required */
        unsigned n_host;     /* Host headers */
        const char *host;    /* the first one's value, or NULL */
        unsigned n_transfer_encoding;
        const char *transfer_encoding; /* the first one's value, or NULL */
        unsigned n_content_length;
        const char *content_length; /* the first one's value, or NULL */
        bool content_lengths_differ;
        bool blank_in_name; /* a header name that holds a space or tab: whitespace before its colon */
};

/* From the URI as libmicrohttpd's MHD_OPTION_URI_LOG_CALLBACK sees it:
 * before it is split at '?' and decoded. Resets the rest of *ret. */
void request_note_uri(const char *uri, struct request_head *ret);

/* Whether a raw NUL byte hid part of the request line or of a header.
 * uri_end: request_head.uri_end. */
bool request_head_has_nul(struct MHD_Connection *conn, const char *method, const char *url, const char *version,
                          const char *uri_end);

/* Fills the rest of h from the request on conn. */
void request_read_head(struct MHD_Connection *conn, const char *method, const char *url, const char *version,
                       struct request_head *h);

/* Refuses a head that RFC 9112 says to refuse, before anything else looks
 * at it: a raw NUL byte, blanks in the target or before a header's colon,
 * an HTTP/1.1 request without Host, more than one Host, Content-Length
 * with Transfer-Encoding, Content-Lengths that differ, or more than one
 * Transfer-Encoding (400); a transfer coding other than chunked (501).
 * Returns true with reply filled when it refuses. */
bool request_refuse_head(const struct request_head *h, struct web_reply *reply);

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
