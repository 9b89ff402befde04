#include "config.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "daemon/settings.h"
#include "web-fixture.h"
#include "web/admin.h"

static bool loopback(const char *text) {
        struct sockaddr_storage ss = { 0 };
        if (strchr(text, ':')) {
                struct sockaddr_in6 *in6 = (struct sockaddr_in6 *) &ss;
                in6->sin6_family = AF_INET6;
                assert_int_equal(inet_pton(AF_INET6, text, &in6->sin6_addr), 1);
        } else {
                struct sockaddr_in *in = (struct sockaddr_in *) &ss;
                in->sin_family = AF_INET;
                assert_int_equal(inet_pton(AF_INET, text, &in->sin_addr), 1);
        }
        return admin_is_loopback((const struct sockaddr *) &ss);
}

static void admin_is_loopback__addresses__only_loopback_passes(void **state) {
        assert_true(loopback("127.0.0.1"));
        assert_true(loopback("127.200.3.4"));
        assert_true(loopback("::1"));
        assert_true(loopback("::ffff:127.0.0.1"));
        assert_false(loopback("10.0.0.1"));
        assert_false(loopback("128.0.0.1"));
        assert_false(loopback("0.0.0.0"));
        assert_false(loopback("::"));
        assert_false(loopback("::ffff:10.1.2.3"));
        assert_false(loopback("2001:db8::1"));
        assert_false(loopback("fe80::1"));
        assert_false(admin_is_loopback(NULL));
}

static struct web_fixture *served(bool admin, bool faults) {
        struct web_fixture *f = calloc(1, sizeof(*f));
        assert_non_null(f);
        web_fixture_init(f);
        f->ctx.admin = admin;
        if (!faults)
                f->ctx.faults.ops = NULL;
        web_fixture_start(f);
        return f;
}

static void served_free(struct web_fixture *f) {
        web_fixture_free(f);
        free(f);
}

static void admin_faults__setting_off__404_like_an_unknown_path(void **state) {
        struct web_fixture *f = served(false, true);

        web_fixture_expect(f, "GET", "/api/v1/admin/faults", NULL, 404, "no such API endpoint: /api/v1/admin/faults");
        web_fixture_expect(f, "POST", "/api/v1/admin/faults?fault=device_down:3", NULL, 404, NULL);
        web_fixture_expect(f, "DELETE", "/api/v1/admin/faults", NULL, 404, NULL);
        web_fixture_expect(f, "POST", "/api/v1/admin/ticks?run=3", NULL, 404, NULL);
        assert_string_equal(f->faults.injected, "");
        assert_int_equal(f->faults.clears, 0);
        served_free(f);
}

static void admin_faults__inject_list_clear__through_the_fault_ops(void **state) {
        struct web_fixture *f = served(true, true);

        web_fixture_expect(f, "GET", "/api/v1/admin/faults", NULL, 200,
                           "{\"status\":\"success\",\"tick\":1,\"data\":{\"faults\":[]}}");
        /* A '+' that arrived as a space is taken for the '+' it was. */
        web_fixture_expect(f, "POST", "/api/v1/admin/faults?fault=device_down:3+30s", NULL, 200,
                           "{\"status\":\"success\",\"tick\":1,\"data\":{\"fault\":\"device_down:3+30s\"}}");
        assert_string_equal(f->faults.injected, "device_down:3+30s");
        web_fixture_expect(f, "GET", "/api/v1/admin/faults", NULL, 200,
                           "{\"fault\":\"device_down:3+30s\",\"state\":\"queued\"}");
        web_fixture_expect(f, "DELETE", "/api/v1/admin/faults", NULL, 200,
                           "{\"status\":\"success\",\"tick\":1,\"data\":{}}");
        assert_int_equal(f->faults.clears, 1);
        served_free(f);
}

static void admin_faults__bad_requests__refused_and_nothing_injected(void **state) {
        struct web_fixture *f = served(true, true);
        char target[300];

        web_fixture_expect(f, "POST", "/api/v1/admin/faults", NULL, 400, "parameter 'fault': missing");
        web_fixture_expect(f, "POST", "/api/v1/admin/faults?fault=melt:1", NULL, 400,
                           "parameter 'fault': unknown fault 'melt:1'");
        snprintf(target, sizeof(target), "/api/v1/admin/faults?fault=device_down:%0200d", 1);
        web_fixture_expect(f, "POST", target, NULL, 400, "parameter 'fault': too long");
        /* A browser's cross-site POST carries Origin. */
        web_fixture_expect(f, "POST", "/api/v1/admin/faults?fault=device_down:1", "Origin: https://evil.example\r\n",
                           403, "refuses requests from web pages");
        web_fixture_expect(f, "DELETE", "/api/v1/admin/faults", "Origin: https://evil.example\r\n", 403, NULL);
        assert_string_equal(f->faults.injected, "");
        assert_int_equal(f->faults.clears, 0);
        /* Reading is harmless with Origin too. */
        web_fixture_expect(f, "GET", "/api/v1/admin/faults", "Origin: https://grafana.example\r\n", 200, NULL);
        served_free(f);
}

static void admin_faults__backend_without_faults__404(void **state) {
        struct web_fixture *f = served(true, false);

        web_fixture_expect(f, "GET", "/api/v1/admin/faults", NULL, 404, "fault injection needs the model backend");
        served_free(f);
}

/* The loop's side of the control, as far as a hold needs it: it reads
 * the state whenever the control wakes it, until told to stop. */
struct poller {
        struct tick_control *tc;
        pthread_t thread;
        bool stop;
};

static void *poll_ticks(void *arg) {
        struct poller *p = arg;
        while (!__atomic_load_n(&p->stop, __ATOMIC_SEQ_CST)) {
                struct pollfd pfd = { .fd = p->tc->fd, .events = POLLIN };
                bool held;
                uint64_t pending;
                if (poll(&pfd, 1, 50) > 0)
                        tick_control_poll(p->tc, &held, &pending);
        }
        return NULL;
}

/* The driven clock's requests, with a loop behind them that only reads
 * the state, until it stops: hold and release reach the control, bad
 * requests are refused with the reason and ask for nothing, and a run or
 * a hold after the loop stopped is 503. */
static void admin_ticks__hold_bad_requests_stopped_loop(void **state) {
        struct web_fixture *f = calloc(1, sizeof(*f));
        struct tick_control tc;
        struct tick_state st;
        struct poller poller = { .tc = &tc };

        assert_non_null(f);
        assert_int_equal(tick_control_init(&tc), 0);
        assert_int_equal(pthread_create(&poller.thread, NULL, poll_ticks, &poller), 0);
        web_fixture_init(f);
        f->ctx.admin = true;
        f->ctx.ticks = &tc;
        web_fixture_start(f);

        web_fixture_expect(f, "GET", "/api/v1/admin/ticks", NULL, 200,
                           "{\"status\":\"success\",\"tick\":1,\"data\":{\"held\":false,\"pending\":0,");
        web_fixture_expect(f, "POST", "/api/v1/admin/ticks?hold=true", NULL, 200, "\"held\":true");
        tick_control_get(&tc, &st);
        assert_true(st.held);
        /* The status says so, as /healthz does, for the dashboard. */
        web_fixture_expect(f, "GET", "/api/v1/status", NULL, 200, ",\"held\":true,\"store\":");
        web_fixture_expect(f, "POST", "/api/v1/admin/ticks?hold=false", NULL, 200, "\"held\":false");
        struct web_answer a;
        web_fixture_ask(f, "GET", "/api/v1/status", NULL, &a);
        assert_int_equal(a.status, 200);
        assert_null(strstr(a.body, "held"));
        web_answer_free(&a);

        web_fixture_expect(f, "POST", "/api/v1/admin/ticks", NULL, 400, "give one of run=N");
        web_fixture_expect(f, "POST", "/api/v1/admin/ticks?run=1&hold=true", NULL, 400, "give one of run=N");
        web_fixture_expect(f, "POST", "/api/v1/admin/ticks?run=0", NULL, 400, "'0' is not a number of ticks");
        web_fixture_expect(f, "POST", "/api/v1/admin/ticks?run=100001", NULL, 400, "from 1 to 100000");
        web_fixture_expect(f, "POST", "/api/v1/admin/ticks?run=1&run=2", NULL, 400, "given more than once");
        web_fixture_expect(f, "POST", "/api/v1/admin/ticks?hold=maybe", NULL, 400, "'maybe' is not true or false");
        web_fixture_expect(f, "POST", "/api/v1/admin/ticks?speed=2", NULL, 400, "not a parameter");
        web_fixture_expect(f, "GET", "/api/v1/admin/ticks?run=1", NULL, 400, "GET takes no parameters");
        web_fixture_expect(f, "POST", "/api/v1/admin/ticks?run=1", "Origin: https://evil.example\r\n", 403,
                           "refuses requests from web pages");
        web_fixture_expect(f, "DELETE", "/api/v1/admin/ticks", NULL, 405, NULL);
        tick_control_get(&tc, &st);
        assert_false(st.held);
        assert_int_equal(st.pending, 0);

        __atomic_store_n(&poller.stop, true, __ATOMIC_SEQ_CST);
        assert_int_equal(pthread_join(poller.thread, NULL), 0);
        tick_control_stop(&tc);
        web_fixture_expect(f, "POST", "/api/v1/admin/ticks?run=3", NULL, 503, "the daemon is stopping");
        web_fixture_expect(f, "POST", "/api/v1/admin/ticks?hold=true", NULL, 503, "did not take the hold");
        served_free(f);
        tick_control_destroy(&tc);
}

/* The switch: off by default, on with the flag or `admin = true`. */
static void settings_load__admin__off_unless_enabled(void **state) {
        struct settings s;
        char err[256];
        char *plain[] = { "neurond", NULL };
        char *flag[] = { "neurond", "--enable-admin", NULL };

        assert_int_equal(settings_load(1, plain, &s, err, sizeof(err)), SETTINGS_RUN);
        assert_false(s.admin);
        assert_int_equal(settings_load(2, flag, &s, err, sizeof(err)), SETTINGS_RUN);
        assert_true(s.admin);

        char path[] = "/tmp/neurond-test-admin-XXXXXX";
        int fd = mkstemp(path);
        assert_true(fd >= 0);
        FILE *f = fdopen(fd, "w");
        fputs("[neurond]\nadmin = maybe\n", f);
        fclose(f);
        char *bad[] = { "neurond", "--config", path, NULL };
        assert_int_equal(settings_load(3, bad, &s, err, sizeof(err)), -EINVAL);
        assert_non_null(strstr(err, "admin: 'maybe' is not true or false"));
        unlink(path);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(admin_is_loopback__addresses__only_loopback_passes),
                cmocka_unit_test(admin_faults__setting_off__404_like_an_unknown_path),
                cmocka_unit_test(admin_faults__inject_list_clear__through_the_fault_ops),
                cmocka_unit_test(admin_faults__bad_requests__refused_and_nothing_injected),
                cmocka_unit_test(admin_faults__backend_without_faults__404),
                cmocka_unit_test(admin_ticks__hold_bad_requests_stopped_loop),
                cmocka_unit_test(settings_load__admin__off_unless_enabled),
        };
        return cmocka_run_group_tests_name("admin", tests, NULL, NULL);
}
