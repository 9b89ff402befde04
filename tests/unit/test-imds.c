/* The instance metadata client against a fake service on 127.0.0.1: the
 * IMDSv2 session (a PUT for a token, GETs with it), the fields it reads,
 * a missing Name tag, a service that refuses, one that never answers, and
 * the response parser on its own. */
#include "config.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cmocka.h>

#include "collectors/imds.h"

#define S(lit) (lit), (sizeof(lit) - 1)

enum mode { SERVE, SERVE_NO_TAGS, REFUSE_TOKEN, SILENT };

struct fake_imds {
        int fd;
        struct sockaddr_in addr;
        enum mode mode;
        pthread_t thread;
        unsigned requests, with_token;
};

static const struct {
        const char *path, *value;
} answers[] = {
        { "/latest/meta-data/instance-id", "i-0123456789abcdef0" },
        { "/latest/meta-data/instance-type", "trn2.48xlarge" },
        { "/latest/meta-data/placement/availability-zone", "us-east-2c" },
        { "/latest/meta-data/placement/availability-zone-id", "use2-az3" },
        { "/latest/meta-data/placement/region", "us-east-2" },
        { "/latest/meta-data/ami-id", "ami-0123456789abcdef0" },
        { "/latest/meta-data/mac", "0e:49:61:0f:c3:11" },
        { "/latest/meta-data/network/interfaces/macs/0e:49:61:0f:c3:11/subnet-id", "subnet-0123456789abcdef0" },
        { "/latest/meta-data/tags/instance/Name", "trainer-7" },
};

static void answer(int c, unsigned status, const char *body) {
        char out[512];
        int n = snprintf(out, sizeof(out), "HTTP/1.1 %u X\r\nContent-Type: text/plain\r\nContent-Length: %zu\r\n\r\n%s",
                         status, strlen(body), body);
        assert_int_equal(send(c, out, (size_t) n, MSG_NOSIGNAL), n);
}

/* Serves connections until the test closes the listening socket. */
static void *serve(void *arg) {
        struct fake_imds *f = arg;
        for (;;) {
                int c = accept(f->fd, NULL, NULL);
                if (c < 0)
                        return NULL;
                char req[2048];
                size_t len = 0;
                while (len < sizeof(req) - 1 && !memmem(req, len, "\r\n\r\n", 4)) {
                        ssize_t n = recv(c, req + len, sizeof(req) - 1 - len, 0);
                        if (n <= 0)
                                break;
                        len += (size_t) n;
                }
                req[len] = '\0';
                f->requests++;
                char method[8] = "", path[256] = "";
                sscanf(req, "%7s %255s", method, path);
                if (f->mode == SILENT) {
                        sleep(1);
                } else if (strcmp(method, "PUT") == 0 && strcmp(path, "/latest/api/token") == 0) {
                        if (f->mode == REFUSE_TOKEN || !strstr(req, "X-aws-ec2-metadata-token-ttl-seconds: "))
                                answer(c, 403, "");
                        else
                                answer(c, 200, "AQAEAFake-token==");
                } else if (!strstr(req, "\r\nX-aws-ec2-metadata-token: AQAEAFake-token==\r\n")) {
                        answer(c, 401, "");
                } else {
                        f->with_token++;
                        const char *value = NULL;
                        for (size_t i = 0; i < sizeof(answers) / sizeof(answers[0]); i++)
                                if (strcmp(answers[i].path, path) == 0)
                                        value = answers[i].value;
                        if (f->mode == SERVE_NO_TAGS && strstr(path, "/tags/"))
                                value = NULL;
                        answer(c, value ? 200 : 404, value ? value : "");
                }
                close(c);
        }
}

static void fake_start(struct fake_imds *f, enum mode mode) {
        socklen_t len = sizeof(f->addr);
        *f = (struct fake_imds){ .mode = mode };
        f->fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
        f->addr = (struct sockaddr_in){ .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
        assert_int_equal(bind(f->fd, (struct sockaddr *) &f->addr, sizeof(f->addr)), 0);
        assert_int_equal(listen(f->fd, 8), 0);
        assert_int_equal(getsockname(f->fd, (struct sockaddr *) &f->addr, &len), 0);
        assert_int_equal(pthread_create(&f->thread, NULL, serve, f), 0);
}

static void fake_stop(struct fake_imds *f) {
        shutdown(f->fd, SHUT_RDWR);
        close(f->fd);
        pthread_join(f->thread, NULL);
}

static void imds_fetch__fake_service__every_field(void **state) {
        struct fake_imds f;
        struct instance_identity id;
        fake_start(&f, SERVE);
        assert_int_equal(imds_fetch((struct sockaddr *) &f.addr, sizeof(f.addr), 2000, &id), 0);
        fake_stop(&f);
        assert_string_equal(id.instance_id, "i-0123456789abcdef0");
        assert_string_equal(id.instance_type, "trn2.48xlarge");
        assert_string_equal(id.availability_zone, "us-east-2c");
        assert_string_equal(id.availability_zone_id, "use2-az3");
        assert_string_equal(id.region, "us-east-2");
        assert_string_equal(id.ami_id, "ami-0123456789abcdef0");
        assert_string_equal(id.subnet_id, "subnet-0123456789abcdef0");
        assert_string_equal(id.instance_name, "trainer-7");
        assert_string_equal(id.error, "");
        /* One token, then every GET with it. */
        assert_int_equal(f.requests, 10);
        assert_int_equal(f.with_token, 9);
}

static void imds_fetch__no_tags_in_metadata__name_empty_no_error(void **state) {
        struct fake_imds f;
        struct instance_identity id;
        fake_start(&f, SERVE_NO_TAGS);
        assert_int_equal(imds_fetch((struct sockaddr *) &f.addr, sizeof(f.addr), 2000, &id), 0);
        fake_stop(&f);
        assert_string_equal(id.instance_id, "i-0123456789abcdef0");
        assert_string_equal(id.instance_name, "");
        assert_string_equal(id.error, "");
}

static void imds_fetch__unreachable_or_refusing__error_identity_untouched(void **state) {
        struct fake_imds f;
        struct instance_identity id = { .instance_id = "kept" };
        fake_start(&f, REFUSE_TOKEN);
        assert_int_equal(imds_fetch((struct sockaddr *) &f.addr, sizeof(f.addr), 2000, &id), -EACCES);
        fake_stop(&f);
        /* Nobody listening there any more. */
        assert_int_equal(imds_fetch((struct sockaddr *) &f.addr, sizeof(f.addr), 2000, &id), -ECONNREFUSED);
        /* A service that never answers: the timeout bounds the wait. */
        fake_start(&f, SILENT);
        assert_int_equal(imds_fetch((struct sockaddr *) &f.addr, sizeof(f.addr), 100, &id), -ETIMEDOUT);
        fake_stop(&f);
        assert_string_equal(id.instance_id, "kept");
}

static void imds_parse_response__forms__status_and_body(void **state) {
        unsigned status;
        const char *body;
        size_t len;
        const char ok[] = "HTTP/1.1 200 OK\r\nContent-Length: 5\r\nServer: EC2ws\r\n\r\nhelloEXTRA";
        assert_int_equal(imds_parse_response(S(ok), &status, &body, &len), 0);
        assert_int_equal(status, 200);
        assert_int_equal(len, 5);
        assert_memory_equal(body, "hello", 5);
        /* No Content-Length: the body runs to the end; bare LF lines too. */
        assert_int_equal(imds_parse_response(S("HTTP/1.0 404 Not Found\nX: y\n\nnope"), &status, &body, &len), 0);
        assert_int_equal(status, 404);
        assert_int_equal(len, 4);
        assert_int_equal(
                imds_parse_response(S("HTTP/1.1 200 OK\r\nContent-Length: 9\r\n\r\nshort"), &status, &body, &len),
                -EMSGSIZE);
        assert_int_equal(imds_parse_response(S("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello"),
                                             &status, &body, &len),
                         -EPROTO);
        assert_int_equal(imds_parse_response(S("SSH-2.0-OpenSSH\r\n\r\n"), &status, &body, &len), -EPROTO);
        assert_int_equal(imds_parse_response(S("HTTP/1.1 20x OK\r\n\r\n"), &status, &body, &len), -EPROTO);
        assert_int_equal(imds_parse_response(S("HTTP/1.1 200 OK\r\nContent-Length: x\r\n\r\n"), &status, &body, &len),
                         -EPROTO);
        assert_int_equal(imds_parse_response(S("HTTP/1.1 200 OK\r\nno end of header"), &status, &body, &len), -EPROTO);
}

static void imds_parse_value__text__printable_only(void **state) {
        char out[8];
        assert_int_equal(imds_parse_value(S("us-east\n"), out, sizeof(out)), 0);
        assert_string_equal(out, "us-east");
        assert_int_equal(imds_parse_value(S("us-east-2"), out, sizeof(out)), -ERANGE);
        assert_int_equal(imds_parse_value(S("a\tb"), out, sizeof(out)), -EINVAL);
        assert_int_equal(imds_parse_value(S("a\"b"), out, sizeof(out)), 0);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(imds_fetch__fake_service__every_field),
                cmocka_unit_test(imds_fetch__no_tags_in_metadata__name_empty_no_error),
                cmocka_unit_test(imds_fetch__unreachable_or_refusing__error_identity_untouched),
                cmocka_unit_test(imds_parse_response__forms__status_and_body),
                cmocka_unit_test(imds_parse_value__text__printable_only),
        };
        return cmocka_run_group_tests_name("imds", tests, NULL, NULL);
}
