#include "config.h"

#include <errno.h>
#include <netinet/in.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "daemon/settings.h"
#include "storage/store.h"

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

/* ":PORT" and "[::]:PORT" both mean every address, as in node_exporter. */
static void settings_parse_listen__no_address_or_ipv6_any__every_address(void **state) {
        static const char *const every[] = { ":9710", "[::]:9710" };

        for (size_t i = 0; i < sizeof(every) / sizeof(every[0]); i++) {
                struct sockaddr_storage ss;
                socklen_t len;
                assert_int_equal(settings_parse_listen(every[i], &ss, &len), 0);
                const struct sockaddr_in6 *sin6 = (const struct sockaddr_in6 *) &ss;
                assert_int_equal(sin6->sin6_family, AF_INET6);
                assert_int_equal(len, sizeof(*sin6));
                assert_true(IN6_IS_ADDR_UNSPECIFIED(&sin6->sin6_addr));
                assert_int_equal(ntohs(sin6->sin6_port), 9710);
        }
}

static void settings_parse_listen__bad_address__einval(void **state) {
        static const char *const bad[] = {
                "",
                "127.0.0.1",
                "127.0.0.1:",
                ":",
                ":x",
                "::9710",
                "[]:9710",
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

static char *write_config_bytes(const char *bytes, size_t len) {
        static char path[] = "/tmp/neurond-test-settings-XXXXXX";
        snprintf(path, sizeof(path), "/tmp/neurond-test-settings-XXXXXX");
        int fd = mkstemp(path);
        assert_true(fd >= 0);
        assert_int_equal(write(fd, bytes, len), (ssize_t) len);
        close(fd);
        return path;
}

static char *write_config(const char *text) {
        return write_config_bytes(text, strlen(text));
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
        assert_string_equal(s.backend, "sysfs");
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

/* Config file texts that each fail with a message containing needle. */
struct config_case {
        const char *text, *needle;
};

static void expect_config_errors(const struct config_case *cases, size_t n) {
        for (size_t i = 0; i < n; i++) {
                char *path = write_config(cases[i].text);
                char *argv[] = { "neurond", "-c", path, NULL };
                expect_error(argv, cases[i].needle);
                unlink(path);
        }
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
        static const struct config_case cases[] = {
                { "[neurond]\ninterval = 1s\nbogus = 1\n", ":3: unknown setting 'bogus'" },
                { "[other]\nlisten = 127.0.0.1:1\n", ":2: unknown section [other]" },
                { "interval = soon\n", ":1: interval: 'soon'" },
                { "[neurond]\nthis is not ini\n", ":2: not a valid INI line" },
        };
        expect_config_errors(cases, sizeof(cases) / sizeof(cases[0]));
}

/* "cors_origin = https://aaa...", len bytes, then end. */
static void origin_line(char *out, size_t len, const char *end) {
        size_t at = (size_t) snprintf(out, len + 1, "cors_origin = https://");
        memset(out + at, 'a', len - at);
        memcpy(out + len, end, strlen(end) + 1);
}

static void settings_load__long_lines__whole_or_refused(void **state) {
        char line[512], text[1024], err[512] = "";
        struct settings s;

        /* The longest line inih holds whole, with LF or CRLF. */
        for (int crlf = 0; crlf < 2; crlf++) {
                origin_line(line, 197, crlf ? "\r\n" : "\n");
                snprintf(text, sizeof(text), "[neurond]\n%sinterval = 2s\n", line);
                char *path = write_config(text);
                char *argv[] = { "neurond", "--config", path, NULL };
                assert_int_equal(load(argv, &s, err, sizeof(err)), SETTINGS_RUN);
                assert_int_equal(strlen(s.cors_origin), 197 - strlen("cors_origin = "));
                assert_int_equal(s.interval_ms, 2000);
                assert_false(s.admin);
                unlink(path);
        }

        /* 211 bytes: inih would read its first 199 as one line and the
         * rest, "admin = true", as another. */
        origin_line(line, 211 - strlen("admin = true"), "admin = true\n");
        assert_int_equal(strlen(line), 212);
        char *path = write_config(line);
        char *argv[] = { "neurond", "--config", path, NULL };
        assert_int_equal(load(argv, &s, err, sizeof(err)), -EINVAL);
        assert_non_null(strstr(err, ":1: the line is longer than 197 bytes"));
        unlink(path);

        /* 198 bytes, on line 3, and on the last line without a line end. */
        origin_line(line, 198, "\n");
        snprintf(text, sizeof(text), "[neurond]\n\n%s", line);
        line[198] = '\0';
        const struct config_case cases[] = {
                { text, ":3: the line is longer than 197 bytes" },
                { line, ":1: the line is longer than 197 bytes" },
        };
        expect_config_errors(cases, sizeof(cases) / sizeof(cases[0]));
}

static void settings_load__not_text__refused_naming_line(void **state) {
        static const struct config_case cases[] = {
                { "[neurond]\ninterval = 1s\x01\n", ":2: a control byte (0x01): not a text file" },
                { "[neurond]\rinterval = 1s\n", ":1: a control byte (0x0d)" },
                { "interval = 1s\x7f\n", ":1: a control byte (0x7f)" },
        };
        expect_config_errors(cases, sizeof(cases) / sizeof(cases[0]));

        char *path = write_config_bytes("[neurond]\ninterval = 1s\0admin = true\n", 37);
        char *nul[] = { "neurond", "--config", path, NULL };
        expect_error(nul, "line 2 holds a NUL byte: not a text file");
        unlink(path);

        char *zero[] = { "neurond", "--config", "/dev/zero", NULL };
        expect_error(zero, "config file /dev/zero: is a character device, not a regular file");
        char *dir[] = { "neurond", "--config", "/tmp", NULL };
        expect_error(dir, "config file /tmp: Is a directory");

        char fifo[] = "/tmp/neurond-test-settings-XXXXXX";
        assert_non_null(mkdtemp(fifo));
        char fifo_path[64];
        snprintf(fifo_path, sizeof(fifo_path), "%s/fifo", fifo);
        assert_int_equal(mkfifo(fifo_path, 0600), 0);
        char *pipe[] = { "neurond", "--config", fifo_path, NULL };
        alarm(10); /* a blocking open would hang: a failure */
        expect_error(pipe, "is a FIFO, not a regular file");
        alarm(0);
        unlink(fifo_path);
        rmdir(fifo);

        /* Larger than the cap: a config file is a page or two. */
        size_t big = 1024 * 1024 + 1;
        char *comments = malloc(big);
        assert_non_null(comments);
        for (size_t i = 0; i < big; i++)
                comments[i] = i % 64 == 63 ? '\n' : '#';
        path = write_config_bytes(comments, big);
        free(comments);
        char *large[] = { "neurond", "--config", path, NULL };
        expect_error(large, "is larger than 1 MiB");
        unlink(path);
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
                                  "max_header_bytes = 4096\n"
                                  "max_query_points = 1200000\n");
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
        assert_int_equal(s.max_query_points, 1200000);
        unlink(path);

        static const struct config_case cases[] = {
                { "tls_cert = /a.pem\n", "tls_cert and tls_key must be given together" },
                { "tls_key = /a.pem\n", "tls_cert and tls_key must be given together" },
                { "healthz_open = maybe\n", ":1: healthz_open: 'maybe'" },
                { "max_connections = 5\n", ":1: max_connections: '5'" },
                { "max_connections = lots\n", ":1: max_connections: 'lots'" },
                { "connection_timeout = 500ms\n", ":1: connection_timeout: '500ms'" },
                { "max_header_bytes = 99999999\n", ":1: max_header_bytes: '99999999'" },
                { "max_query_points = 2000001\n", ":1: max_query_points: '2000001'" },
        };
        expect_config_errors(cases, sizeof(cases) / sizeof(cases[0]));
}

/* Every row is usable: one name per key and flag, a value where it is
 * stored, a default that parses and fits the row's range, a line of help. */
static void settings_table__rows__well_formed(void **state) {
        for (size_t i = 0; i < settings_table_size; i++) {
                const struct settings_item *it = &settings_table[i];
                const char *name = it->key ? it->key : it->flag;

                assert_non_null(name);
                assert_non_null(it->help);
                assert_true(strlen(it->help) > 0);
                for (size_t j = 0; j < i; j++) {
                        const struct settings_item *other = &settings_table[j];
                        if (it->key && other->key && strcmp(it->key, other->key) == 0)
                                fail_msg("key '%s' declared twice", it->key);
                        if (it->flag && other->flag && strcmp(it->flag, other->flag) == 0)
                                fail_msg("flag '--%s' declared twice", it->flag);
                        if (it->short_flag && it->short_flag == other->short_flag)
                                fail_msg("short flag '-%c' declared twice", it->short_flag);
                }
                if (it->kind == SETTINGS_ACTION || it->kind == SETTINGS_CONFIG) {
                        assert_null(it->key);
                        assert_int_equal(it->size, 0);
                        continue;
                }
                assert_true(it->size > 0);
                assert_true(it->offset + it->size <= sizeof(struct settings));
                if (it->key)
                        assert_non_null(it->arg);
                if (it->max)
                        assert_true(it->min <= it->default_value && it->default_value <= it->max);
                if (!it->key || !it->default_text || !*it->default_text)
                        continue;
                /* A text default means what the same text in the config file means. */
                char text[512];
                snprintf(text, sizeof(text), "%s = %s\n", it->key, it->default_text);
                char *path = write_config(text);
                char *argv[] = { "neurond", "--config", path, NULL };
                struct settings s;
                char err[512] = "";
                if (load(argv, &s, err, sizeof(err)) != SETTINGS_RUN)
                        fail_msg("the default of %s does not parse: %s", it->key, err);
                unlink(path);
        }
}

/* One boolean parser for every boolean key and flag. */
static void settings_load__booleans__same_words_everywhere(void **state) {
        char *path = write_config("admin = yes\nhealthz_open = on\n");
        char *argv[] = { "neurond", "--config", path, NULL };
        struct settings s;
        char err[256];

        assert_int_equal(load(argv, &s, err, sizeof(err)), SETTINGS_RUN);
        assert_true(s.admin);
        assert_true(s.healthz_open);
        unlink(path);
        path = write_config("admin = 0\nhealthz_open = no\n");
        char *off[] = { "neurond", "--config", path, NULL };
        assert_int_equal(load(off, &s, err, sizeof(err)), SETTINGS_RUN);
        assert_false(s.admin);
        assert_false(s.healthz_open);
        unlink(path);
        char *allow_root[] = { "neurond", "--allow-root", NULL };
        assert_int_equal(load(allow_root, &s, err, sizeof(err)), SETTINGS_RUN);
        assert_true(s.allow_root);
}

static void settings_load__storage_keys__parsed_with_store_defaults(void **state) {
        char *argv[] = { "neurond", NULL };
        struct settings s;
        char err[256];

        assert_int_equal(load(argv, &s, err, sizeof(err)), SETTINGS_RUN);
        assert_int_equal(s.retention_raw_ms, STORE_DEFAULT_RAW_RETENTION_MS);
        assert_int_equal(s.retention_minute_ms, STORE_DEFAULT_MINUTE_RETENTION_MS);
        assert_int_equal(s.retention_hour_ms, STORE_DEFAULT_HOUR_RETENTION_MS);
        assert_int_equal(s.max_db_bytes, STORE_DEFAULT_SIZE_CAP_BYTES);

        char *path = write_config("retention_raw = 7d\nretention_1m = 1w\nretention_1h = 3650d\nmax_db_size = 0\n");
        char *with[] = { "neurond", "--config", path, NULL };
        assert_int_equal(load(with, &s, err, sizeof(err)), SETTINGS_RUN);
        assert_int_equal(s.retention_raw_ms, 7LL * 86400 * 1000);
        assert_int_equal(s.retention_minute_ms, 7LL * 86400 * 1000);
        assert_int_equal(s.retention_hour_ms, 3650LL * 86400 * 1000);
        assert_int_equal(s.max_db_bytes, 0);
        unlink(path);

        static const struct config_case cases[] = {
                { "retention_raw = 0s\n", ":1: retention_raw: '0s' is not a positive duration" },
                { "retention_1h = forever\n", ":1: retention_1h: 'forever'" },
                { "max_db_size = 1X\n", ":1: max_db_size: '1X' is not a size" },
        };
        expect_config_errors(cases, sizeof(cases) / sizeof(cases[0]));
}

/* A reload takes interval and log_level and names the rest. */
static void settings_reload__reloadable_taken__others_named(void **state) {
        char *path = write_config("interval = 5s\nlog_level = debug\nlisten = 127.0.0.1:1\nretention_raw = 1d\n");
        char *plain[] = { "neurond", NULL };
        char *changed[] = { "neurond", "--config", path, NULL };
        struct settings running, loaded;
        char err[256], waiting[256];

        assert_int_equal(load(plain, &running, err, sizeof(err)), SETTINGS_RUN);
        assert_int_equal(load(changed, &loaded, err, sizeof(err)), SETTINGS_RUN);
        settings_reload(&running, &loaded, waiting, sizeof(waiting));
        assert_int_equal(running.interval_ms, 5000);
        assert_int_equal(running.log_level, LOG_LEVEL_DEBUG);
        assert_string_equal(running.listen.text, "127.0.0.1:9710");
        assert_int_equal(running.retention_raw_ms, STORE_DEFAULT_RAW_RETENTION_MS);
        assert_string_equal(waiting, "listen, retention_raw");
        assert_string_equal(running.config_path, path);

        settings_reload(&running, &running, waiting, sizeof(waiting));
        assert_string_equal(waiting, "");
        unlink(path);
}

static void settings_load__remote_write_sections__parsed_in_order(void **state) {
        char *path = write_config("[neurond]\n"
                                  "interval = 5s\n"
                                  "[remote_write central]\n"
                                  "url = https://prom.example:9090/api/v1/write\n"
                                  "tls_insecure_skip_verify = true\n"
                                  "external_labels = instance=node7, ultraserver=\"us, 1\"\n"
                                  "max_samples_per_send = 100\n"
                                  "sample_age_limit = 1h\n"
                                  "[remote_write vm-2]\n"
                                  "url = http://vm:8428/api/v1/write\n");
        char *argv[] = { "neurond", "--config", path, NULL };
        struct settings s;
        char err[512] = "";

        assert_int_equal(load(argv, &s, err, sizeof(err)), SETTINGS_RUN);
        assert_int_equal(s.interval_ms, 5000);
        assert_int_equal(s.n_remote_write, 2);
        const struct remote_endpoint *a = &s.remote_write[0], *b = &s.remote_write[1];
        assert_string_equal(a->name, "central");
        assert_string_equal(a->url, "https://prom.example:9090/api/v1/write");
        assert_true(a->tls_insecure_skip_verify);
        assert_int_equal(a->external_labels.n, 2);
        assert_string_equal(a->external_labels.label[1].name, "ultraserver");
        assert_string_equal(a->external_labels.label[1].value, "us, 1");
        assert_int_equal(a->max_samples_per_send, 100);
        assert_int_equal(a->sample_age_limit_ms, 3600 * 1000);
        assert_int_equal(a->remote_timeout_ms, REMOTE_DEFAULT_TIMEOUT_MS);
        assert_string_equal(b->name, "vm-2");
        assert_int_equal(b->max_samples_per_send, REMOTE_DEFAULT_MAX_SAMPLES_PER_SEND);
        assert_int_equal(b->min_backoff_ms, REMOTE_DEFAULT_MIN_BACKOFF_MS);
        assert_int_equal(b->sample_age_limit_ms, 0);
        settings_free(&s);
        unlink(path);
}

static void settings_load__bad_remote_write__names_the_line(void **state) {
        static const struct config_case cases[] = {
                { "[remote_write a/b]\nurl = http://x/\n", ":2: [remote_write a/b]: the name must be" },
                { "[remote_write a]\nurl = http://x/\nfrobnicate = 1\n", ":3: unknown setting 'frobnicate'" },
                { "[remote_write a]\nurl = http://x/\nmax_samples_per_send = 0\n", ":3: max_samples_per_send:" },
                { "[remote_write a]\nurl = http://x/\nexternal_labels = __name__=x\n", ":3: external_labels:" },
                { "[remote_write a]\nurl = http://x/\n[remote_write b]\nurl = http://y/\n[remote_write a]\n"
                  "remote_timeout = 1s\n",
                  ":6: [remote_write a] is given twice" },
                { "[remote_write a]\nremote_timeout = 1s\n", "[remote_write a] has no url" },
                { "[remote_writer a]\nurl = http://x/\n", "unknown section [remote_writer a]" },
        };
        expect_config_errors(cases, sizeof(cases) / sizeof(cases[0]));
}

static void settings_reload__remote_write_changed__waits_for_a_restart(void **state) {
        char *path = write_config("[remote_write a]\nurl = http://x/\n");
        char *other = NULL;
        struct settings running, loaded;
        char err[256], waiting[256];
        char *argv[] = { "neurond", "--config", path, NULL };

        assert_int_equal(load(argv, &running, err, sizeof(err)), SETTINGS_RUN);
        assert_int_equal(load(argv, &loaded, err, sizeof(err)), SETTINGS_RUN);
        settings_reload(&running, &loaded, waiting, sizeof(waiting));
        assert_string_equal(waiting, "");
        settings_free(&loaded);
        unlink(path);

        other = write_config("[remote_write a]\nurl = http://x/\nmin_backoff = 1s\n");
        argv[2] = other;
        assert_int_equal(load(argv, &loaded, err, sizeof(err)), SETTINGS_RUN);
        settings_reload(&running, &loaded, waiting, sizeof(waiting));
        assert_string_equal(waiting, "remote_write");
        assert_int_equal(running.remote_write[0].min_backoff_ms, REMOTE_DEFAULT_MIN_BACKOFF_MS);
        settings_free(&loaded);
        settings_free(&running);
        unlink(other);
}

/* --help gives each value's range and default from the table. */
static void settings_print_help__ranges_and_defaults__shown(void **state) {
        char *help = NULL;
        size_t size = 0;
        FILE *out = open_memstream(&help, &size);

        assert_non_null(out);
        settings_print_help(out, "neurond");
        fclose(out);
        assert_non_null(strstr(help, "  -i, --interval DURATION  time between polls, 100ms to 1h (default 1s)\n"));
        assert_non_null(strstr(help, "  * interval = DURATION"));
        assert_non_null(strstr(help, "how long raw samples are kept (default 48h)"));
        assert_non_null(strstr(help, "365d)"));
        assert_non_null(strstr(help, "(default 1G)"));
        assert_non_null(strstr(help, "1s to 1h (default 10s)"));
        free(help);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(settings_load__remote_write_sections__parsed_in_order),
                cmocka_unit_test(settings_load__bad_remote_write__names_the_line),
                cmocka_unit_test(settings_reload__remote_write_changed__waits_for_a_restart),
                cmocka_unit_test(settings_parse_listen__ipv4_and_ipv6__parsed),
                cmocka_unit_test(settings_parse_listen__no_address_or_ipv6_any__every_address),
                cmocka_unit_test(settings_parse_listen__bad_address__einval),
                cmocka_unit_test(settings_load__flags__override_config),
                cmocka_unit_test(settings_load__defaults__documented_values),
                cmocka_unit_test(settings_load__actions__returned),
                cmocka_unit_test(settings_load__bad_input__one_line_error),
                cmocka_unit_test(settings_load__bad_config__names_file_and_line),
                cmocka_unit_test(settings_load__long_lines__whole_or_refused),
                cmocka_unit_test(settings_load__not_text__refused_naming_line),
                cmocka_unit_test(settings_load__http_keys__parsed_and_checked),
                cmocka_unit_test(settings_table__rows__well_formed),
                cmocka_unit_test(settings_load__booleans__same_words_everywhere),
                cmocka_unit_test(settings_load__storage_keys__parsed_with_store_defaults),
                cmocka_unit_test(settings_reload__reloadable_taken__others_named),
                cmocka_unit_test(settings_print_help__ranges_and_defaults__shown),
        };
        return cmocka_run_group_tests_name("settings", tests, NULL, NULL);
}
