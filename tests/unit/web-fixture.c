#include "config.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "web-fixture.h"

static int fake_query_range(void *impl, const struct history_query *q, struct history_result **ret) {
        struct fake_history *h = impl;

        h->last_query = *q;
        if (h->error < 0)
                return h->error;
        /* One series of the metric with labels from the first matcher, two points. */
        struct history_result *res = calloc(1, sizeof(*res));
        assert_non_null(res);
        res->series = calloc(1, sizeof(*res->series));
        assert_non_null(res->series);
        res->n_series = 1;
        res->series[0].desc.metric = q->metric;
        for (size_t i = 0; i < q->n_matchers; i++) {
                int idx = metric_label_index(&metric_table[q->metric], q->matchers[i].name);
                snprintf(res->series[0].desc.label_values[idx], SERIES_LABEL_VALUE_MAX, "%s", q->matchers[i].value);
        }
        res->series[0].points = calloc(2, sizeof(struct history_point));
        assert_non_null(res->series[0].points);
        res->series[0].n_points = 2;
        res->series[0].points[0] = (struct history_point){ q->start_ms, 1.5 };
        res->series[0].points[1] = (struct history_point){ q->start_ms + q->step_ms, 2.5 };
        *ret = res;
        return 0;
}

static int fake_list_series(void *impl, int metric, const struct history_matcher *matchers, size_t n_matchers,
                            struct series_desc **ret, size_t *ret_n) {
        struct fake_history *h = impl;

        h->last_metric = metric;
        h->last_n_matchers = n_matchers;
        memcpy(h->last_matchers, matchers, n_matchers * sizeof(*matchers));
        if (h->error < 0)
                return h->error;
        /* Device 0's up, one of an earlier run (device 7), and any more asked for. */
        size_t n = 2 + h->more_series;
        struct series_desc *list = calloc(n, sizeof(*list));
        assert_non_null(list);
        for (size_t i = 0; i < n; i++) {
                list[i].metric = METRIC_DEVICE_UP;
                snprintf(list[i].label_values[0], SERIES_LABEL_VALUE_MAX, "%zu", i == 0 ? 0 : i == 1 ? 7 : 98 + i);
        }
        *ret = list;
        *ret_n = n;
        return 0;
}

static void fake_get_stats(void *impl, struct history_stats *ret) {
        struct fake_history *h = impl;
        *ret = h->stats;
}

/* One link_down event on device 4 at the query's end. */
static int fake_query_events(void *impl, const struct history_events_query *q, struct health_event **ret,
                             size_t *ret_n) {
        struct fake_history *h = impl;

        h->last_events = *q;
        if (h->error < 0)
                return h->error;
        struct health_event *ev = calloc(1, sizeof(*ev));
        assert_non_null(ev);
        *ev = (struct health_event){ .timestamp_ms = q->end_ms,
                                     .device = 4,
                                     .core = -1,
                                     .kind = HEALTH_RULE_LINK_DOWN,
                                     .phase = HEALTH_BEGIN,
                                     .severity = HEALTH_WARNING,
                                     .state = HEALTH_DEGRADED,
                                     .reason = "link (peer 5)",
                                     .value = 0 };
        *ret = ev;
        *ret_n = 1;
        return 0;
}

static const struct history_ops fake_history_ops = {
        .query_range = fake_query_range,
        .list_series = fake_list_series,
        .get_stats = fake_get_stats,
        .query_events = fake_query_events,
};

static int fake_inject(void *impl, const char *spec, char *canonical, size_t canonical_size, char *err, size_t errlen) {
        struct fake_faults *f = impl;

        if (strncmp(spec, "device_down:", 12) != 0) {
                snprintf(err, errlen, "unknown fault '%s'", spec);
                return -EINVAL;
        }
        snprintf(f->injected, sizeof(f->injected), "%s", spec);
        snprintf(canonical, canonical_size, "%s", spec);
        return 0;
}

static void fake_clear(void *impl) {
        struct fake_faults *f = impl;
        f->clears++;
        f->injected[0] = '\0';
}

static size_t fake_list(void *impl, struct fault_entry *out, size_t max) {
        struct fake_faults *f = impl;

        if (!f->injected[0])
                return 0;
        if (max > 0) {
                out[0] = (struct fault_entry){ .pending = true };
                snprintf(out[0].spec, sizeof(out[0].spec), "%s", f->injected);
        }
        return 1;
}

static const struct fault_ops fake_fault_ops = {
        .inject = fake_inject,
        .clear = fake_clear,
        .list = fake_list,
};

static int64_t monotonic_ms(void) {
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (int64_t) ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void add_device(struct inventory *inv, unsigned index, uint64_t memory, const char *serial, unsigned peer) {
        struct device_info *d = &inv->devices[inv->n_devices++];

        *d = (struct device_info){ .index = index,
                                   .core_count = 2,
                                   .physical_core_count = 2,
                                   .first_core = 2 * index,
                                   .memory_bytes = memory };
        snprintf(d->name, sizeof(d->name), "Trainium1");
        snprintf(d->arch, sizeof(d->arch), "NDv2");
        snprintf(d->core_arch, sizeof(d->core_arch), "NCv2");
        snprintf(d->serial, sizeof(d->serial), "%s", serial);
        d->peers = calloc(1, sizeof(unsigned));
        assert_non_null(d->peers);
        d->peers[0] = peer;
        d->n_peers = 1;
}

void web_fixture_init(struct web_fixture *f) {
        static const char *const collector_names[] = { "backend", "host" };

        memset(f, 0, sizeof(*f));
        snprintf(f->inv.instance_type, sizeof(f->inv.instance_type), "trn1.2xlarge");
        snprintf(f->inv.backend, sizeof(f->inv.backend), "model:trn1.2xlarge");
        f->inv.lnc = 1;
        snprintf(f->inv.identity.instance_id, sizeof(f->inv.identity.instance_id), "i-0123456789abcdef0");
        snprintf(f->inv.identity.instance_type, sizeof(f->inv.identity.instance_type), "trn1.2xlarge");
        snprintf(f->inv.identity.region, sizeof(f->inv.identity.region), "us-east-2");
        f->inv.devices = calloc(2, sizeof(struct device_info));
        assert_non_null(f->inv.devices);
        add_device(&f->inv, 0, 32ULL << 30, "S0", 1);
        add_device(&f->inv, 1, 0, "", 0);
        assert_int_equal(inventory_add_series(&f->inv, METRIC_DEVICE_UP, (const char *[]){ "0" }), 0);
        assert_int_equal(inventory_add_series(&f->inv, METRIC_DEVICE_UP, (const char *[]){ "1" }), 0);
        assert_int_equal(inventory_add_series(&f->inv, METRIC_CORE_UTILIZATION, (const char *[]){ "0", "0", "serve" }),
                         0);
        assert_int_equal(inventory_add_series(&f->inv, METRIC_CORE_UTILIZATION, (const char *[]){ "1", "2", NULL }), 0);
        assert_int_equal(
                inventory_add_series(&f->inv, METRIC_DEVICE_DMA_BYTES, (const char *[]){ "0", "host_to_device" }), 0);
        assert_int_equal(f->inv.n_series, FIXTURE_SERIES_COUNT);
        assert_int_equal(inventory_add_runtime(&f->inv, 4242, "serve", (const unsigned[]){ 0, 1 }, 2), 0);

        snapshot_slot_init(&f->latest);
        pod_slot_init(&f->pods);
        struct snapshot *snap = snapshot_new(FIXTURE_SERIES_COUNT);
        assert_non_null(snap);
        snap->tick = 1;
        snap->timestamp_ms = FIXTURE_TICK_MS;
        snap->monotonic_ms = monotonic_ms();
        const double values[FIXTURE_SERIES_COUNT] = { 1, 1, 0.25, 0.5, 1024 };
        for (size_t i = 0; i < FIXTURE_SERIES_COUNT; i++) {
                snap->values[i] = values[i];
                snap->valid[i] = i != FIXTURE_DMA_0;
        }
        snap->collector_up[0] = 1;
        snap->set = series_set_new(1, f->inv.series, f->inv.n_series, &f->inv);
        assert_non_null(snap->set);
        snapshot_slot_publish(&f->latest, snap);

        snprintf(f->web_root, sizeof(f->web_root), "/tmp/neurond-web-XXXXXX");
        assert_non_null(mkdtemp(f->web_root));
        char path[128];
        snprintf(path, sizeof(path), "%s/index.html", f->web_root);
        FILE *file = fopen(path, "w");
        assert_non_null(file);
        fputs("<!doctype html>hello\n", file);
        fclose(file);

        f->history.stats = (struct history_stats){ .used_bytes = 4096, .size_cap_bytes = 1 << 20 };
        f->ctx = (struct web_context){
                .web_root = f->web_root,
                .self = {
                        .version = "1.2.3",
                        .backend = f->inv.backend,
                        .n_collectors = 2,
                        .collector_names = collector_names,
                        .http_requests = f->http_requests,
                },
                .latest = &f->latest,
                .history = { &fake_history_ops, &f->history },
                .interval_ms = 1000,
                .time_scale = 1,
                .started_ms = FIXTURE_TICK_MS - 60000,
                .faults = { &fake_fault_ops, &f->faults },
                .http_requests = f->http_requests,
        };
}

void web_fixture_start(struct web_fixture *f) {
        struct sockaddr_in addr = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };

        assert_int_equal(http_start((const struct sockaddr *) &addr, sizeof(addr), &f->ctx, &f->srv), 0);
        f->port = http_port(f->srv);
        assert_true(f->port > 0);
}

void web_fixture_free(struct web_fixture *f) {
        char path[128];

        http_stop(f->srv);
        pod_slot_destroy(&f->pods);
        snapshot_slot_destroy(&f->latest);
        inventory_free(&f->inv);
        snprintf(path, sizeof(path), "%s/index.html", f->web_root);
        unlink(path);
        rmdir(f->web_root);
}

void web_fixture_send(struct web_fixture *f, const char *raw, size_t len, struct web_answer *ret) {
        struct sockaddr_in addr = { .sin_family = AF_INET,
                                    .sin_port = htons(f->port),
                                    .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
        /* A server that stops answering fails the test instead of hanging it. */
        struct timeval timeout = { .tv_sec = 10 };
        size_t size = 0, cap = 4096;
        char *text = malloc(cap);

        assert_non_null(text);
        int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
        assert_true(fd >= 0);
        assert_int_equal(setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, sizeof(timeout)), 0);
        assert_int_equal(connect(fd, (struct sockaddr *) &addr, sizeof(addr)), 0);
        assert_int_equal(send(fd, raw, len, MSG_NOSIGNAL), (ssize_t) len);
        for (;;) {
                if (cap - size < 1024) {
                        cap *= 2;
                        text = realloc(text, cap);
                        assert_non_null(text);
                }
                ssize_t n = recv(fd, text + size, cap - size - 1, 0);
                assert_true(n >= 0);
                if (n == 0)
                        break;
                size += (size_t) n;
        }
        close(fd);
        text[size] = '\0';

        *ret = (struct web_answer){ .text = text };
        unsigned status;
        if (sscanf(text, "HTTP/1.1 %3u ", &status) == 1)
                ret->status = status;
        char *end = strstr(text, "\r\n\r\n");
        ret->body = end ? end + 4 : text + size;
        ret->body_len = (size_t) (text + size - ret->body);
}

void web_fixture_ask(struct web_fixture *f, const char *method, const char *target, const char *headers,
                     struct web_answer *ret) {
        char request[16384];
        int n = snprintf(request, sizeof(request), "%s %s HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n%s\r\n",
                         method, target, headers ? headers : "");
        assert_true(n > 0 && (size_t) n < sizeof(request));
        web_fixture_send(f, request, (size_t) n, ret);
}

void web_fixture_expect(struct web_fixture *f, const char *method, const char *target, const char *headers,
                        unsigned status, const char *body_part) {
        struct web_answer a;

        web_fixture_ask(f, method, target, headers, &a);
        if (a.status != status || (body_part && !strstr(a.body, body_part)))
                fail_msg("%s %s: expected %u with '%s', got:\n%s", method, target, status, body_part ? body_part : "",
                         a.text);
        web_answer_free(&a);
}

bool web_answer_header(const struct web_answer *a, const char *name, char *value, size_t size) {
        size_t len = strlen(name);

        for (const char *line = strstr(a->text, "\r\n"); line && line + 2 < a->body; line = strstr(line + 2, "\r\n")) {
                const char *h = line + 2;
                if (strncasecmp(h, name, len) == 0 && h[len] == ':') {
                        const char *v = h + len + 1 + strspn(h + len + 1, " ");
                        snprintf(value, size, "%.*s", (int) strcspn(v, "\r"), v);
                        return true;
                }
        }
        return false;
}

void web_answer_free(struct web_answer *a) {
        free(a->text);
        *a = (struct web_answer){ 0 };
}
