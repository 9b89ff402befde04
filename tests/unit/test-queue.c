/* The query queue through the real server: range queries run on a worker
 * thread, so scrapes are answered while one blocks; beyond max_queries and
 * the waiting room a query gets 503 with Retry-After; a query whose
 * client leaves is cancelled; stopping the server does not wait for a
 * blocked query. The store is a fake whose query blocks until the test
 * opens its gate, or until it is cancelled. */
#include "config.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "web-fixture.h"
#include "web/http.h"

struct gate {
        pthread_mutex_t lock;
        pthread_cond_t changed;
        bool open;
        unsigned entered;   /* queries that reached the store */
        unsigned cancelled; /* queries that gave up because they were told to */
};

static struct gate gate = { PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, false, 0, 0 };

static int blocking_query_range(void *impl, const struct history_query *q, struct history_result **ret) {
        pthread_mutex_lock(&gate.lock);
        gate.entered++;
        pthread_cond_broadcast(&gate.changed);
        while (!gate.open) {
                if (q->cancelled && q->cancelled(q->cancel_cls)) {
                        gate.cancelled++;
                        pthread_cond_broadcast(&gate.changed);
                        pthread_mutex_unlock(&gate.lock);
                        return -ECANCELED;
                }
                struct timespec until;
                clock_gettime(CLOCK_REALTIME, &until);
                until.tv_nsec += 10 * 1000000L;
                until.tv_sec += until.tv_nsec / 1000000000L;
                until.tv_nsec %= 1000000000L;
                pthread_cond_timedwait(&gate.changed, &gate.lock, &until);
        }
        pthread_mutex_unlock(&gate.lock);
        *ret = calloc(1, sizeof(**ret));
        return *ret ? 0 : -ENOMEM;
}

static void blocking_get_stats(void *impl, struct history_stats *ret) {
        *ret = (struct history_stats){ 0 };
}

static const struct history_ops blocking_history_ops = {
        .query_range = blocking_query_range,
        .get_stats = blocking_get_stats,
};

/* Waits (at most 10 s) until *counter reaches n. */
static void wait_for(const unsigned *counter, unsigned n) {
        struct timespec until;
        clock_gettime(CLOCK_REALTIME, &until);
        until.tv_sec += 10;
        pthread_mutex_lock(&gate.lock);
        while (*counter < n)
                if (pthread_cond_timedwait(&gate.changed, &gate.lock, &until) == ETIMEDOUT)
                        break;
        unsigned got = *counter;
        pthread_mutex_unlock(&gate.lock);
        if (got < n)
                fail_msg("waited 10 s for %u, got %u", n, got);
}

static void open_gate(void) {
        pthread_mutex_lock(&gate.lock);
        gate.open = true;
        pthread_cond_broadcast(&gate.changed);
        pthread_mutex_unlock(&gate.lock);
}

static int setup(void **state) {
        static struct web_fixture f;
        gate.open = false;
        gate.entered = gate.cancelled = 0;
        web_fixture_init(&f);
        f.ctx.history = (struct history){ &blocking_history_ops, NULL };
        f.ctx.max_queries = 1;
        web_fixture_start(&f);
        *state = &f;
        return 0;
}

static int teardown(void **state) {
        open_gate();
        web_fixture_free(*state);
        return 0;
}

/* Sends a range query on a new connection and leaves it unread. */
static int ask_query(struct web_fixture *f) {
        struct sockaddr_in addr = { .sin_family = AF_INET,
                                    .sin_port = htons(f->port),
                                    .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
        static const char request[] = "GET /api/v1/query_range?metric=neuron_device_up HTTP/1.1\r\n"
                                      "Host: 127.0.0.1\r\nConnection: close\r\n\r\n";
        struct timeval timeout = { .tv_sec = 10 };
        int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

        assert_true(fd >= 0);
        assert_int_equal(setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, sizeof(timeout)), 0);
        assert_int_equal(connect(fd, (struct sockaddr *) &addr, sizeof(addr)), 0);
        assert_int_equal(send(fd, request, sizeof(request) - 1, MSG_NOSIGNAL), (ssize_t) sizeof(request) - 1);
        return fd;
}

static size_t count_readable(const struct pollfd *fds, size_t n) {
        size_t readable = 0;
        for (size_t i = 0; i < n; i++)
                readable += (fds[i].revents & POLLIN) != 0;
        return readable;
}

/* answer_status() of a connection the server closed (or reset) without
 * sending a byte, as opposed to 0 for no answer within the receive timeout. */
#define ANSWER_CLOSED 1u

/* The status of the answer on fd, read to its end; the socket is closed. */
static unsigned answer_status(int fd, char *head, size_t size) {
        size_t n = 0;
        ssize_t r = -1;
        while (n < size - 1 && (r = recv(fd, head + n, size - 1 - n, 0)) > 0)
                n += (size_t) r;
        bool closed = n == 0 && (r == 0 || errno == ECONNRESET);
        head[n] = '\0';
        close(fd);
        if (closed)
                return ANSWER_CLOSED;
        unsigned status = 0;
        return sscanf(head, "HTTP/1.1 %3u ", &status) == 1 ? status : 0;
}

static void queue__query_blocked__scrapes_and_health_answered(void **state) {
        struct web_fixture *f = *state;
        char head[4096];

        int fd = ask_query(f);
        wait_for(&gate.entered, 1);
        web_fixture_expect(f, "GET", "/metrics", NULL, 200, "neuron_device_up");
        web_fixture_expect(f, "GET", "/healthz", NULL, 200, "\"status\":\"ok\"");
        web_fixture_expect(f, "GET", "/api/v1/latest", NULL, 200, "\"resultType\":\"vector\"");
        open_gate();
        assert_int_equal(answer_status(fd, head, sizeof(head)), 200);
        assert_non_null(strstr(head, "\"resultType\":\"matrix\""));
}

static void queue__full__503_with_retry_after(void **state) {
        struct web_fixture *f = *state;
        enum { EXTRA = 8, ASKED = HTTP_QUERIES_WAITING + EXTRA };
        struct pollfd asked[ASKED];
        char head[4096];

        int running = ask_query(f);
        wait_for(&gate.entered, 1);
        for (size_t i = 0; i < ASKED; i++)
                asked[i] = (struct pollfd){ .fd = ask_query(f), .events = POLLIN };
        /* The waiting room holds HTTP_QUERIES_WAITING; the rest are refused
         * at once, whichever order the server read them in. */
        const struct timespec tenth = { .tv_nsec = 100 * 1000000L };
        size_t answered = 0;
        for (int tries = 0; tries < 100 && answered < EXTRA; tries++) {
                nanosleep(&tenth, NULL);
                assert_true(poll(asked, ASKED, 0) >= 0);
                answered = count_readable(asked, ASKED);
        }
        assert_int_equal(answered, EXTRA);
        for (size_t i = 0; i < ASKED; i++) {
                if (!(asked[i].revents & POLLIN))
                        continue;
                assert_int_equal(answer_status(asked[i].fd, head, sizeof(head)), 503);
                assert_non_null(strstr(head, "Retry-After: 1\r\n"));
                assert_non_null(strstr(head, "too many queries at once; retry later"));
                asked[i].fd = -1;
        }
        open_gate();
        assert_int_equal(answer_status(running, head, sizeof(head)), 200);
        for (size_t i = 0; i < ASKED; i++)
                if (asked[i].fd >= 0)
                        assert_int_equal(answer_status(asked[i].fd, head, sizeof(head)), 200);
}

static void queue__client_gone__query_cancelled(void **state) {
        struct web_fixture *f = *state;

        int fd = ask_query(f);
        wait_for(&gate.entered, 1);
        close(fd);
        wait_for(&gate.cancelled, 1);
        /* The place is free again: the next query runs. */
        char head[4096];
        fd = ask_query(f);
        wait_for(&gate.entered, 2);
        open_gate();
        assert_int_equal(answer_status(fd, head, sizeof(head)), 200);
}

static void queue__stopped_while_blocked__503_at_once(void **state) {
        struct web_fixture *f = *state;
        char head[4096];

        int running = ask_query(f);
        wait_for(&gate.entered, 1);
        int waiting = ask_query(f);
        /* Stopping tells the running query to give up and answers the
         * waiting one; the gate stays shut. */
        http_stop(f->srv);
        f->srv = NULL;
        assert_int_equal(gate.cancelled, 1);
        /* Queued, or (if the server had not read it yet) refused by the
         * stopping queue: 503 either way. Or, on a loaded machine, not yet
         * accepted or read when the server stopped: then the connection is
         * closed, at once too (a wait would end in the 10 s receive
         * timeout, which answer_status() tells apart). */
        unsigned status = answer_status(waiting, head, sizeof(head));
        if (status != ANSWER_CLOSED) {
                assert_int_equal(status, 503);
                assert_true(strstr(head, "neurond is stopping") || strstr(head, "too many queries at once"));
        }
        close(running);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test_setup_teardown(queue__query_blocked__scrapes_and_health_answered, setup, teardown),
                cmocka_unit_test_setup_teardown(queue__full__503_with_retry_after, setup, teardown),
                cmocka_unit_test_setup_teardown(queue__client_gone__query_cancelled, setup, teardown),
                cmocka_unit_test_setup_teardown(queue__stopped_while_blocked__503_at_once, setup, teardown),
        };
        return cmocka_run_group_tests_name("queue", tests, NULL, NULL);
}
