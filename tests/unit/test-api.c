#include "config.h"

#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cmocka.h>

#include "web-fixture.h"
#include "web/api.h"

static int64_t monotonic_ms(void) {
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (int64_t) ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* /healthz called directly, with the latest tick tick_age_ms old. */
static unsigned healthz_status(int64_t tick_age_ms, bool have_tick, char *body, size_t size) {
        struct snapshot_slot slot;
        struct web_context ctx = { .latest = &slot, .interval_ms = 1000, .time_scale = 1 };
        struct web_request req = { .method = "GET", .path = "/healthz" };
        struct web_reply reply = { 0 };

        snapshot_slot_init(&slot);
        if (have_tick) {
                struct snapshot *s = snapshot_new(0);
                s->tick = 7;
                s->monotonic_ms = monotonic_ms() - tick_age_ms;
                snapshot_slot_publish(&slot, s);
        }
        api_healthz(&ctx, &req, &reply);
        snprintf(body, size, "%.*s", (int) reply.body.len, reply.body.data);
        buf_free(&reply.body);
        snapshot_slot_destroy(&slot);
        return reply.status;
}

static void healthz__fresh_tick__200_with_age(void **state) {
        char body[256];
        assert_int_equal(healthz_status(100, true, body, sizeof(body)), 200);
        assert_non_null(strstr(body, "\"status\":\"ok\""));
        /* At least the 100 ms it was made old; more by however long this
         * process was descheduled (valgrind on a busy machine). */
        const char *age = strstr(body, "\"last_tick_age_seconds\":");
        assert_non_null(age);
        double seconds = strtod(age + strlen("\"last_tick_age_seconds\":"), NULL);
        assert_true(seconds >= 0.1 && seconds < 10);
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

static int fixture_setup(void **state) {
        struct web_fixture *f = calloc(1, sizeof(*f));
        assert_non_null(f);
        web_fixture_init(f);
        web_fixture_start(f);
        *state = f;
        return 0;
}

static int fixture_teardown(void **state) {
        web_fixture_free(*state);
        free(*state);
        return 0;
}

/* GETs target and checks the status and that the body holds each of the
 * NULL-terminated parts. */
static void expect(struct web_fixture *f, const char *target, unsigned status, ...) {
        struct web_answer a;
        va_list ap;

        web_fixture_ask(f, "GET", target, NULL, &a);
        if (a.status != status)
                fail_msg("GET %s: expected %u, got:\n%s", target, status, a.text);
        va_start(ap, status);
        for (const char *part = va_arg(ap, const char *); part; part = va_arg(ap, const char *))
                if (!strstr(a.body, part))
                        fail_msg("GET %s: expected '%s' in:\n%s", target, part, a.body);
        va_end(ap);
        web_answer_free(&a);
}

/* How many times part occurs in the body of GET target. */
static size_t count_in(struct web_fixture *f, const char *target, const char *part) {
        struct web_answer a;
        size_t n = 0;

        web_fixture_ask(f, "GET", target, NULL, &a);
        assert_int_equal(a.status, 200);
        for (const char *p = strstr(a.body, part); p; p = strstr(p + 1, part))
                n++;
        web_answer_free(&a);
        return n;
}

static void healthz__store_degraded__200_naming_the_cause(void **state) {
        struct web_fixture *f = *state;

        f->history.stats.degraded = true;
        f->history.stats.last_error = -ENOSPC;
        expect(f, "/healthz", 200, "\"status\":\"degraded\"", "\"tick\":1",
               "\"error\":\"storing ticks fails: No space left on device; retrying\"", NULL);
        expect(f, "/healthz?verbose=1", 400, "parameter 'verbose': this endpoint takes no parameters", NULL);
}

static void devices__inventory__every_device_with_its_metric_families(void **state) {
        struct web_fixture *f = *state;

        expect(f, "/api/v1/devices", 200,
               "{\"status\":\"success\",\"tick\":1,\"data\":{\"instance_type\":\"trn1.2xlarge\"",
               "\"backend\":\"model:trn1.2xlarge\"", "\"lnc\":1,",
               "\"instance\":{\"instance_id\":\"i-0123456789abcdef0\",\"instance_type\":\"trn1.2xlarge\","
               "\"instance_name\":\"\",",
               "\"region\":\"us-east-2\",",
               "{\"index\":0,\"name\":\"Trainium1\",\"arch\":\"NDv2\",\"core_arch\":\"NCv2\",\"cores\":2,"
               "\"physical_cores\":2,\"first_core\":0,\"memory_total_bytes\":34359738368,\"peers\":[1],"
               "\"serial_number\":\"S0\","
               "\"metrics\":[\"neuroncore_utilization_ratio\",\"neuron_device_up\",\"neuron_device_dma_bytes_total\"],",
               /* Who uses which core: the runtime "serve" holds cores 0 and 1. */
               "\"neuroncores\":[{\"neuroncore\":0,\"physical_neuroncores\":[0],\"runtime_tag\":\"serve\",\"pid\":4242},"
               "{\"neuroncore\":1,\"physical_neuroncores\":[1],\"runtime_tag\":\"serve\",\"pid\":4242}],",
               /* No result yet: unknown, never healthy. */
               "\"health\":{\"state\":\"unknown\",\"since\":null,\"reasons\":[],\"action\":null,\"neuroncores\":[]}}",
               "{\"index\":1,",
               "\"first_core\":2,\"memory_total_bytes\":null,\"peers\":[0],\"serial_number\":\"\","
               "\"metrics\":[\"neuroncore_utilization_ratio\",\"neuron_device_up\"],",
               "{\"neuroncore\":2,\"physical_neuroncores\":[2],\"runtime_tag\":null,\"pid\":null}", NULL);
        expect(f, "/api/v1/devices?x=1", 400, "parameter 'x': this endpoint takes no parameters", NULL);
}

/* Publishes a tick whose result finds device 1 gone. */
static void publish_health(struct web_fixture *f) {
        struct snapshot *old = snapshot_slot_get(&f->latest);
        struct snapshot *snap = snapshot_new(old->n);
        assert_non_null(snap);
        memcpy(snap->values, old->values, old->n * sizeof(double));
        memcpy(snap->valid, old->valid, old->n);
        snap->set = series_set_ref(old->set);
        snap->tick = 2;
        snap->timestamp_ms = FIXTURE_TICK_MS + 1000;
        snapshot_unref(old);
        snap->values[1] = 0; /* device 1's up */
        struct snapshot *prev = snapshot_slot_get(&f->latest);
        struct health_result *first = health_evaluate(f->inv.devices, f->inv.n_devices, NULL, prev, NULL);
        snap->health = health_evaluate(f->inv.devices, f->inv.n_devices, prev, snap, first);
        assert_non_null(snap->health);
        health_result_unref(first);
        snapshot_unref(prev);
        snapshot_slot_publish(&f->latest, snap);
}

static void health__host__worst_state_counts_and_reasons(void **state) {
        struct web_fixture *f = *state;

        expect(f, "/api/v1/health", 200,
               "\"state\":\"unknown\",\"devices\":2,\"counts\":{\"healthy\":0,\"unknown\":2,\"degraded\":0,"
               "\"unhealthy\":0},\"not_healthy\":[],\"events\":[]",
               NULL);
        publish_health(f);
        expect(f, "/api/v1/health", 200, "{\"status\":\"success\",\"tick\":2,", "\"state\":\"unhealthy\"",
               "{\"device\":1,\"state\":\"unhealthy\",",
               "{\"kind\":\"device_down\",\"state\":\"unhealthy\",\"reason\":\"device unreadable or gone\","
               "\"core\":null,\"value\":0,",
               "\"kind\":\"state\",\"phase\":\"change\",\"severity\":\"critical\",\"state\":\"unhealthy\"", NULL);
        expect(f, "/api/v1/devices/1", 200, "\"health\":{\"state\":\"unhealthy\",", "\"action\":\"reset: ", NULL);
        expect(f, "/api/v1/health?x=1", 400, "this endpoint takes no parameters", NULL);
}

static void events__parameters__passed_to_the_store(void **state) {
        struct web_fixture *f = *state;

        expect(f, "/api/v1/events?start=-1h&device=4&kind=link_down&severity=warning&limit=5", 200,
               "{\"status\":\"success\",\"tick\":1,\"data\":{\"start\":", "\"events\":[{\"time\":",
               "\"device\":4,\"core\":null,\"kind\":\"link_down\",\"phase\":\"begin\","
               "\"severity\":\"warning\",\"state\":\"degraded\",\"reason\":\"link (peer 5)\",\"value\":0}]}}",
               NULL);
        const struct history_events_query *q = &f->history.last_events;
        assert_int_equal(q->end_ms, FIXTURE_TICK_MS);
        assert_int_equal(q->start_ms, FIXTURE_TICK_MS - 3600 * 1000);
        assert_int_equal(q->device, 4);
        assert_int_equal(q->kind, HEALTH_RULE_LINK_DOWN);
        assert_int_equal(q->severity, HEALTH_WARNING);
        assert_int_equal(q->limit, 5);
        expect(f, "/api/v1/events?start=2027-01-01T00:00:00Z&end=1798761600.5", 200, NULL);
        assert_int_equal(f->history.last_events.start_ms, 1798761600000LL);
        assert_int_equal(f->history.last_events.end_ms, 1798761600500LL);
        expect(f, "/api/v1/events?kind=nope", 400, "parameter 'kind'", NULL);
        expect(f, "/api/v1/events?severity=bad", 400, "parameter 'severity'", NULL);
        expect(f, "/api/v1/events?start=-5", 400, "parameter 'start'", NULL);
        expect(f, "/api/v1/events?start=now&end=-1h", 400, "after end", NULL);
        expect(f, "/api/v1/events?device=1&device=2", 400, "given more than once", NULL);
        expect(f, "/api/v1/events?limit=0", 400, "parameter 'limit'", NULL);
        expect(f, "/api/v1/events?x=1", 400, "parameter 'x'", NULL);
        f->history.error = -EAGAIN;
        expect(f, "/api/v1/events", 503, "storage is unavailable", NULL);
}

static void device__index__that_device_and_its_valid_values(void **state) {
        struct web_fixture *f = *state;

        expect(f, "/api/v1/devices/1", 200, "\"device\":{\"index\":1,", "\"timestamp\":1700000000.250",
               "{\"metric\":{\"__name__\":\"neuron_device_up\",\"neuron_device\":\"1\"},\"value\":\"1\"}",
               "{\"metric\":{\"__name__\":\"neuroncore_utilization_ratio\",\"neuron_device\":\"1\",\"neuroncore\":\"2\"},"
               "\"value\":\"0.5\"}",
               NULL);
        assert_int_equal(count_in(f, "/api/v1/devices/1", "\"neuron_device\":\"0\""), 0);
        /* The DMA counter was not read this tick: absent. */
        assert_int_equal(count_in(f, "/api/v1/devices/0", "{\"metric\":"), 2);
}

static void device__bad_index__400_or_404(void **state) {
        struct web_fixture *f = *state;

        expect(f, "/api/v1/devices/01", 400, "device id '01' is not a device index", NULL);
        expect(f, "/api/v1/devices/x", 400, "device id 'x' is not a device index", NULL);
        expect(f, "/api/v1/devices/123456", 400, NULL);
        expect(f, "/api/v1/devices/-1", 400, NULL);
        expect(f, "/api/v1/devices/9", 404, "no device 9 (this host has 2)", NULL);
        expect(f, "/api/v1/devices/1?x=1", 400, "this endpoint takes no parameters", NULL);
}

static void latest__filters__matching_valid_series(void **state) {
        struct web_fixture *f = *state;

        expect(f, "/api/v1/latest", 200,
               "{\"status\":\"success\",\"tick\":1,\"data\":{\"resultType\":\"vector\","
               "\"timestamp\":1700000000.250,\"result\":[",
               NULL);
        assert_int_equal(count_in(f, "/api/v1/latest", "{\"metric\":"), 4);
        expect(f, "/api/v1/latest?metric=neuroncore_utilization_ratio&neuron_device=1", 200,
               "\"result\":[{\"metric\":{\"__name__\":\"neuroncore_utilization_ratio\",\"neuron_device\":\"1\","
               "\"neuroncore\":\"2\"},\"value\":[1700000000.250,\"0.5\"]}]}}",
               NULL);
        assert_int_equal(count_in(f, "/api/v1/latest?neuron_device=0", "{\"metric\":"), 2);
        assert_int_equal(count_in(f, "/api/v1/latest?metric=neuron_device_dma_bytes_total", "{\"metric\":"), 0);
}

static void latest__bad_parameters__400_naming_them(void **state) {
        struct web_fixture *f = *state;

        expect(f, "/api/v1/latest?metric=nope", 400, "parameter 'metric': unknown metric 'nope'", NULL);
        expect(f, "/api/v1/latest?metric=neuron_device_up&neuroncore=1", 400,
               "parameter 'neuroncore': not a label of neuron_device_up", NULL);
        expect(f, "/api/v1/latest?bogus=1", 400, "parameter 'bogus': not a parameter nor a label", NULL);
        expect(f, "/api/v1/latest?neuron_device=1&neuron_device=2", 400,
               "parameter 'neuron_device' given more than once", NULL);
}

static void query_range__parameters__one_history_query(void **state) {
        struct web_fixture *f = *state;
        const struct history_query *q = &f->history.last_query;

        expect(f,
               "/api/v1/query_range?metric=neuron_device_dma_bytes_total&neuron_device=0&start=1700000000"
               "&end=2023-11-14T22:23:20Z&step=1m&agg=max&rate=1",
               200, "{\"status\":\"success\",\"tick\":1,\"data\":{\"resultType\":\"matrix\",\"result\":[",
               /* The fake store's series has no direction: an empty label is no label. */
               "{\"metric\":{\"__name__\":\"neuron_device_dma_bytes_total\",\"neuron_device\":\"0\"},"
               "\"values\":[[1700000000.000,\"1.5\"],[1700000060.000,\"2.5\"]]}",
               NULL);
        assert_int_equal(q->metric, METRIC_DEVICE_DMA_BYTES);
        assert_int_equal(q->start_ms, 1700000000000);
        assert_int_equal(q->end_ms, 1700000600000);
        assert_int_equal(q->step_ms, 60000);
        assert_int_equal(q->agg, HISTORY_AGG_MAX);
        assert_true(q->rate);
        assert_int_equal(q->n_matchers, 1);
        assert_string_equal(q->matchers[0].name, "neuron_device");
        assert_string_equal(q->matchers[0].value, "0");
        /* Defaults: the last hour, average, no rate. */
        expect(f, "/api/v1/query_range?metric=neuron_device_up", 200, NULL);
        assert_int_equal(q->end_ms - q->start_ms, 3600 * 1000);
        assert_int_equal(q->agg, HISTORY_AGG_AVG);
        assert_false(q->rate);
}

static void query_range__bad_parameters__400_naming_them(void **state) {
        struct web_fixture *f = *state;

        expect(f, "/api/v1/query_range", 400, "parameter 'metric' is required", NULL);
        expect(f, "/api/v1/query_range?metric=neuron_device_up&rate=1", 400,
               "parameter 'rate': neuron_device_up is not a counter", NULL);
        expect(f, "/api/v1/query_range?metric=neuron_device_dma_bytes_total&rate=yes", 400,
               "parameter 'rate': 'yes' is not 0 or 1", NULL);
        expect(f, "/api/v1/query_range?metric=neuron_device_up&step=fast", 400,
               "parameter 'step': 'fast' is not a positive duration or number of seconds", NULL);
        expect(f, "/api/v1/query_range?metric=neuron_device_up&start=10&end=5", 400,
               "parameter 'start': start is after end", NULL);
}

static void query_range__store_cannot_answer__503_or_422(void **state) {
        struct web_fixture *f = *state;

        f->history.error = -EAGAIN;
        expect(f, "/api/v1/query_range?metric=neuron_device_up", 503,
               "\"errorType\":\"unavailable\",\"error\":\"storage is unavailable", NULL);
        f->history.error = -EIO;
        expect(f, "/api/v1/query_range?metric=neuron_device_up", 503, "reading the store failed: Input/output error",
               NULL);
        f->history.error = -E2BIG;
        expect(f, "/api/v1/query_range?metric=neuron_device_up", 422,
               "\"errorType\":\"execution\",\"error\":\"the query would return more than 2000000 points in all", NULL);
}

/* The cost is counted before the store is asked: the running backend's
 * series that match, times the points per series. */
static void query_range__over_the_limits__422_naming_them(void **state) {
        struct web_fixture *f = *state;
        const char *two_series = "/api/v1/query_range?metric=neuroncore_utilization_ratio&start=0&end=999&step=1";

        f->history.last_query.metric = METRIC__COUNT; /* to see that the store is not asked */
        f->ctx.max_query_series = 1;
        expect(f, two_series, 422, "\"errorType\":\"execution\"",
               "the query matches 2 series, more than max_query_series (1); add label filters", NULL);
        f->ctx.max_query_series = 0;
        f->ctx.max_query_points = 1999; /* 2 series x 1000 points is one more */
        expect(f, two_series, 422,
               "the query would return up to 2000 points (2 series x 1000 points per series), more than "
               "max_query_points (1999); add label filters or increase step",
               NULL);
        assert_int_equal(f->history.last_query.metric, METRIC__COUNT);
        /* A label filter brings it under. */
        expect(f, "/api/v1/query_range?metric=neuroncore_utilization_ratio&neuroncore=2&start=0&end=999&step=1", 200,
               NULL);
        f->ctx.max_query_points = 2000;
        expect(f, two_series, 200, NULL);
}

static void series__filters__reach_the_store(void **state) {
        struct web_fixture *f = *state;

        expect(f, "/api/v1/series?metric=neuron_device_up&neuron_device=0", 200,
               "{\"status\":\"success\",\"tick\":1,\"data\":[{\"__name__\":\"neuron_device_up\",\"neuron_device\":\"0\"},"
               "{\"__name__\":\"neuron_device_up\",\"neuron_device\":\"7\"}]}",
               NULL);
        assert_int_equal(f->history.last_metric, METRIC_DEVICE_UP);
        assert_int_equal(f->history.last_n_matchers, 1);
        assert_string_equal(f->history.last_matchers[0].name, "neuron_device");
        assert_string_equal(f->history.last_matchers[0].value, "0");
        expect(f, "/api/v1/series", 200, NULL);
        assert_int_equal(f->history.last_metric, -1);
        assert_int_equal(f->history.last_n_matchers, 0);
}

static void series__bad_parameters_or_store__400_or_503(void **state) {
        struct web_fixture *f = *state;

        expect(f, "/api/v1/series?metric=nope", 400, "parameter 'metric': unknown metric 'nope'", NULL);
        expect(f, "/api/v1/series?bogus=1", 400, "parameter 'bogus': not a parameter nor a label", NULL);
        expect(f, "/api/v1/series?metric=neuron_device_up&metric=neuron_device_up", 400, "given more than once", NULL);
        f->history.error = -EAGAIN;
        expect(f, "/api/v1/series", 503, "storage is unavailable", NULL);
}

static void status__daemon_state__reported(void **state) {
        struct web_fixture *f = *state;

        f->history.stats.raw_retention_ms = 172800 * 1000LL;
        expect(f, "/api/v1/status", 200,
               "{\"status\":\"success\",\"tick\":1,\"data\":{\"version\":\"1.2.3\",\"backend\":\"model:trn1.2xlarge\","
               "\"devices\":2,\"backend_state\":\"ok\",\"backend_reason\":\"\","
               "\"instance_type\":\"trn1.2xlarge\",\"interval_seconds\":1.000,\"time_scale\":1,\"series\":5,"
               "\"runtimes\":1,\"started\":1699999940.250,",
               "\"last_tick\":1700000000.250,",
               "\"store\":{\"used_bytes\":4096,\"size_cap_bytes\":1048576,\"degraded\":false,"
               "\"retention_seconds\":{\"raw\":172800,",
               "\"collectors\":[{\"name\":\"backend\",\"up\":true},{\"name\":\"host\",\"up\":false}]", NULL);
        expect(f, "/api/v1/status?verbose=1", 400, "parameter 'verbose': this endpoint takes no parameters", NULL);
}

/* Publishes tick 2 with the fixture's series and a backend of n_devices of
 * the fixture's devices, with reason. */
static void publish_backend(struct web_fixture *f, unsigned n_devices, const char *reason) {
        struct inventory backend = f->inv;
        backend.n_devices = n_devices;
        snprintf(backend.backend_reason, sizeof(backend.backend_reason), "%s", reason);
        struct snapshot *snap = snapshot_new(FIXTURE_SERIES_COUNT);
        assert_non_null(snap);
        snap->tick = 2;
        snap->timestamp_ms = FIXTURE_TICK_MS + 1000;
        snap->set = series_set_new(2, f->inv.series, f->inv.n_series, &backend);
        assert_non_null(snap->set);
        snapshot_slot_publish(&f->latest, snap);
}

/* The devices the API lists are those of the latest tick's series set: a
 * backend without devices (sysfs before the driver) says so and why, and
 * devices it finds later are listed from the tick that has them. */
static void devices__from_the_latest_set__none_then_found(void **state) {
        struct web_fixture *f = *state;

        publish_backend(f, 0, "/sys/devices/virtual/neuron_device is missing: is the Neuron driver loaded?");
        expect(f, "/api/v1/status", 200,
               "\"devices\":0,\"backend_state\":\"no_devices\",\"backend_reason\":\"/sys/devices/virtual/"
               "neuron_device is missing: is the Neuron driver loaded?\",",
               NULL);
        expect(f, "/api/v1/devices", 200, "\"tick\":2,", "\"devices\":[]}}", NULL);
        expect(f, "/api/v1/devices/0", 404, "no device 0 (this host has 0)", NULL);
        expect(f, "/api/v1/runtimes", 200, "\"neuron_devices\":[]", NULL);

        publish_backend(f, 2, "");
        expect(f, "/api/v1/status", 200, "\"devices\":2,\"backend_state\":\"ok\",\"backend_reason\":\"\",", NULL);
        expect(f, "/api/v1/devices", 200, "\"tick\":2,", "{\"index\":1,", NULL);
        expect(f, "/api/v1/devices/1", 200, "\"device\":{\"index\":1,", NULL);
        expect(f, "/api/v1/runtimes", 200, "\"neuron_devices\":[0]", NULL);
}

static void runtimes__latest_tick__each_with_its_cores(void **state) {
        struct web_fixture *f = *state;

        expect(f, "/api/v1/runtimes", 200,
               "{\"status\":\"success\",\"tick\":1,\"data\":{\"timestamp\":1700000000.250,\"runtimes\":["
               "{\"pid\":4242,\"runtime_tag\":\"serve\",\"neuroncores\":[0,1],\"neuron_devices\":[0]}]}}",
               NULL);
        expect(f, "/api/v1/runtimes?pid=1", 400, "parameter 'pid': this endpoint takes no parameters", NULL);
}

static void latest__runtime_series__labels_without_empty_values(void **state) {
        struct web_fixture *f = *state;

        /* runtime_tag is a label like the others, and a series without one has none. */
        expect(f, "/api/v1/latest?runtime_tag=serve", 200,
               "{\"metric\":{\"__name__\":\"neuroncore_utilization_ratio\",\"neuron_device\":\"0\",\"neuroncore\":\"0\","
               "\"runtime_tag\":\"serve\"},",
               NULL);
        expect(f, "/api/v1/latest?metric=neuroncore_utilization_ratio&neuron_device=1", 200,
               "{\"metric\":{\"__name__\":\"neuroncore_utilization_ratio\",\"neuron_device\":\"1\",\"neuroncore\":\"2\"},",
               NULL);
}

static void not_found__other_api_paths__json_404(void **state) {
        struct web_fixture *f = *state;

        expect(f, "/api/v1/nope", 404,
               "{\"status\":\"error\",\"errorType\":\"not_found\","
               "\"error\":\"no such API endpoint: /api/v1/nope\"}",
               NULL);
        expect(f, "/api", 404, "no such API endpoint: /api", NULL);
        expect(f, "/api/v1/status/x", 404, NULL);
}

static void pods__off__state_off_and_no_pod_filters(void **state) {
        struct web_fixture *f = *state;

        expect(f, "/api/v1/pods", 200,
               "{\"status\":\"success\",\"tick\":1,\"data\":{\"state\":\"off\",\"socket\":null,\"asked\":null,"
               "\"answered\":null,\"unmapped_ids\":0,\"containers\":[]}}",
               NULL);
        expect(f, "/api/v1/latest?pod=train-0", 400, "parameter 'pod': not a parameter nor a label", NULL);
        expect(f, "/api/v1/pods?pod=train-0", 400, "this endpoint takes no parameters", NULL);
}

/* A pod slot with one refresh: core 2, the only one of device 1 in the
 * fixture, held by ml/train-0/worker. */
static void publish_train_0(struct web_fixture *f, int error) {
        struct pod_core *cores;
        size_t n_cores;
        struct pod_map *m = pod_map_new();

        assert_int_equal(pod_cores_from_series(f->inv.series, f->inv.n_series, &cores, &n_cores), 0);
        assert_int_equal(n_cores, 2);
        pod_map_add(m, "ml", "train-0", "worker", "aws.amazon.com/neuroncore", "2");
        pod_map_add(m, "ml", "train-0", "worker", "aws.amazon.com/neuroncore", "core-0");
        m->asked_ms = FIXTURE_TICK_MS;
        m->answered_ms = FIXTURE_TICK_MS - (error ? 1000 : 0);
        m->error = error;
        if (error)
                snprintf(m->error_text, sizeof(m->error_text), "the kubelet is slow");
        assert_int_equal(pod_map_index(m, cores, n_cores), 0);
        free(cores);
        pod_slot_publish(&f->pods, m);
        f->ctx.pods = &f->pods;
        f->ctx.pod_resources_socket = "/run/kubelet.sock";
}

static void pods__held_core__listed_and_labelled(void **state) {
        struct web_fixture *f = *state;

        publish_train_0(f, 0);
        expect(f, "/api/v1/pods", 200,
               "{\"status\":\"success\",\"tick\":1,\"data\":{\"state\":\"ok\",\"socket\":\"/run/kubelet.sock\","
               "\"asked\":1700000000.250,\"answered\":1700000000.250,\"unmapped_ids\":1,\"containers\":["
               "{\"namespace\":\"ml\",\"pod\":\"train-0\",\"container\":\"worker\",\"neuroncores\":[2],"
               "\"neuron_devices\":[1],\"assigned\":{\"neuroncores\":[2],\"neuron_devices\":[]}}]}}",
               NULL);
        /* The core's series and its device's (its only core is held). */
        expect(f, "/api/v1/latest?pod=train-0&namespace=ml", 200,
               "{\"metric\":{\"__name__\":\"neuron_device_up\",\"neuron_device\":\"1\",\"pod\":\"train-0\","
               "\"namespace\":\"ml\",\"container\":\"worker\"}",
               "{\"metric\":{\"__name__\":\"neuroncore_utilization_ratio\",\"neuron_device\":\"1\","
               "\"neuroncore\":\"2\",\"pod\":\"train-0\",\"namespace\":\"ml\",\"container\":\"worker\"}",
               NULL);
        assert_int_equal(count_in(f, "/api/v1/latest?pod=train-0", "{\"metric\":"), 2);
        assert_int_equal(count_in(f, "/api/v1/latest?container=sidecar", "{\"metric\":"), 0);
        /* Unheld: no pod labels at all, not empty ones. */
        assert_int_equal(count_in(f, "/api/v1/latest?neuron_device=0", "\"pod\""), 0);
        assert_int_equal(count_in(f, "/api/v1/latest", "\"pod\":\"train-0\""), 2);
        expect(f, "/api/v1/devices/1", 200, "\"neuroncore\":\"2\",\"pod\":\"train-0\"", NULL);
        /* Stored history has no pod labels to filter by. */
        expect(f, "/api/v1/series?pod=train-0", 400, "parameter 'pod': not a parameter nor a label", NULL);
}

static void pods__kubelet_failing__error_with_the_last_answer(void **state) {
        struct web_fixture *f = *state;

        publish_train_0(f, -ETIMEDOUT);
        expect(f, "/api/v1/pods", 200,
               "\"state\":\"error\",\"socket\":\"/run/kubelet.sock\","
               "\"error\":\"the kubelet is slow\",\"asked\":1700000000.250,\"answered\":1699999999.250,",
               NULL);
        assert_int_equal(count_in(f, "/api/v1/latest?pod=train-0", "{\"metric\":"), 2);
}

#define SERVED(t) cmocka_unit_test_setup_teardown(t, fixture_setup, fixture_teardown)

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(healthz__fresh_tick__200_with_age),
                cmocka_unit_test(healthz__stalled_loop__503),
                cmocka_unit_test(healthz__no_tick_yet__503),
                SERVED(healthz__store_degraded__200_naming_the_cause),
                SERVED(devices__inventory__every_device_with_its_metric_families),
                SERVED(device__index__that_device_and_its_valid_values),
                SERVED(health__host__worst_state_counts_and_reasons),
                SERVED(events__parameters__passed_to_the_store),
                SERVED(device__bad_index__400_or_404),
                SERVED(latest__filters__matching_valid_series),
                SERVED(latest__bad_parameters__400_naming_them),
                SERVED(query_range__parameters__one_history_query),
                SERVED(query_range__bad_parameters__400_naming_them),
                SERVED(query_range__store_cannot_answer__503_or_422),
                SERVED(query_range__over_the_limits__422_naming_them),
                SERVED(series__filters__reach_the_store),
                SERVED(series__bad_parameters_or_store__400_or_503),
                SERVED(status__daemon_state__reported),
                SERVED(devices__from_the_latest_set__none_then_found),
                SERVED(runtimes__latest_tick__each_with_its_cores),
                SERVED(latest__runtime_series__labels_without_empty_values),
                SERVED(not_found__other_api_paths__json_404),
                SERVED(pods__off__state_off_and_no_pod_filters),
                SERVED(pods__held_core__listed_and_labelled),
                SERVED(pods__kubelet_failing__error_with_the_last_answer),
        };
        return cmocka_run_group_tests_name("api", tests, NULL, NULL);
}
