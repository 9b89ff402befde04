#include "config.h"

#include <stdint.h>
#include <string.h>
#include <strings.h>

#include "lib/buf.h"
#include "web/request.h"

static int hex_digit(char c) {
        if (c >= '0' && c <= '9')
                return c - '0';
        if (c >= 'a' && c <= 'f')
                return c - 'a' + 10;
        if (c >= 'A' && c <= 'F')
                return c - 'A' + 10;
        return -1;
}

size_t request_unescape(void *cls, struct MHD_Connection *conn, char *text) {
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

void request_note_uri(const char *uri, struct request_head *ret) {
        *ret = (struct request_head){
                .uri_end = uri ? uri + strlen(uri) : NULL,
                .blank_in_uri = uri && strpbrk(uri, " \t"),
        };
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
        head_gap(w, key, "", true, 2); /* CR LF, or LF */
        head_string(w, key + key_size);
        head_gap(w, value, " \t", false, SIZE_MAX); /* the colon, then blanks */
        head_string(w, value + value_size);
        return w->judged && !w->hidden ? MHD_YES : MHD_NO;
}

bool request_head_has_nul(struct MHD_Connection *conn, const char *method, const char *url, const char *version,
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

static enum MHD_Result read_header(void *cls, enum MHD_ValueKind kind, const char *key, const char *value) {
        struct request_head *h = cls;

        value = value ? value : "";
        if (strpbrk(key, " \t"))
                h->blank_in_name = true;
        if (strcasecmp(key, MHD_HTTP_HEADER_HOST) == 0) {
                if (h->n_host++ == 0)
                        h->host = value;
        } else if (strcasecmp(key, MHD_HTTP_HEADER_TRANSFER_ENCODING) == 0) {
                if (h->n_transfer_encoding++ == 0)
                        h->transfer_encoding = value;
        } else if (strcasecmp(key, MHD_HTTP_HEADER_CONTENT_LENGTH) == 0) {
                /* libmicrohttpd reads the first one and checks that it is
                 * a number; it does not look at the others. */
                if (h->n_content_length++ == 0)
                        h->content_length = value;
                else if (strcmp(value, h->content_length) != 0)
                        h->content_lengths_differ = true;
        }
        return MHD_YES;
}

void request_read_head(struct MHD_Connection *conn, const char *method, const char *url, const char *version,
                       struct request_head *h) {
        h->nul = request_head_has_nul(conn, method, url, version, h->uri_end);
        h->http_1_1 = strncmp(version, "HTTP/1.", 7) == 0 && strcmp(version, MHD_HTTP_VERSION_1_0) != 0;
        MHD_get_connection_values(conn, MHD_HEADER_KIND, read_header, h);
}

/* A transfer coding list that is exactly "chunked", blanks aside. */
static bool is_chunked(const char *codings) {
        codings += strspn(codings, " \t");
        if (strncasecmp(codings, "chunked", 7) != 0)
                return false;
        codings += 7;
        return codings[strspn(codings, " \t")] == '\0';
}

bool request_refuse_head(const struct request_head *h, struct web_reply *reply) {
        const char *why = NULL;
        unsigned status = 400;

        if (h->nul)
                why = "a NUL byte in the request line or a header";
        else if (h->blank_in_uri)
                why = "a space or tab in the request target";
        else if (h->blank_in_name)
                why = "whitespace between a header name and its colon";
        else if (h->n_host == 0 && h->http_1_1)
                why = "an HTTP/1.1 request needs a Host header";
        else if (h->n_host > 1)
                why = "more than one Host header";
        else if (h->n_transfer_encoding && h->n_content_length)
                why = "both Transfer-Encoding and Content-Length";
        else if (h->content_lengths_differ)
                why = "Content-Length headers that differ";
        else if (h->n_transfer_encoding > 1)
                why = "more than one Transfer-Encoding header";
        else if (h->n_transfer_encoding && !h->http_1_1)
                why = "Transfer-Encoding in an HTTP/1.0 request";
        else if (h->n_transfer_encoding && !is_chunked(h->transfer_encoding)) {
                why = "transfer codings other than chunked are not implemented";
                status = 501;
        }
        if (why)
                reply_error(reply, status, "bad_data", "%s", why);
        return why != NULL;
}

static enum MHD_Result collect_param(void *cls, enum MHD_ValueKind kind, const char *key, const char *value) {
        struct request_params *p = cls;
        if (p->n == REQUEST_PARAMS_MAX) {
                p->overflow = true;
                return MHD_NO;
        }
        p->params[p->n++] = (struct param){ .key = key, .value = value ? value : "" };
        p->bytes += strlen(key) + (value ? strlen(value) : 0) + 2;
        return MHD_YES;
}

void request_collect_params(struct MHD_Connection *conn, struct request_params *ret) {
        *ret = (struct request_params){ .n = 0 };
        MHD_get_connection_values(conn, MHD_GET_ARGUMENT_KIND, collect_param, ret);
}

static enum MHD_Result count_header(void *cls, enum MHD_ValueKind kind, const char *key, const char *value) {
        size_t *total = cls;
        *total += strlen(key) + (value ? strlen(value) : 0) + 4; /* ": " and CRLF */
        return MHD_YES;
}

size_t request_header_bytes(struct MHD_Connection *conn) {
        size_t total = 0;
        MHD_get_connection_values(conn, MHD_HEADER_KIND, count_header, &total);
        return total;
}

bool request_refuse_oversized(const char *path, const struct request_params *p, size_t header_bytes,
                              size_t max_header_bytes, struct web_reply *reply) {
        if (strlen(path) + p->bytes > REQUEST_URL_MAX_BYTES) {
                reply_error(reply, 414, "bad_data", "the URL is longer than %d bytes", REQUEST_URL_MAX_BYTES);
                return true;
        }
        if (header_bytes > max_header_bytes) {
                reply_error(reply, 431, "bad_data", "the request headers are longer than %zu bytes", max_header_bytes);
                return true;
        }
        return false;
}

bool request_refuse_malformed(const char *path, const struct request_params *p, struct web_reply *reply) {
        if (!utf8_valid(path)) {
                reply_error(reply, 400, "bad_data", "the path is not valid UTF-8 once percent-decoded");
                return true;
        }
        for (size_t i = 0; i < p->n; i++)
                if (!utf8_valid(p->params[i].key) || !utf8_valid(p->params[i].value)) {
                        reply_error(reply, 400, "bad_data",
                                    "a query parameter is not valid UTF-8 once percent-decoded");
                        return true;
                }
        return false;
}

bool request_refuse_params(const struct request_params *p, struct web_reply *reply) {
        if (p->overflow) {
                reply_error(reply, 400, "bad_data", "more than %d query parameters", REQUEST_PARAMS_MAX);
                return true;
        }
        for (size_t i = 0; i < p->n; i++) {
                if (strlen(p->params[i].key) > PARAMS_KEY_MAX) {
                        reply_error(reply, 400, "bad_data", "parameter '%.64s...': name longer than %d bytes",
                                    p->params[i].key, PARAMS_KEY_MAX);
                        return true;
                }
                if (strlen(p->params[i].value) > PARAMS_VALUE_MAX) {
                        reply_error(reply, 400, "bad_data", "parameter '%.64s': value longer than %d bytes",
                                    p->params[i].key, PARAMS_VALUE_MAX);
                        return true;
                }
        }
        return false;
}
