/* Remote write through its real interface: the writer threads read an
 * in-memory store (tests/fakes/fake-cursor.c) and POST to a receiver on
 * 127.0.0.1 (tests/fakes/fake-receiver.c) that decodes every request with
 * snappy and the generated protobuf code, and answers what the test
 * scripts. */
#include "config.h"

#include <errno.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>
#include <snappy-c.h>

#include "remote/remote-internal.h"
#include "tests/fakes/fake-cursor.h"
#include "tests/fakes/fake-receiver.h"

/* Bounds on waiting for the writer: generous, as the machine may be slow. */
#define WAIT_SECONDS 30
#define TICK_MS 1000
#define N_SERIES 3

struct fixture {
        struct fake_cursor store;
        struct cursor_source source;
        struct fake_receiver rx;
        struct remote_endpoint e;
        struct remote_set *set;
        int64_t ids[N_SERIES];
        char dir[64];
};

static int setup(void **state) {
        struct fixture *fx = calloc(1, sizeof(*fx));
        fake_cursor_init(&fx->store);
        fx->source = (struct cursor_source){ &fake_cursor_ops, &fx->store };
        fx->ids[0] = fake_cursor_add_series(&fx->store, "neuron_device_up", "neuron_device", "0", NULL, NULL);
        fx->ids[1] = fake_cursor_add_series(&fx->store, "neuron_device_up", "neuron_device", "1", NULL, NULL);
        fx->ids[2] = fake_cursor_add_series(&fx->store, "neuroncore_utilization_ratio", "neuron_device", "0",
                                            "neuroncore", "0");
        assert_int_equal(fake_receiver_start(&fx->rx, 0), 0);
        remote_endpoint_init(&fx->e, "central");
        snprintf(fx->e.url, sizeof(fx->e.url), "http://127.0.0.1:%u/api/v1/write", fx->rx.port);
        fx->e.batch_send_deadline_ms = 1;
        fx->e.min_backoff_ms = 10;
        fx->e.max_backoff_ms = 50;
        char why[128];
        assert_int_equal(remote_parse_labels("site=lab", &fx->e.external_labels, why, sizeof(why)), 0);
        snprintf(fx->dir, sizeof(fx->dir), "/tmp/test-remote.XXXXXX");
        assert_non_null(mkdtemp(fx->dir));
        *state = fx;
        return 0;
}

static int teardown(void **state) {
        struct fixture *fx = *state;
        remote_set_stop(fx->set);
        fake_receiver_stop(&fx->rx);
        fake_cursor_done(&fx->store);
        char cmd[128];
        snprintf(cmd, sizeof(cmd), "rm -rf %s", fx->dir);
        assert_int_equal(system(cmd), 0);
        free(fx);
        return 0;
}

/* Ticks first..first+n-1: every series, value = tick * 10 + series. */
static void add_ticks(struct fixture *fx, int first, int n) {
        for (int t = first; t < first + n; t++)
                for (int s = 0; s < N_SERIES; s++)
                        fake_cursor_add(&fx->store, (int64_t) t * TICK_MS, fx->ids[s], t * 10 + s);
        remote_set_wake(fx->set);
}

static void start(struct fixture *fx) {
        char err[512] = "";
        int r = remote_set_start(&fx->e, 1, &fx->source, &fx->set, err, sizeof(err));
        if (r < 0)
                fail_msg("remote_set_start: %s", err);
}

static void start_from_first(struct fixture *fx) {
        struct cursor_position zero = { 0, 0 };
        assert_int_equal(fake_cursor_ops.save(&fx->store, fx->e.name, &zero), 0);
        start(fx);
}

static bool is_self(const struct fake_received *s) {
        return strncmp(s->series, "neurond_remote_write_", 21) == 0;
}

static size_t data_samples(struct fixture *fx) {
        size_t n = 0;
        pthread_mutex_lock(&fx->rx.lock);
        for (size_t i = 0; i < fx->rx.n_samples; i++)
                n += !is_self(&fx->rx.samples[i]);
        pthread_mutex_unlock(&fx->rx.lock);
        return n;
}

/* Waits (bounded) until the receiver holds n data samples. */
static void wait_data(struct fixture *fx, size_t n) {
        for (int i = 0; i < WAIT_SECONDS * 100 && data_samples(fx) < n; i++)
                usleep(10000);
        assert_int_equal(data_samples(fx), n);
}

static struct forward_stats stats(struct fixture *fx) {
        struct forward_stats st;
        remote_forward_ops.get(fx->set, 0, &st);
        return st;
}

static void wait_stats(struct fixture *fx, bool (*done)(const struct forward_stats *st)) {
        struct forward_stats st = stats(fx);
        for (int i = 0; i < WAIT_SECONDS * 100 && !done(&st); i++) {
                usleep(10000);
                st = stats(fx);
        }
        assert_true(done(&st));
}

/* Waits (bounded) until the writer counts n samples sent: it counts them
 * once the receiver has answered, after the receiver kept them. */
static void wait_sent(struct fixture *fx, uint64_t n) {
        for (int i = 0; i < WAIT_SECONDS * 100 && stats(fx).samples_sent < n; i++)
                usleep(10000);
        assert_int_equal(stats(fx).samples_sent, n);
}

/* Every tick of [first, first+n) arrived once per series, in order per
 * series, with the right value. */
static void assert_ticks_once(struct fixture *fx, int first, int n) {
        static const char *const names[N_SERIES] = {
                "neuron_device_up{neuron_device=\"0\",site=\"lab\"}",
                "neuron_device_up{neuron_device=\"1\",site=\"lab\"}",
                "neuroncore_utilization_ratio{neuron_device=\"0\",neuroncore=\"0\",site=\"lab\"}",
        };
        pthread_mutex_lock(&fx->rx.lock);
        for (int s = 0; s < N_SERIES; s++) {
                int64_t last = INT64_MIN;
                int seen = 0;
                for (size_t i = 0; i < fx->rx.n_samples; i++) {
                        const struct fake_received *r = &fx->rx.samples[i];
                        if (strcmp(r->series, names[s]) != 0)
                                continue;
                        assert_true(r->timestamp_ms > last);
                        last = r->timestamp_ms;
                        int t = (int) (r->timestamp_ms / TICK_MS);
                        assert_true(t >= first && t < first + n);
                        assert_true(r->value == t * 10 + s);
                        seen++;
                }
                if (seen != n)
                        fail_msg("%s: %d samples, expected %d", names[s], seen, n);
        }
        pthread_mutex_unlock(&fx->rx.lock);
}

static void remote_parse_labels__pairs__parsed(void **state) {
        struct remote_labels l;
        char why[256];

        assert_int_equal(
                remote_parse_labels(" region=us-east-2, instance = node7 ,q=\"a, \\\"b\\\"\"", &l, why, sizeof(why)),
                0);
        assert_int_equal(l.n, 3);
        assert_string_equal(l.label[0].name, "region");
        assert_string_equal(l.label[0].value, "us-east-2");
        assert_string_equal(l.label[1].name, "instance");
        assert_string_equal(l.label[1].value, "node7");
        assert_string_equal(l.label[2].value, "a, \"b\"");
        assert_int_equal(remote_parse_labels("", &l, why, sizeof(why)), 0);
        assert_int_equal(l.n, 0);
}

static void remote_parse_labels__bad__einval(void **state) {
        static const char *const bad[] = {
                "__name__=x", "a",        "a=",
                "a=1,a=2",    "1a=2",     "a-b=1",
                "a=1\"b",     "a=\"open", "a=1,b=1,c=1,d=1,e=1,f=1,g=1,h=1,i=1,j=1,k=1,l=1,m=1,n=1,o=1,p=1,q=1",
        };
        struct remote_labels l;
        char why[256];

        for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
                why[0] = '\0';
                if (remote_parse_labels(bad[i], &l, why, sizeof(why)) != -EINVAL)
                        fail_msg("'%s' was accepted", bad[i]);
                assert_true(why[0] != '\0');
        }
}

static void remote_endpoint_check__bad_settings__einval(void **state) {
        struct remote_endpoint e;
        char err[512];

        remote_endpoint_init(&e, "x");
        assert_int_equal(remote_endpoint_check(&e, err, sizeof(err)), -EINVAL); /* no url */
        snprintf(e.url, sizeof(e.url), "ftp://host/");
        assert_int_equal(remote_endpoint_check(&e, err, sizeof(err)), -EINVAL);
        snprintf(e.url, sizeof(e.url), "http://host/");
        assert_int_equal(remote_endpoint_check(&e, err, sizeof(err)), 0);
        e.tls_insecure_skip_verify = true;
        assert_int_equal(remote_endpoint_check(&e, err, sizeof(err)), -EINVAL); /* TLS on http */
        snprintf(e.url, sizeof(e.url), "https://host/");
        assert_int_equal(remote_endpoint_check(&e, err, sizeof(err)), 0);
        snprintf(e.basic_auth_username, sizeof(e.basic_auth_username), "u");
        assert_int_equal(remote_endpoint_check(&e, err, sizeof(err)), -EINVAL); /* no password file */
        snprintf(e.basic_auth_password_file, sizeof(e.basic_auth_password_file), "/nonexistent/pw");
        assert_int_equal(remote_endpoint_check(&e, err, sizeof(err)), -EINVAL); /* unreadable */
        assert_non_null(strstr(err, "/nonexistent/pw"));
        snprintf(e.bearer_token_file, sizeof(e.bearer_token_file), "/dev/null");
        assert_int_equal(remote_endpoint_check(&e, err, sizeof(err)), -EINVAL); /* both */
}

static void remote_labelset_new__stored_and_external__sorted_own_label_wins(void **state) {
        struct cursor_label own[2] = { { "zone", "" }, { "instance", "node3" } };
        struct remote_labels ext = { .n = 2, .label = { { "instance", "other" }, { "Alpha", "1" } } };
        struct remote_labelset *s = NULL;

        assert_int_equal(remote_labelset_new("m", own, 2, &ext, &s), 0);
        /* The empty zone is no label; the series' own instance wins. */
        assert_int_equal(s->n, 3);
        assert_string_equal(s->labels[0].name, "Alpha");
        assert_string_equal(s->labels[1].name, "__name__");
        assert_string_equal(s->labels[1].value, "m");
        assert_string_equal(s->labels[2].name, "instance");
        assert_string_equal(s->labels[2].value, "node3");
        remote_labelset_free(s);
}

static void remote_encode__items__decode_to_the_same_series(void **state) {
        struct cursor_label l = { "neuron_device", "0" };
        struct remote_labelset *a = NULL, *b = NULL;
        struct remote_encoder enc = { 0 };
        uint8_t *body = NULL;
        size_t len = 0;

        assert_int_equal(remote_labelset_new("x", &l, 1, NULL, &a), 0);
        assert_int_equal(remote_labelset_new("y", NULL, 0, NULL, &b), 0);
        struct remote_item items[] = { { a, 1, 1.5 }, { b, 1, 2 }, { a, 2, 3 }, { b, 2, -0.0 }, { a, 3, NAN } };
        assert_int_equal(remote_encode(&enc, items, 5, &body, &len), 0);
        size_t raw_len = 0;
        assert_int_equal(snappy_uncompressed_length((const char *) body, len, &raw_len), SNAPPY_OK);
        char *raw = malloc(raw_len);
        assert_int_equal(snappy_uncompress((const char *) body, len, raw, &raw_len), SNAPPY_OK);
        Prometheus__WriteRequest *req = prometheus__write_request__unpack(NULL, raw_len, (const uint8_t *) raw);
        assert_non_null(req);
        assert_int_equal(req->n_timeseries, 2);
        const Prometheus__TimeSeries *x = req->timeseries[0], *y = req->timeseries[1];
        assert_int_equal(x->n_labels, 2);
        assert_string_equal(x->labels[0]->name, "__name__");
        assert_string_equal(x->labels[0]->value, "x");
        assert_string_equal(x->labels[1]->value, "0");
        assert_int_equal(x->n_samples, 3);
        assert_int_equal(x->samples[2]->timestamp, 3);
        assert_true(isnan(x->samples[2]->value));
        assert_int_equal(y->n_samples, 2);
        assert_true(y->samples[0]->value == 2);
        /* proto3 leaves zero values out, so -0.0 reads back as 0: the same
         * to every receiver. */
        assert_true(y->samples[1]->value == 0);
        prometheus__write_request__free_unpacked(req, NULL);
        /* The scratch counts were reset: encoding again gives the same. */
        uint8_t *again = NULL;
        size_t again_len = 0;
        assert_int_equal(remote_encode(&enc, items, 5, &again, &again_len), 0);
        assert_int_equal(again_len, len);
        assert_memory_equal(again, body, len);
        free(again);
        free(raw);
        free(body);
        remote_encoder_done(&enc);
        remote_labelset_free(a);
        remote_labelset_free(b);
}

static void remote_set__ticks__every_sample_once_with_the_standard_headers(void **state) {
        struct fixture *fx = *state;

        fx->e.max_samples_per_send = 7; /* batches end inside ticks */
        add_ticks(fx, 1, 10);
        start_from_first(fx);
        add_ticks(fx, 11, 5);
        wait_data(fx, 15 * N_SERIES);
        wait_sent(fx, 15 * N_SERIES);
        assert_ticks_once(fx, 1, 15);
        assert_string_equal(fx->rx.content_encoding, "snappy");
        assert_string_equal(fx->rx.content_type, "application/x-protobuf");
        assert_string_equal(fx->rx.version, "0.1.0");
        assert_string_equal(fx->rx.user_agent, "neurond/" PACKAGE_VERSION);
        assert_string_equal(fx->rx.authorization, "");
        assert_false(fx->rx.labels_unsorted);
        assert_false(fx->rx.bad_body);
        /* At most 7 samples of data in a request: 45 need at least 7. */
        assert_true(fx->rx.requests >= 7);
        struct cursor_position saved = fake_cursor_saved(&fx->store, "central");
        assert_int_equal(saved.timestamp_ms, 15 * TICK_MS);
        assert_int_equal(saved.series, fx->ids[N_SERIES - 1]);
        struct forward_stats st = stats(fx);
        assert_int_equal(st.samples_sent, 15 * N_SERIES);
        assert_int_equal(st.samples_failed, 0);
        assert_int_equal(st.last_status, 204);
        assert_string_equal(st.endpoint, "central");
}

static void remote_set__self_metrics__carried_with_the_endpoint_label(void **state) {
        struct fixture *fx = *state;

        add_ticks(fx, 1, 2);
        start_from_first(fx);
        wait_data(fx, 2 * N_SERIES);
        add_ticks(fx, 3, 1);
        wait_data(fx, 3 * N_SERIES);
        bool sent = false, behind = false;
        pthread_mutex_lock(&fx->rx.lock);
        for (size_t i = 0; i < fx->rx.n_samples; i++) {
                const struct fake_received *r = &fx->rx.samples[i];
                if (strcmp(r->series, "neurond_remote_write_samples_sent_total{endpoint=\"central\",site=\"lab\"}") ==
                    0) {
                        /* Stamped with the newest tick; the tick before was sent then. */
                        sent = true;
                        assert_int_equal(r->timestamp_ms % TICK_MS, 0);
                }
                behind |= strcmp(r->series, "neurond_remote_write_behind_seconds{endpoint=\"central\",site=\"lab\"}") ==
                          0;
        }
        pthread_mutex_unlock(&fx->rx.lock);
        assert_true(sent);
        assert_true(behind);
}

static bool retried_once(const struct forward_stats *st) {
        return st->retries >= 1;
}

static bool retried_twice(const struct forward_stats *st) {
        return st->retries >= 2;
}

static void remote_set__5xx_then_2xx__the_same_body_again(void **state) {
        struct fixture *fx = *state;

        fx->rx.script[0] = 503;
        fx->rx.script[1] = 500;
        fx->rx.n_script = 2;
        add_ticks(fx, 1, 3);
        start_from_first(fx);
        wait_data(fx, 3 * N_SERIES);
        wait_stats(fx, retried_twice);
        assert_ticks_once(fx, 1, 3);
        pthread_mutex_lock(&fx->rx.lock);
        assert_true(fx->rx.requests >= 3);
        for (int i = 1; i < 3; i++) {
                assert_int_equal(fx->rx.body_len[i], fx->rx.body_len[0]);
                assert_memory_equal(fx->rx.bodies[i], fx->rx.bodies[0], fx->rx.body_len[0]);
        }
        pthread_mutex_unlock(&fx->rx.lock);
        assert_int_equal(stats(fx).retries, 2);
}

static void remote_set__429_with_retry_after__retried(void **state) {
        struct fixture *fx = *state;

        fx->rx.script[0] = 429;
        fx->rx.n_script = 1;
        fx->rx.retry_after_s = 1;
        add_ticks(fx, 1, 2);
        start_from_first(fx);
        wait_sent(fx, 2 * N_SERIES);
        assert_ticks_once(fx, 1, 2);
        assert_int_equal(stats(fx).retries, 1);
        assert_int_equal(stats(fx).samples_failed, 0);
}

/* Ticks wake the writer: during a backoff they must not bring the retry
 * forward, or a receiver that is down gets a request every interval. */
static void remote_set__ticks_during_a_backoff__retry_waits_for_it(void **state) {
        struct fixture *fx = *state;

        fx->e.min_backoff_ms = 3000;
        fx->e.max_backoff_ms = 3000;
        fx->rx.script[0] = 503;
        fx->rx.n_script = 1;
        add_ticks(fx, 1, 1);
        start_from_first(fx);
        wait_stats(fx, retried_once);
        for (int t = 2; t <= 11; t++) {
                add_ticks(fx, t, 1);
                usleep(20000);
        }
        pthread_mutex_lock(&fx->rx.lock);
        unsigned requests = fx->rx.requests;
        pthread_mutex_unlock(&fx->rx.lock);
        assert_int_equal(requests, 1);
        wait_sent(fx, 11 * N_SERIES);
        assert_ticks_once(fx, 1, 11);
        assert_int_equal(stats(fx).retries, 1);
}

static bool sent_all_but_one_tick(const struct forward_stats *st) {
        return st->samples_sent == 2 * N_SERIES;
}

static void remote_set__4xx__batch_dropped_and_counted(void **state) {
        struct fixture *fx = *state;

        fx->e.max_samples_per_send = N_SERIES; /* a tick per request */
        fx->rx.script[0] = 400;
        fx->rx.n_script = 1;
        add_ticks(fx, 1, 3);
        start_from_first(fx);
        wait_stats(fx, sent_all_but_one_tick);
        wait_data(fx, 2 * N_SERIES);
        assert_ticks_once(fx, 2, 2);
        struct forward_stats st = stats(fx);
        assert_int_equal(st.samples_failed, N_SERIES);
        assert_int_equal(st.retries, 0);
        assert_int_equal(fake_cursor_saved(&fx->store, "central").timestamp_ms, 3 * TICK_MS);
}

static void remote_set__receiver_down__outage_replayed_once_in_order(void **state) {
        struct fixture *fx = *state;

        fx->e.max_samples_per_send = 4;
        fake_receiver_pause(&fx->rx);
        add_ticks(fx, 1, 2);
        start_from_first(fx);
        add_ticks(fx, 3, 5);
        wait_stats(fx, retried_twice);
        add_ticks(fx, 8, 3);
        assert_int_equal(fake_receiver_restart(&fx->rx), 0);
        wait_data(fx, 10 * N_SERIES);
        assert_ticks_once(fx, 1, 10);
        assert_true(stats(fx).retries >= 2);
}

static void remote_set__saved_position__continues_after_it(void **state) {
        struct fixture *fx = *state;
        struct cursor_position pos = { 4 * TICK_MS, fx->ids[N_SERIES - 1] };

        add_ticks(fx, 1, 6);
        assert_int_equal(fake_cursor_ops.save(&fx->store, "central", &pos), 0);
        start(fx);
        wait_data(fx, 2 * N_SERIES);
        assert_ticks_once(fx, 5, 2);
}

static void remote_set__new_endpoint__starts_at_the_newest_tick(void **state) {
        struct fixture *fx = *state;

        add_ticks(fx, 1, 6);
        start(fx);
        wait_data(fx, N_SERIES);
        add_ticks(fx, 7, 1);
        wait_data(fx, 2 * N_SERIES);
        assert_ticks_once(fx, 6, 2);
}

static void remote_set__series_gone__stale_marker_at_the_next_tick(void **state) {
        struct fixture *fx = *state;

        add_ticks(fx, 1, 2);
        /* Tick 3 without series 1. */
        fake_cursor_add(&fx->store, 3 * TICK_MS, fx->ids[0], 30);
        fake_cursor_add(&fx->store, 3 * TICK_MS, fx->ids[2], 32);
        start_from_first(fx);
        wait_data(fx, 2 * N_SERIES + 2 + 1);
        pthread_mutex_lock(&fx->rx.lock);
        unsigned markers = 0;
        for (size_t i = 0; i < fx->rx.n_samples; i++) {
                const struct fake_received *r = &fx->rx.samples[i];
                uint64_t bits;
                memcpy(&bits, &r->value, sizeof(bits));
                if (bits != REMOTE_STALE_NAN_BITS)
                        continue;
                markers++;
                assert_string_equal(r->series, "neuron_device_up{neuron_device=\"1\",site=\"lab\"}");
                assert_int_equal(r->timestamp_ms, 3 * TICK_MS);
        }
        pthread_mutex_unlock(&fx->rx.lock);
        assert_int_equal(markers, 1);
        /* Markers are not stored samples: not counted as sent. */
        wait_sent(fx, 2 * N_SERIES + 2);
}

static void remote_set__series_flapping__a_marker_per_gap_in_one_page(void **state) {
        struct fixture *fx = *state;
        enum { TICKS = 1200 };

        /* Odd ticks hold every series, even ones only the first: one page
         * of 2,400 samples makes 1,200 stale markers, more than the writer's
         * 256 series slots. */
        for (int t = 1; t <= TICKS; t++)
                for (int s = 0; s < (t % 2 ? N_SERIES : 1); s++)
                        fake_cursor_add(&fx->store, (int64_t) t * TICK_MS, fx->ids[s], t);
        start_from_first(fx);
        size_t samples = TICKS / 2 * (N_SERIES + 1);
        wait_data(fx, samples + TICKS / 2 * (N_SERIES - 1));
        wait_sent(fx, samples);
}

static void write_file(struct fixture *fx, const char *name, const char *text, char *path, size_t size) {
        snprintf(path, size, "%s/%s", fx->dir, name);
        FILE *f = fopen(path, "w");
        assert_non_null(f);
        fputs(text, f);
        fclose(f);
}

static void remote_set__bearer_token__in_the_authorization_header(void **state) {
        struct fixture *fx = *state;

        write_file(fx, "token", "s3cret-token\n", fx->e.bearer_token_file, sizeof(fx->e.bearer_token_file));
        snprintf(fx->rx.require_authorization, sizeof(fx->rx.require_authorization), "Bearer s3cret-token");
        add_ticks(fx, 1, 2);
        start_from_first(fx);
        wait_data(fx, 2 * N_SERIES);
        assert_string_equal(fx->rx.authorization, "Bearer s3cret-token");
}

static void remote_set__basic_auth__in_the_authorization_header(void **state) {
        struct fixture *fx = *state;

        snprintf(fx->e.basic_auth_username, sizeof(fx->e.basic_auth_username), "writer");
        write_file(fx, "password", "pa:ss\n", fx->e.basic_auth_password_file, sizeof(fx->e.basic_auth_password_file));
        /* base64("writer:pa:ss") */
        snprintf(fx->rx.require_authorization, sizeof(fx->rx.require_authorization), "Basic d3JpdGVyOnBhOnNz");
        add_ticks(fx, 1, 2);
        start_from_first(fx);
        wait_sent(fx, 2 * N_SERIES);
        assert_int_equal(stats(fx).samples_failed, 0);
}

static void remote_set__secret_file_with_a_control_byte__refused(void **state) {
        struct fixture *fx = *state;
        char err[512] = "";

        write_file(fx, "token", "abc\001def\n", fx->e.bearer_token_file, sizeof(fx->e.bearer_token_file));
        assert_int_equal(remote_set_start(&fx->e, 1, &fx->source, &fx->set, err, sizeof(err)), -EINVAL);
        assert_null(fx->set);
        assert_non_null(strstr(err, "control byte"));
}

static void remote_set__stop_during_a_request__does_not_wait_for_its_answer(void **state) {
        struct fixture *fx = *state;

        fx->e.remote_timeout_ms = 3600 * 1000;
        fx->rx.hang = true;
        add_ticks(fx, 1, 1);
        start_from_first(fx);
        assert_true(fake_receiver_wait_hanging(&fx->rx, WAIT_SECONDS));
        remote_set_stop(fx->set);
        fx->set = NULL;
        /* The receiver still holds the request: stopping did not wait for it. */
        pthread_mutex_lock(&fx->rx.lock);
        bool released = fx->rx.released;
        pthread_mutex_unlock(&fx->rx.lock);
        assert_false(released);
        /* Nothing was taken, so the position did not move. */
        assert_int_equal(fake_cursor_saved(&fx->store, "central").timestamp_ms, 0);
}

static void remote_set__sample_age_limit__older_samples_skipped_and_counted(void **state) {
        struct fixture *fx = *state;

        fx->e.sample_age_limit_ms = 2 * TICK_MS;
        add_ticks(fx, 1, 6);
        start_from_first(fx);
        wait_data(fx, 3 * N_SERIES);
        wait_sent(fx, 3 * N_SERIES);
        assert_ticks_once(fx, 4, 3);
        assert_int_equal(stats(fx).samples_failed, 3 * N_SERIES);
}

static void remote_set__database_replaced__labels_listed_again(void **state) {
        struct fixture *fx = *state;

        add_ticks(fx, 1, 2);
        start_from_first(fx);
        wait_data(fx, 2 * N_SERIES);
        /* A new file: the same ids now name other series. */
        pthread_mutex_lock(&fx->store.lock);
        snprintf(fx->store.series[0].labels[0].value, sizeof(fx->store.series[0].labels[0].value), "9");
        fx->store.generation++;
        pthread_mutex_unlock(&fx->store.lock);
        add_ticks(fx, 3, 1);
        for (int i = 0; i < WAIT_SECONDS * 100 && data_samples(fx) < 3 * N_SERIES; i++)
                usleep(10000);
        bool relabelled = false;
        pthread_mutex_lock(&fx->rx.lock);
        for (size_t i = 0; i < fx->rx.n_samples; i++)
                relabelled |=
                        strcmp(fx->rx.samples[i].series, "neuron_device_up{neuron_device=\"9\",site=\"lab\"}") == 0 &&
                        fx->rx.samples[i].timestamp_ms == 3 * TICK_MS;
        pthread_mutex_unlock(&fx->rx.lock);
        assert_true(relabelled);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(remote_parse_labels__pairs__parsed),
                cmocka_unit_test(remote_parse_labels__bad__einval),
                cmocka_unit_test(remote_endpoint_check__bad_settings__einval),
                cmocka_unit_test(remote_labelset_new__stored_and_external__sorted_own_label_wins),
                cmocka_unit_test(remote_encode__items__decode_to_the_same_series),
                cmocka_unit_test_setup_teardown(remote_set__ticks__every_sample_once_with_the_standard_headers, setup,
                                                teardown),
                cmocka_unit_test_setup_teardown(remote_set__self_metrics__carried_with_the_endpoint_label, setup,
                                                teardown),
                cmocka_unit_test_setup_teardown(remote_set__5xx_then_2xx__the_same_body_again, setup, teardown),
                cmocka_unit_test_setup_teardown(remote_set__429_with_retry_after__retried, setup, teardown),
                cmocka_unit_test_setup_teardown(remote_set__ticks_during_a_backoff__retry_waits_for_it, setup,
                                                teardown),
                cmocka_unit_test_setup_teardown(remote_set__4xx__batch_dropped_and_counted, setup, teardown),
                cmocka_unit_test_setup_teardown(remote_set__receiver_down__outage_replayed_once_in_order, setup,
                                                teardown),
                cmocka_unit_test_setup_teardown(remote_set__saved_position__continues_after_it, setup, teardown),
                cmocka_unit_test_setup_teardown(remote_set__new_endpoint__starts_at_the_newest_tick, setup, teardown),
                cmocka_unit_test_setup_teardown(remote_set__series_gone__stale_marker_at_the_next_tick, setup,
                                                teardown),
                cmocka_unit_test_setup_teardown(remote_set__series_flapping__a_marker_per_gap_in_one_page, setup,
                                                teardown),
                cmocka_unit_test_setup_teardown(remote_set__bearer_token__in_the_authorization_header, setup, teardown),
                cmocka_unit_test_setup_teardown(remote_set__basic_auth__in_the_authorization_header, setup, teardown),
                cmocka_unit_test_setup_teardown(remote_set__secret_file_with_a_control_byte__refused, setup, teardown),
                cmocka_unit_test_setup_teardown(remote_set__stop_during_a_request__does_not_wait_for_its_answer, setup,
                                                teardown),
                cmocka_unit_test_setup_teardown(remote_set__sample_age_limit__older_samples_skipped_and_counted, setup,
                                                teardown),
                cmocka_unit_test_setup_teardown(remote_set__database_replaced__labels_listed_again, setup, teardown),
        };
        return cmocka_run_group_tests_name("remote", tests, NULL, NULL);
}
