/* The connection table through the real server: a request head that
 * trickles in is cut off at header_timeout, and idle connections beyond the
 * soft limit make way for a new client, the longest-waiting first. */
#include "config.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "web-fixture.h"

static int connect_to(const struct web_fixture *f) {
        struct sockaddr_in addr = { .sin_family = AF_INET,
                                    .sin_port = htons(f->port),
                                    .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
        int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
        assert_true(fd >= 0);
        assert_int_equal(connect(fd, (struct sockaddr *) &addr, sizeof(addr)), 0);
        return fd;
}

/* Whether the server has closed fd: the end of the stream, or a reset. */
static bool closed_by_server(int fd) {
        char c;
        ssize_t n = recv(fd, &c, 1, MSG_PEEK | MSG_DONTWAIT);
        return n == 0 || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK);
}

static double now_s(void) {
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (double) ts.tv_sec + (double) ts.tv_nsec / 1e9;
}

static void conns__head_trickles__closed_at_header_timeout(void **state) {
        struct web_fixture f;
        const struct timespec fifth = { .tv_nsec = 200 * 1000000L };

        web_fixture_init(&f);
        f.ctx.header_timeout_s = 1;
        web_fixture_start(&f);
        int fd = connect_to(&f);
        assert_int_equal(send(fd, "GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: ", 48, MSG_NOSIGNAL), 48);
        double start = now_s();
        /* A byte every 200 ms: libmicrohttpd's idle timeout would never end it. */
        while (!closed_by_server(fd) && now_s() - start < 10) {
                send(fd, "a", 1, MSG_NOSIGNAL);
                nanosleep(&fifth, NULL);
        }
        double took = now_s() - start;
        assert_true(closed_by_server(fd));
        assert_true(took >= 0.9);
        close(fd);
        /* A head that arrives in time is answered. */
        web_fixture_expect(&f, "GET", "/healthz", NULL, 200, "\"status\":\"ok\"");
        web_fixture_free(&f);
}

static void conns__idle_crowd__new_client_answered_oldest_shed(void **state) {
        struct web_fixture f;
        int idle[20];

        web_fixture_init(&f);
        f.ctx.max_connections = 16; /* soft limit: 16 less a headroom of 4 */
        /* Past the head deadline, or libmicrohttpd's idle timeout, every
         * idle connection is closed; under a sanitizer on a loaded machine
         * this test can take tens of seconds. */
        f.ctx.header_timeout_s = 300;
        f.ctx.connection_timeout_s = 300;
        web_fixture_start(&f);
        for (size_t i = 0; i < 20; i++)
                idle[i] = connect_to(&f);
        /* Accepted, then shed beyond the soft limit: the first ones. */
        const struct timespec tenth = { .tv_nsec = 100 * 1000000L };
        for (int tries = 0; tries < 1200 && !closed_by_server(idle[7]); tries++)
                nanosleep(&tenth, NULL);
        web_fixture_expect(&f, "GET", "/metrics", NULL, 200, "neuron_device_up");
        size_t open = 0;
        for (size_t i = 0; i < 20; i++) {
                open += !closed_by_server(idle[i]);
                if (i < 8)
                        assert_true(closed_by_server(idle[i]));
        }
        assert_true(open <= 12);
        assert_false(closed_by_server(idle[19]));
        for (size_t i = 0; i < 20; i++)
                close(idle[i]);
        web_fixture_free(&f);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(conns__head_trickles__closed_at_header_timeout),
                cmocka_unit_test(conns__idle_crowd__new_client_answered_oldest_shed),
        };
        return cmocka_run_group_tests_name("conns", tests, NULL, NULL);
}
