#include "config.h"

#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "web-fixture.h"
#include "web/hosts.h"

static struct hosts *hosts_of(const char *list) {
        struct hosts *h = NULL;
        char err[256];
        assert_int_equal(hosts_new(list, &h, err, sizeof(err)), 0);
        return h;
}

static void hosts_check__default__loopback_names_and_addresses(void **state) {
        struct hosts *h = hosts_of(NULL);

        static const char *const allowed[] = {
                "localhost",     "LOCALHOST:9710", "localhost.",     "grafana.localhost:3000",
                "ip6-localhost", "127.0.0.1",      "127.0.0.1:9710", "10.1.2.3:80",
                "[::1]:9710",    "[fe80::1]",      "localhost:",
        };
        for (size_t i = 0; i < sizeof(allowed) / sizeof(allowed[0]); i++)
                if (hosts_check(h, allowed[i]) != HOSTS_ALLOWED)
                        fail_msg("'%s' is not allowed", allowed[i]);
        /* A name that a page points at this machine: DNS rebinding. */
        static const char *const refused[] = {
                "evil.example", "evil.example:9710", "localhost.evil.example", "127.0.0.1.nip.io", "neuron-host",
        };
        for (size_t i = 0; i < sizeof(refused) / sizeof(refused[0]); i++)
                if (hosts_check(h, refused[i]) != HOSTS_NOT_ALLOWED)
                        fail_msg("'%s' is not refused", refused[i]);
        static const char *const malformed[] = {
                "", "a b", "a/b", "user@host", "[::1", "[zz::1]", "[::1]x", "host:99999", "host:x", ".", "a..b", ":80",
        };
        for (size_t i = 0; i < sizeof(malformed) / sizeof(malformed[0]); i++)
                if (hosts_check(h, malformed[i]) != HOSTS_MALFORMED)
                        fail_msg("'%s' is not malformed", malformed[i]);
        hosts_free(h);
}

static void hosts_check__list__names_and_wildcards(void **state) {
        struct hosts *h = hosts_of("neuron-host, *.Example.com\tgrafana");

        assert_int_equal(hosts_check(h, "neuron-host:9710"), HOSTS_ALLOWED);
        assert_int_equal(hosts_check(h, "NEURON-HOST"), HOSTS_ALLOWED);
        assert_int_equal(hosts_check(h, "a.example.com"), HOSTS_ALLOWED);
        assert_int_equal(hosts_check(h, "b.a.example.com:1"), HOSTS_ALLOWED);
        assert_int_equal(hosts_check(h, "grafana"), HOSTS_ALLOWED);
        assert_int_equal(hosts_check(h, "192.0.2.7"), HOSTS_ALLOWED);
        /* The list replaces the loopback names; the suffix needs its dot. */
        assert_int_equal(hosts_check(h, "localhost"), HOSTS_NOT_ALLOWED);
        assert_int_equal(hosts_check(h, "example.com"), HOSTS_NOT_ALLOWED);
        assert_int_equal(hosts_check(h, "badexample.com"), HOSTS_NOT_ALLOWED);
        hosts_free(h);
        h = hosts_of("*");
        assert_int_equal(hosts_check(h, "anything.at.all"), HOSTS_ALLOWED);
        assert_int_equal(hosts_check(h, "a b"), HOSTS_MALFORMED);
        hosts_free(h);
}

static void hosts_new__bad_entries__einval(void **state) {
        struct hosts *h = NULL;
        char err[256];

        static const char *const bad[] = { "a b/c", "*.", "**", "x.*", "a..b", " , ", "http://x" };
        for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
                if (hosts_new(bad[i], &h, err, sizeof(err)) != -EINVAL)
                        fail_msg("'%s' was taken", bad[i]);
                assert_null(h);
        }
        assert_int_equal(hosts_new("a b/c", &h, err, sizeof(err)), -EINVAL);
        assert_string_equal(err, "'b/c' is not a host name, *.name or *");
}

/* GET target with this Host header; fails unless the answer has status
 * and, when given, body_part. */
static void expect_host(struct web_fixture *f, const char *target, const char *host, unsigned status,
                        const char *body_part) {
        char request[512];
        struct web_answer a;

        snprintf(request, sizeof(request), "GET %s HTTP/1.1\r\nHost: %s\r\nConnection: close\r\n\r\n", target, host);
        web_fixture_send(f, request, strlen(request), &a);
        if (a.status != status || (body_part && !strstr(a.body, body_part)))
                fail_msg("Host %s: expected %u with '%s', got:\n%s", host, status, body_part ? body_part : "", a.text);
        web_answer_free(&a);
}

static void hosts_check__through_the_server__421_before_any_handler(void **state) {
        struct web_fixture f;

        web_fixture_init(&f);
        web_fixture_start(&f);
        expect_host(&f, "/healthz", "127.0.0.1", 200, "\"status\":\"ok\"");
        expect_host(&f, "/healthz", "localhost:9710", 200, NULL);
        expect_host(&f, "/api/v1/devices", "rebind.example:9710", 421,
                    "Host 'rebind.example:9710' is not an address of this server nor a name in allowed_hosts");
        expect_host(&f, "/healthz", "a b", 400, "the Host header is not host[:port]");
        web_fixture_free(&f);

        web_fixture_init(&f);
        f.ctx.allowed_hosts = "rebind.example";
        f.ctx.admin = true;
        web_fixture_start(&f);
        expect_host(&f, "/api/v1/devices", "rebind.example:9710", 200, NULL);
        expect_host(&f, "/api/v1/admin/faults", "localhost", 421, NULL);
        expect_host(&f, "/api/v1/admin/faults", "127.0.0.1", 200, NULL);
        web_fixture_free(&f);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(hosts_check__default__loopback_names_and_addresses),
                cmocka_unit_test(hosts_check__list__names_and_wildcards),
                cmocka_unit_test(hosts_new__bad_entries__einval),
                cmocka_unit_test(hosts_check__through_the_server__421_before_any_handler),
        };
        return cmocka_run_group_tests_name("hosts", tests, NULL, NULL);
}
