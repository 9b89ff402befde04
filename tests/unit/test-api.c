#include "config.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include <cmocka.h>

#include "web/api.h"

static int64_t monotonic_ms(void) {
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (int64_t) ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static unsigned healthz_status(int64_t tick_age_ms, bool have_tick, char *body, size_t size) {
        struct snapshot_slot slot;
        struct web_context ctx = { .latest = &slot, .interval_ms = 1000, .time_scale = 1 };
        struct web_reply reply = { 0 };

        snapshot_slot_init(&slot);
        if (have_tick) {
                struct snapshot *s = snapshot_new(0);
                s->tick = 7;
                s->monotonic_ms = monotonic_ms() - tick_age_ms;
                snapshot_slot_publish(&slot, s);
        }
        api_healthz(&ctx, &(struct web_request){ .method = "GET", .path = "/healthz" }, &reply);
        snprintf(body, size, "%.*s", (int) reply.body.len, reply.body.data);
        buf_free(&reply.body);
        snapshot_slot_destroy(&slot);
        return reply.status;
}

static void healthz__fresh_tick__200_with_age(void **state) {
        char body[256];
        assert_int_equal(healthz_status(100, true, body, sizeof(body)), 200);
        assert_non_null(strstr(body, "\"status\":\"ok\""));
        assert_non_null(strstr(body, "\"last_tick_age_seconds\":0.1"));
}

static void healthz__stalled_loop__503(void **state) {
        char body[256];
        /* Three 1 s intervals plus 2 s of grace have passed. */
        assert_int_equal(healthz_status(5500, true, body, sizeof(body)), 503);
        assert_non_null(strstr(body, "\"status\":\"stalled\""));
}

static void healthz__no_tick_yet__503(void **state) {
        char body[256];
        assert_int_equal(healthz_status(0, false, body, sizeof(body)), 503);
        assert_non_null(strstr(body, "\"status\":\"starting\""));
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(healthz__fresh_tick__200_with_age),
                cmocka_unit_test(healthz__stalled_loop__503),
                cmocka_unit_test(healthz__no_tick_yet__503),
        };
        return cmocka_run_group_tests_name("api", tests, NULL, NULL);
}
