#include "config.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "web-fixture.h"
#include "web/request.h"

static void unescape(const char *in, const char *want) {
        char text[256];
        snprintf(text, sizeof(text), "%s", in);
        size_t n = request_unescape(NULL, NULL, text);
        assert_string_equal(text, want);
        assert_int_equal(n, strlen(want));
}

static void request_unescape__sequences__decoded_except_nul(void **state) {
        unescape("/api%2Fv1", "/api/v1");
        unescape("%2e%2E", "..");
        unescape("a%20b", "a b");
        unescape("%c3%a9", "\xc3\xa9");
        /* A decoded NUL would cut the string short: it stays encoded. */
        unescape("/metrics%00.json", "/metrics%00.json");
        /* Not a sequence: kept as it is. */
        unescape("%", "%");
        unescape("%zz%4", "%zz%4");
        unescape("100%", "100%");
}

static struct request_params params_of(size_t n, const char *key, const char *value) {
        struct request_params p = { .n = n };
        for (size_t i = 0; i < n; i++) {
                p.params[i] = (struct param){ key, value };
                p.bytes += strlen(key) + strlen(value) + 2;
        }
        return p;
}

static void request_refuse_oversized__at_the_limits__414_and_431(void **state) {
        struct web_reply reply = { 0 };
        char path[REQUEST_URL_MAX_BYTES + 2];

        memset(path, 'a', sizeof(path));
        path[0] = '/';
        path[REQUEST_URL_MAX_BYTES] = '\0';
        struct request_params none = { .n = 0 };
        assert_false(request_refuse_oversized(path, &none, 8192, 8192, &reply));
        path[REQUEST_URL_MAX_BYTES] = 'a';
        path[REQUEST_URL_MAX_BYTES + 1] = '\0';
        assert_true(request_refuse_oversized(path, &none, 0, 8192, &reply));
        assert_int_equal(reply.status, 414);
        assert_non_null(strstr(reply.body.data, "the URL is longer than 4096 bytes"));
        /* The query counts toward the URL. */
        struct request_params p = params_of(1, "q", "x");
        assert_true(request_refuse_oversized(path + 4, &p, 0, 8192, &reply));
        assert_int_equal(reply.status, 414);
        assert_true(request_refuse_oversized("/metrics", &none, 8193, 8192, &reply));
        assert_int_equal(reply.status, 431);
        assert_non_null(strstr(reply.body.data, "the request headers are longer than 8192 bytes"));
        buf_free(&reply.body);
}

static void request_refuse_malformed__not_utf8__400(void **state) {
        struct web_reply reply = { 0 };
        struct request_params none = { .n = 0 };

        assert_false(request_refuse_malformed("/caf\xc3\xa9", &none, &reply));
        assert_true(request_refuse_malformed("/\xff\xfe", &none, &reply));
        assert_int_equal(reply.status, 400);
        assert_non_null(strstr(reply.body.data, "the path is not valid UTF-8"));
        struct request_params bad_value = params_of(1, "metric", "\xc3\x28");
        assert_true(request_refuse_malformed("/api/v1/latest", &bad_value, &reply));
        assert_non_null(strstr(reply.body.data, "a query parameter is not valid UTF-8"));
        struct request_params bad_key = params_of(1, "\xc0\xaf", "1");
        assert_true(request_refuse_malformed("/api/v1/latest", &bad_key, &reply));
        buf_free(&reply.body);
}

static void request_refuse_params__count_and_lengths__400(void **state) {
        struct web_reply reply = { 0 };
        char key[PARAMS_KEY_MAX + 2], value[PARAMS_VALUE_MAX + 2];

        struct request_params p = params_of(REQUEST_PARAMS_MAX, "a", "b");
        assert_false(request_refuse_params(&p, &reply));
        p.overflow = true;
        assert_true(request_refuse_params(&p, &reply));
        assert_non_null(strstr(reply.body.data, "more than 32 query parameters"));

        memset(key, 'k', sizeof(key));
        key[PARAMS_KEY_MAX] = '\0';
        memset(value, 'v', sizeof(value));
        value[PARAMS_VALUE_MAX] = '\0';
        p = params_of(1, key, value);
        assert_false(request_refuse_params(&p, &reply));
        key[PARAMS_KEY_MAX] = 'k';
        key[PARAMS_KEY_MAX + 1] = '\0';
        p = params_of(1, key, "1");
        assert_true(request_refuse_params(&p, &reply));
        assert_non_null(strstr(reply.body.data, "name longer than 64 bytes"));
        value[PARAMS_VALUE_MAX] = 'v';
        value[PARAMS_VALUE_MAX + 1] = '\0';
        p = params_of(1, "neuroncore", value);
        assert_true(request_refuse_params(&p, &reply));
        assert_int_equal(reply.status, 400);
        assert_non_null(strstr(reply.body.data, "parameter 'neuroncore': value longer than 256 bytes"));
        buf_free(&reply.body);
}

/* Sends raw (with its NULs) plus a Host and a blank line; returns the status. */
static unsigned send_raw(struct web_fixture *f, const char *raw, size_t len, const char *body_part) {
        char request[512];
        static const char tail[] = "Host: 127.0.0.1\r\nConnection: close\r\n\r\n";
        struct web_answer a;

        assert_true(len + sizeof(tail) <= sizeof(request));
        memcpy(request, raw, len);
        memcpy(request + len, tail, sizeof(tail) - 1);
        web_fixture_send(f, request, len + sizeof(tail) - 1, &a);
        unsigned status = a.status;
        if (body_part && !strstr(a.body, body_part))
                fail_msg("expected '%s' in:\n%s", body_part, a.text);
        web_answer_free(&a);
        return status;
}

#define RAW(s) s, sizeof(s) - 1

static void request_head_has_nul__through_the_server__400(void **state) {
        struct web_fixture f;
        const char *nul = "a NUL byte in the request line or a header";

        web_fixture_init(&f);
        web_fixture_start(&f);
        assert_int_equal(send_raw(&f, RAW("GET /metrics HTTP/1.1\r\n"), NULL), 200);
        assert_int_equal(send_raw(&f, RAW("GET /metrics HTTP/1.1\r\nX-A: a b\r\n"), NULL), 200);
        /* Without the check each of these would be served as /metrics. */
        assert_int_equal(send_raw(&f, RAW("GET /metrics\0junk HTTP/1.1\r\n"), nul), 400);
        assert_int_equal(send_raw(&f, RAW("GET /metrics?a\0b=1 HTTP/1.1\r\n"), nul), 400);
        assert_int_equal(send_raw(&f, RAW("GET /metrics HTTP/1.1\r\nX-A: a\0b\r\n"), nul), 400);
        assert_int_equal(send_raw(&f, RAW("GET /metrics HTTP/1.1\r\nX-A: a\0\r\n"), nul), 400);
        /* Encoded, it stays "%00": no such path. */
        assert_int_equal(send_raw(&f, RAW("GET /metrics%00.json HTTP/1.1\r\n"), "no such path: /metrics%00.json"), 404);
        web_fixture_free(&f);
}

/* Sends a whole request as it is; returns the status, and checks that the
 * answer has one status line and, when body_part is given, says it. */
static unsigned send_whole(struct web_fixture *f, const char *raw, const char *body_part) {
        struct web_answer a;

        web_fixture_send(f, raw, strlen(raw), &a);
        unsigned status = a.status;
        const char *second = strstr(a.text, "\nHTTP/1.");
        if (second)
                fail_msg("two status lines for:\n%s\nanswer:\n%s", raw, a.text);
        if (body_part && !strstr(a.body, body_part))
                fail_msg("expected '%s' for:\n%s\nanswer:\n%s", body_part, raw, a.text);
        web_answer_free(&a);
        return status;
}

static void request_refuse_head__framing__400_or_501_at_once(void **state) {
        struct web_fixture f;

        web_fixture_init(&f);
        web_fixture_start(&f);
        assert_int_equal(send_whole(&f, "GET /healthz HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n", NULL),
                         200);
        assert_int_equal(send_whole(&f, "GET /healthz HTTP/1.0\r\n\r\n", NULL), 200);
        assert_int_equal(
                send_whole(&f,
                           "GET /healthz HTTP/1.1\r\nHost: localhost\r\nContent-Length: 0\r\nContent-Length: 0\r\n"
                           "Connection: close\r\n\r\n",
                           NULL),
                200);
        assert_int_equal(send_whole(&f,
                                    "GET /healthz HTTP/1.1\r\nHost: localhost\r\nTransfer-Encoding: Chunked\r\n"
                                    "Connection: close\r\n\r\n0\r\n\r\n",
                                    NULL),
                         200);
        /* Each of these is answered as soon as its head is in: the
         * connection is not kept open waiting for a body. */
        assert_int_equal(send_whole(&f, "GET /healthz HTTP/1.1\r\n\r\n", "an HTTP/1.1 request needs a Host header"),
                         400);
        assert_int_equal(send_whole(&f, "GET /healthz HTTP/1.1\r\nHost: localhost\r\nHost: 127.0.0.1\r\n\r\n",
                                    "more than one Host header"),
                         400);
        assert_int_equal(send_whole(&f, "GET /healthz HTTP/1.1\r\nHost : localhost\r\n\r\n",
                                    "whitespace between a header name and its colon"),
                         400);
        assert_int_equal(send_whole(&f, "GET /healthz HTTP/1.1\r\nHost: localhost\r\nX-A\t: 1\r\n\r\n",
                                    "whitespace between a header name and its colon"),
                         400);
        assert_int_equal(send_whole(&f, "GET /healthz x HTTP/1.1\r\nHost: localhost\r\n\r\n",
                                    "a space or tab in the request target"),
                         400);
        assert_int_equal(send_whole(&f,
                                    "POST /healthz HTTP/1.1\r\nHost: localhost\r\nContent-Length: 5\r\n"
                                    "Transfer-Encoding: chunked\r\n\r\n0\r\n\r\n",
                                    "both Transfer-Encoding and Content-Length"),
                         400);
        assert_int_equal(send_whole(&f,
                                    "POST /healthz HTTP/1.1\r\nHost: localhost\r\nContent-Length: 0\r\n"
                                    "Content-Length: 5\r\n\r\nhello",
                                    "Content-Length headers that differ"),
                         400);
        assert_int_equal(send_whole(&f,
                                    "POST /healthz HTTP/1.1\r\nHost: localhost\r\nTransfer-Encoding: chunked\r\n"
                                    "Transfer-Encoding: chunked\r\n\r\n",
                                    "more than one Transfer-Encoding header"),
                         400);
        assert_int_equal(send_whole(&f, "POST /healthz HTTP/1.0\r\nTransfer-Encoding: chunked\r\n\r\n",
                                    "Transfer-Encoding in an HTTP/1.0 request"),
                         400);
        static const char *const codings[] = { "xchunked", "gzip, chunked", "identity", "chunked, gzip" };
        for (size_t i = 0; i < sizeof(codings) / sizeof(codings[0]); i++) {
                char raw[256];
                snprintf(raw, sizeof(raw), "POST /healthz HTTP/1.1\r\nHost: localhost\r\nTransfer-Encoding: %s\r\n\r\n",
                         codings[i]);
                assert_int_equal(send_whole(&f, raw, "transfer codings other than chunked are not implemented"), 501);
        }
        web_fixture_free(&f);
}

static void request_checks__through_the_server__refused_before_any_handler(void **state) {
        struct web_fixture f;
        char target[REQUEST_URL_MAX_BYTES + 64], filler[8300], header[8400];

        web_fixture_init(&f);
        web_fixture_start(&f);
        snprintf(target, sizeof(target), "/api/v1/latest?q=%0*d", REQUEST_URL_MAX_BYTES, 0);
        web_fixture_expect(&f, "GET", target, NULL, 414, "the URL is longer than 4096 bytes");
        memset(filler, 'x', sizeof(filler) - 1);
        filler[sizeof(filler) - 1] = '\0';
        snprintf(header, sizeof(header), "X-Filler: %s\r\n", filler);
        web_fixture_expect(&f, "GET", "/healthz", header, 431, "the request headers are longer than 8192 bytes");
        web_fixture_expect(&f, "GET", "/%ff%fe", NULL, 400, "the path is not valid UTF-8");
        web_fixture_expect(&f, "GET", "/api/v1/latest?metric=%c3%28", NULL, 400, "not valid UTF-8");
        web_fixture_free(&f);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(request_unescape__sequences__decoded_except_nul),
                cmocka_unit_test(request_refuse_oversized__at_the_limits__414_and_431),
                cmocka_unit_test(request_refuse_malformed__not_utf8__400),
                cmocka_unit_test(request_refuse_params__count_and_lengths__400),
                cmocka_unit_test(request_head_has_nul__through_the_server__400),
                cmocka_unit_test(request_refuse_head__framing__400_or_501_at_once),
                cmocka_unit_test(request_checks__through_the_server__refused_before_any_handler),
        };
        return cmocka_run_group_tests_name("request", tests, NULL, NULL);
}
