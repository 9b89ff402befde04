#include "config.h"

#include <errno.h>
#include <netinet/in.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "daemon/settings.h"

static void settings_parse_listen__ipv4_and_ipv6__parsed(void **state) {
        struct sockaddr_storage ss;
        socklen_t len;

        assert_int_equal(settings_parse_listen("127.0.0.1:9710", &ss, &len), 0);
        assert_int_equal(ss.ss_family, AF_INET);
        assert_int_equal(ntohs(((struct sockaddr_in *) &ss)->sin_port), 9710);
        assert_int_equal(settings_parse_listen("[::1]:0", &ss, &len), 0);
        assert_int_equal(ss.ss_family, AF_INET6);
        assert_int_equal(len, sizeof(struct sockaddr_in6));
}

static void settings_parse_listen__bad_address__einval(void **state) {
        static const char *const bad[] = {
                "",
                "127.0.0.1",
                "127.0.0.1:",
                ":9710",
                "localhost:9710",
                "127.0.0.1:65536",
                "127.0.0.1:-1",
                "127.0.0.1:12a",
                "::1:9710",
                "[::1]9710",
                "[::1]:",
                "[nothost]:1",
                "256.0.0.1:80",
                "127.0.0.1:123456",
        };
        struct sockaddr_storage ss;
        socklen_t len;
        for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
                assert_int_equal(settings_parse_listen(bad[i], &ss, &len), -EINVAL);
}

static int load(char **argv, struct settings *s, char *err, size_t errlen) {
        int argc = 0;
        while (argv[argc])
                argc++;
        return settings_load(argc, argv, s, err, errlen);
}

static char *write_config(const char *text) {
        static char path[] = "/tmp/neurond-test-settings-XXXXXX";
        snprintf(path, sizeof(path), "/tmp/neurond-test-settings-XXXXXX");
        int fd = mkstemp(path);
        assert_true(fd >= 0);
        assert_int_equal(write(fd, text, strlen(text)), (ssize_t) strlen(text));
        close(fd);
        return path;
}

static void settings_load__flags__override_config(void **state) {
        char *path = write_config("[neurond]\n"
                                  "listen = 127.0.0.1:1234\n"
                                  "interval = 5s\n"
                                  "db = /tmp/from-config.db\n"
                                  "backend = model:trn1.2xlarge\n");
        char *argv[] = { "neurond", "--config", path, "--interval", "500ms", NULL };
        struct settings s;
        char err[256];

        assert_int_equal(load(argv, &s, err, sizeof(err)), SETTINGS_RUN);
        assert_int_equal(s.interval_ms, 500);
        assert_string_equal(s.listen.text, "127.0.0.1:1234");
        assert_string_equal(s.db_path, "/tmp/from-config.db");
        assert_string_equal(s.backend, "model:trn1.2xlarge");
        assert_string_equal(s.config_path, path);
        unlink(path);
}

static void settings_load__defaults__documented_values(void **state) {
        char *argv[] = { "neurond", NULL };
        struct settings s;
        char err[256];

        unsetenv("STATE_DIRECTORY");
        assert_int_equal(load(argv, &s, err, sizeof(err)), SETTINGS_RUN);
        assert_int_equal(s.interval_ms, 1000);
        assert_string_equal(s.listen.text, "127.0.0.1:9710");
        assert_string_equal(s.backend, "auto");
        setenv("STATE_DIRECTORY", "/var/lib/x", 1);
        assert_int_equal(load(argv, &s, err, sizeof(err)), SETTINGS_RUN);
        assert_string_equal(s.db_path, "/var/lib/x/neurond.db");
        unsetenv("STATE_DIRECTORY");
}

static void settings_load__actions__returned(void **state) {
        struct settings s;
        char err[256];
        char *help[] = { "neurond", "--help", NULL };
        char *version[] = { "neurond", "-V", NULL };
        char *check[] = { "neurond", "--check-config", NULL };
        char *list[] = { "neurond", "--list-instances", NULL };

        assert_int_equal(load(help, &s, err, sizeof(err)), SETTINGS_HELP);
        assert_int_equal(load(version, &s, err, sizeof(err)), SETTINGS_VERSION);
        assert_int_equal(load(check, &s, err, sizeof(err)), SETTINGS_CHECK_CONFIG);
        assert_int_equal(load(list, &s, err, sizeof(err)), SETTINGS_LIST_INSTANCES);
}

static void expect_error(char **argv, const char *needle) {
        struct settings s;
        char err[512] = "";
        assert_int_equal(load(argv, &s, err, sizeof(err)), -EINVAL);
        if (!strstr(err, needle))
                fail_msg("error '%s' does not mention '%s'", err, needle);
        assert_null(strchr(err, '\n'));
}

static void settings_load__bad_input__one_line_error(void **state) {
        char *unknown[] = { "neurond", "--frobnicate", NULL };
        char *no_value[] = { "neurond", "--interval", NULL };
        char *duration[] = { "neurond", "--interval", "5x", NULL };
        char *too_short[] = { "neurond", "--interval", "10ms", NULL };
        char *address[] = { "neurond", "--listen", "localhost:80", NULL };
        char *missing[] = { "neurond", "--config", "/nonexistent/neurond.conf", NULL };
        char *extra[] = { "neurond", "stray", NULL };
        char *level[] = { "neurond", "--log-level", "loud", NULL };

        expect_error(unknown, "--frobnicate");
        expect_error(no_value, "--interval");
        expect_error(duration, "option --interval: '5x'");
        expect_error(too_short, "100ms to 1h");
        expect_error(address, "localhost:80");
        expect_error(missing, "/nonexistent/neurond.conf");
        expect_error(extra, "stray");
        expect_error(level, "loud");
}

static void settings_load__bad_config__names_file_and_line(void **state) {
        struct {
                const char *text, *needle;
        } cases[] = {
                { "[neurond]\ninterval = 1s\nbogus = 1\n", ":3: unknown setting 'bogus'" },
                { "[other]\nlisten = 127.0.0.1:1\n", ":2: unknown section [other]" },
                { "interval = soon\n", ":1: interval: 'soon'" },
                { "[neurond]\nthis is not ini\n", ":2: not a valid INI line" },
        };
        for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
                char *path = write_config(cases[i].text);
                char *argv[] = { "neurond", "-c", path, NULL };
                expect_error(argv, cases[i].needle);
                unlink(path);
        }
}

static void settings_load__http_keys__parsed_and_checked(void **state) {
        char *path = write_config("[neurond]\n"
                                  "tls_cert = /etc/neurond/cert.pem\n"
                                  "tls_key = /etc/neurond/key.pem\n"
                                  "basic_auth_users = /etc/neurond/users\n"
                                  "bearer_token_file = /etc/neurond/token\n"
                                  "healthz_open = true\n"
                                  "cors_origin = https://grafana.example\n"
                                  "max_connections = 100\n"
                                  "connection_timeout = 1m\n"
                                  "max_header_bytes = 4096\n");
        char *argv[] = { "neurond", "--config", path, NULL };
        struct settings s;
        char err[256];

        assert_int_equal(load(argv, &s, err, sizeof(err)), SETTINGS_RUN);
        assert_string_equal(s.tls_cert, "/etc/neurond/cert.pem");
        assert_string_equal(s.tls_key, "/etc/neurond/key.pem");
        assert_string_equal(s.basic_auth_users, "/etc/neurond/users");
        assert_string_equal(s.bearer_token_file, "/etc/neurond/token");
        assert_true(s.healthz_open);
        assert_string_equal(s.cors_origin, "https://grafana.example");
        assert_int_equal(s.max_connections, 100);
        assert_int_equal(s.connection_timeout_ms, 60000);
        assert_int_equal(s.max_header_bytes, 4096);
        unlink(path);

        struct {
                const char *text, *needle;
        } cases[] = {
                { "tls_cert = /a.pem\n", "tls_cert and tls_key must be given together" },
                { "tls_key = /a.pem\n", "tls_cert and tls_key must be given together" },
                { "healthz_open = maybe\n", ":1: healthz_open: 'maybe'" },
                { "max_connections = 5\n", ":1: max_connections: '5'" },
                { "max_connections = lots\n", ":1: max_connections: 'lots'" },
                { "connection_timeout = 500ms\n", ":1: connection_timeout: '500ms'" },
                { "max_header_bytes = 99999999\n", ":1: max_header_bytes: '99999999'" },
        };
        for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
                path = write_config(cases[i].text);
                char *bad[] = { "neurond", "-c", path, NULL };
                expect_error(bad, cases[i].needle);
                unlink(path);
        }
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(settings_parse_listen__ipv4_and_ipv6__parsed),
                cmocka_unit_test(settings_parse_listen__bad_address__einval),
                cmocka_unit_test(settings_load__flags__override_config),
                cmocka_unit_test(settings_load__defaults__documented_values),
                cmocka_unit_test(settings_load__actions__returned),
                cmocka_unit_test(settings_load__bad_input__one_line_error),
                cmocka_unit_test(settings_load__bad_config__names_file_and_line),
                cmocka_unit_test(settings_load__http_keys__parsed_and_checked),
        };
        return cmocka_run_group_tests_name("settings", tests, NULL, NULL);
}
