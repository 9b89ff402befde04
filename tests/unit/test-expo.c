#include "config.h"

#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "web/expo.h"

static const struct expo_self self = {
        .version = "1.2.3",
        .backend = "model:trn1.2xlarge",
        .n_collectors = 1,
        .collector_names = (const char *const[]){ "backend" },
};

static char *render_format(const struct series_desc *series, size_t n, const double *values, const uint8_t *valid,
                           enum accept_format format) {
        struct expo *e = NULL;
        struct snapshot *snap = snapshot_new(n);
        struct buf out = { 0 };

        struct inventory backend = { .instance_type = "trn1.2xlarge" };
        assert_int_equal(expo_new(series, n, &e), 0);
        snap->set = series_set_new(1, series, n, &backend);
        assert_non_null(snap->set);
        memcpy(snap->values, values, n * sizeof(double));
        memcpy(snap->valid, valid, n);
        snap->timestamp_ms = 1700000000123;
        snap->collector_up[0] = 1;
        expo_render(e, snap, &self, format, &out);
        buf_append(&out, "", 1);
        assert_false(out.failed);
        snapshot_unref(snap);
        expo_free(e);
        return out.data;
}

static char *render(const struct series_desc *series, size_t n, const double *values, const uint8_t *valid) {
        return render_format(series, n, values, valid, ACCEPT_TEXT);
}

static void expo_render__families__grouped_with_help_and_type(void **state) {
        /* Interleaved families must come out grouped, each with one HELP/TYPE. */
        const struct series_desc series[] = {
                { .metric = METRIC_CORE_UTILIZATION, .label_values = { "0", "0" } },
                { .metric = METRIC_DEVICE_DMA_BYTES, .label_values = { "0", "host_to_device" } },
                { .metric = METRIC_CORE_UTILIZATION, .label_values = { "0", "1" } },
        };
        const double values[] = { 0.25, 1234567890123.0, 1 };
        const uint8_t valid[] = { 1, 1, 1 };
        char *text = render(series, 3, values, valid);

        assert_non_null(strstr(
                text,
                "# HELP neuroncore_utilization_ratio Fraction of time the NeuronCore was busy over the last interval (0-1); "
                "runtime_tag names the runtime holding it.\n"
                "# TYPE neuroncore_utilization_ratio gauge\n"
                "neuroncore_utilization_ratio{neuron_device=\"0\",neuroncore=\"0\"} 0.25\n"
                "neuroncore_utilization_ratio{neuron_device=\"0\",neuroncore=\"1\"} 1\n"));
        assert_non_null(strstr(
                text,
                "# TYPE neuron_device_dma_bytes_total counter\n"
                "neuron_device_dma_bytes_total{neuron_device=\"0\",direction=\"host_to_device\"} 1234567890123\n"));
        assert_non_null(strstr(text, "neurond_build_info{version=\"1.2.3\",backend=\"model:trn1.2xlarge\","
                                     "instance_type=\"trn1.2xlarge\"} 1\n"));
        assert_non_null(strstr(text, "neurond_collector_up{collector=\"backend\"} 1\n"));
        assert_non_null(strstr(text, "neurond_last_poll_timestamp_seconds 1700000000.123\n"));
        /* Exactly one HELP line per family. */
        const char *p = text;
        int helps = 0;
        while ((p = strstr(p, "# HELP neuroncore_utilization_ratio "))) {
                helps++;
                p++;
        }
        assert_int_equal(helps, 1);
        free(text);
}

/* The backend's device count is there with or without devices: 0 says
 * that it has nothing to poll (sysfs without a driver), which an empty
 * page alone would not. */
static void expo_render__backend_devices__zero_or_count(void **state) {
        struct device_info devices[2] = { { .index = 0 }, { .index = 1 } };
        const struct series_desc series[] = { { .metric = METRIC_SYSTEM_MEMORY_USED } };
        struct expo *e = NULL;
        assert_int_equal(expo_new(series, 1, &e), 0);
        for (unsigned n = 0; n <= 2; n += 2) {
                struct inventory backend = { .n_devices = n, .devices = devices };
                struct snapshot *snap = snapshot_new(1);
                struct buf out = { 0 };
                char want[64];
                snap->set = series_set_new(1, series, 1, &backend);
                assert_non_null(snap->set);
                expo_render(e, snap, &self, ACCEPT_TEXT, &out);
                buf_append(&out, "", 1);
                snprintf(want, sizeof(want), "\nneurond_backend_devices %u\n", n);
                assert_non_null(strstr(out.data, want));
                assert_non_null(strstr(out.data, "# TYPE neurond_backend_devices gauge\n"));
                buf_free(&out);
                snapshot_unref(snap);
        }
        expo_free(e);
}

static void expo_render__invalid_value__series_absent(void **state) {
        const struct series_desc series[] = {
                { .metric = METRIC_DEVICE_MEMORY_USED, .label_values = { "0" } },
                { .metric = METRIC_DEVICE_MEMORY_USED, .label_values = { "1" } },
        };
        const double values[] = { 0, 4096 };
        const uint8_t valid[] = { 0, 1 };
        char *text = render(series, 2, values, valid);

        assert_null(strstr(text, "neuron_device_memory_used_bytes{neuron_device=\"0\"}"));
        assert_non_null(strstr(text, "neuron_device_memory_used_bytes{neuron_device=\"1\"} 4096\n"));
        free(text);
}

static void expo_render__label_value__escaped(void **state) {
        const struct series_desc series[] = {
                { .metric = METRIC_DEVICE_DMA_BYTES, .label_values = { "0", "a\"b\\c\nd" } },
        };
        const double values[] = { 1 };
        const uint8_t valid[] = { 1 };
        char *text = render(series, 1, values, valid);

        assert_non_null(strstr(text, "direction=\"a\\\"b\\\\c\\nd\"} 1\n"));
        free(text);
}

/* An empty label value is no label, as Prometheus reads it: one family
 * holds a runtime's series (no core) and a core's (no runtime). */
static void expo_render__empty_label_values__left_out(void **state) {
        const struct series_desc series[] = {
                { .metric = METRIC_CORE_EXECUTION_STATUS, .label_values = { "", "", "serve", "completed" } },
                { .metric = METRIC_CORE_EXECUTION_STATUS, .label_values = { "0", "1", "", "timed_out" } },
                { .metric = METRIC_CORE_UTILIZATION, .label_values = { "0", "1", "" } },
        };
        const double values[] = { 12, 3, 0.5 };
        const uint8_t valid[] = { 1, 1, 1 };
        char *text = render(series, 3, values, valid);

        assert_non_null(strstr(
                text, "execution_status_total{runtime_tag=\"serve\",status_type=\"completed\"} 12\n"
                      "execution_status_total{neuron_device=\"0\",neuroncore=\"1\",status_type=\"timed_out\"} 3\n"));
        assert_non_null(strstr(text, "neuroncore_utilization_ratio{neuron_device=\"0\",neuroncore=\"1\"} 0.5\n"));
        assert_null(strstr(text, "=\"\""));
        free(text);
}

/* What AWS's exporter writes about the instance: instance_info and
 * neuron_hardware_info (an info family named neuron_hardware in
 * OpenMetrics, which the CloudWatch agent looks for), and on request the
 * instance labels on every series. */
static void expo_render__instance__info_families_and_labels(void **state) {
        struct inventory inv = { .lnc = 2, .n_devices = 2 };
        struct device_info devices[2] = {
                { .index = 0, .name = "Trainium2", .core_arch = "NCv3", .core_count = 4, .memory_bytes = 103079215104 },
                { .index = 1, .name = "Trainium2", .core_arch = "NCv3", .core_count = 4, .memory_bytes = 103079215104 },
        };
        inv.devices = devices;
        snprintf(inv.identity.instance_id, sizeof(inv.identity.instance_id), "i-0123456789abcdef0");
        snprintf(inv.identity.instance_type, sizeof(inv.identity.instance_type), "trn2.48xlarge");
        snprintf(inv.identity.availability_zone, sizeof(inv.identity.availability_zone), "us-east-2c");
        snprintf(inv.identity.region, sizeof(inv.identity.region), "us-east-2");
        snprintf(inv.identity.subnet_id, sizeof(inv.identity.subnet_id), "subnet-0123456789abcdef0");
        const struct series_desc series[] = {
                { .metric = METRIC_SYSTEM_MEMORY_USED },
                { .metric = METRIC_RUNTIME_INFO, .label_values = { "serve", "4242" } },
        };
        struct snapshot *snap = snapshot_new(2);
        snap->values[0] = 1024;
        snap->values[1] = 1;
        snap->valid[0] = snap->valid[1] = 1;
        const char *inst =
                "instance_id=\"i-0123456789abcdef0\",instance_type=\"trn2.48xlarge\","
                "availability_zone=\"us-east-2c\",region=\"us-east-2\",subnet_id=\"subnet-0123456789abcdef0\"";
        char want[1024];

        for (int every = 0; every < 2; every++) {
                struct expo_instance instance = { .inv = &inv, .labels_on_every_series = every };
                for (int f = ACCEPT_TEXT; f <= ACCEPT_OPENMETRICS; f++) {
                        struct expo *e = NULL;
                        struct buf out = { 0 };
                        assert_int_equal(expo_new_with(series, 2, &instance, &e), 0);
                        expo_render(e, snap, &self, (enum accept_format) f, &out);
                        buf_append(&out, "", 1);
                        /* The instance name is unknown: no label, not an empty one. */
                        snprintf(want, sizeof(want), "instance_info{%s} 1\n", inst);
                        assert_non_null(strstr(out.data, want));
                        snprintf(want, sizeof(want),
                                 "neuron_hardware_info{neuron_device_count=\"2\",neuroncore_per_device_count=\"4\","
                                 "neuron_device_memory_size=\"103079215104\",neuron_device_type=\"trainium2\","
                                 "neuroncore_version=\"v3d\",logical_neuroncore_config=\"2\",%s} 1\n",
                                 inst);
                        assert_non_null(strstr(out.data, want));
                        assert_non_null(strstr(out.data, f == ACCEPT_OPENMETRICS
                                                                 ? "# TYPE neuron_hardware info\n"
                                                                 : "# TYPE neuron_hardware_info gauge\n"));
                        assert_non_null(strstr(out.data, f == ACCEPT_OPENMETRICS
                                                                 ? "# TYPE neuron_runtime info\n"
                                                                 : "# TYPE neuron_runtime_info gauge\n"));
                        snprintf(want, sizeof(want),
                                 every ? "system_memory_used_bytes{%s} 1024\n" : "%.0ssystem_memory_used_bytes 1024\n",
                                 inst);
                        assert_non_null(strstr(out.data, want));
                        snprintf(want, sizeof(want),
                                 every ? "neuron_runtime_info{runtime_tag=\"serve\",pid=\"4242\",%s} 1\n"
                                       : "%.0sneuron_runtime_info{runtime_tag=\"serve\",pid=\"4242\"} 1\n",
                                 inst);
                        assert_non_null(strstr(out.data, want));
                        /* neurond's own metrics are about neurond, not the instance. */
                        assert_null(strstr(out.data,
                                           "neurond_build_info{version=\"1.2.3\",backend=\"model:trn1.2xlarge\","
                                           "instance_type=\"trn1.2xlarge\",instance_id"));
                        buf_free(&out);
                        expo_free(e);
                }
        }
        /* Without an identity: no instance_info, a hardware one without instance labels. */
        inv.identity = (struct instance_identity){ 0 };
        struct expo_instance instance = { .inv = &inv, .labels_on_every_series = true };
        struct expo *e = NULL;
        struct buf out = { 0 };
        assert_int_equal(expo_new_with(series, 2, &instance, &e), 0);
        expo_render(e, snap, &self, ACCEPT_TEXT, &out);
        buf_append(&out, "", 1);
        assert_null(strstr(out.data, "instance_info"));
        assert_non_null(strstr(out.data, "logical_neuroncore_config=\"2\"} 1\n"));
        assert_non_null(strstr(out.data, "system_memory_used_bytes 1024\n"));
        buf_free(&out);
        expo_free(e);
        snapshot_unref(snap);
}

/* Bytes that are not UTF-8 go out as U+FFFD; valid characters as they are. */
static void expo_escape_label_value__invalid_utf8__replacement_character(void **state) {
        static const struct {
                const char *in, *out;
        } cases[] = {
                { "Trainium\xff"
                  "2",
                  "Trainium\xef\xbf\xbd"
                  "2" },
                { "\xc3\xa9t\xc3\xa9", "\xc3\xa9t\xc3\xa9" },
                { "a\xc3", "a\xef\xbf\xbd" },
                { "\xed\xa0\x80\"", "\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd\\\"" }, /* a surrogate, then a quote */
                { "\xf0\x9f\x98\x80\n", "\xf0\x9f\x98\x80\\n" },
        };
        for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
                struct buf b = { 0 };
                expo_escape_label_value(&b, cases[i].in);
                buf_append(&b, "", 1);
                assert_string_equal(b.data, cases[i].out);
                assert_true(utf8_valid(b.data));
                buf_free(&b);
        }
}

static void utf8_sanitize__invalid_bytes__replaced_and_cut_at_characters(void **state) {
        char out[8];

        assert_int_equal(utf8_sanitize(out, sizeof(out),
                                       "ab\xff"
                                       "c"),
                         6);
        assert_string_equal(out, "ab\xef\xbf\xbd"
                                 "c");
        assert_int_equal(utf8_sanitize(out, sizeof(out), "\xc3\xa9"), 2);
        assert_string_equal(out, "\xc3\xa9");
        /* Does not fit: cut before the character that would not. */
        assert_int_equal(utf8_sanitize(out, sizeof(out), "abcde\xff"), 8);
        assert_string_equal(out, "abcde");
        assert_int_equal(utf8_sanitize(out, sizeof(out), ""), 0);
        assert_string_equal(out, "");
}

static void buf_double__values__shortest_round_trip(void **state) {
        static const struct {
                double v;
                const char *text;
        } cases[] = {
                { 0, "0" },
                { 1, "1" },
                { -3, "-3" },
                { 0.1, "0.1" },
                { 0.55, "0.55" },
                { 1.0 / 3, "0.333333333333333"
                           "31" },
                { 1e300, "1e+300" },
                { 9007199254740992.0, "9007199254740992" },
                { NAN, "NaN" },
                { INFINITY, "+Inf" },
                { -INFINITY, "-Inf" },
        };
        for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
                struct buf b = { 0 };
                buf_double(&b, cases[i].v);
                buf_append(&b, "", 1);
                assert_string_equal(b.data, cases[i].text);
                if (!isnan(cases[i].v))
                        assert_true(strtod(b.data, NULL) == cases[i].v || isinf(cases[i].v));
                buf_free(&b);
        }
}

static void expo_render__no_snapshot__build_info_only(void **state) {
        const struct series_desc series[] = {
                { .metric = METRIC_DEVICE_MEMORY_USED, .label_values = { "0" } },
        };
        struct expo *e = NULL;
        struct buf out = { 0 };

        assert_int_equal(expo_new(series, 1, &e), 0);
        expo_render(e, NULL, &self, ACCEPT_TEXT, &out);
        buf_append(&out, "", 1);
        assert_null(strstr(out.data, "neuron_device_memory_used_bytes"));
        assert_non_null(strstr(out.data, "neurond_build_info{"));
        buf_free(&out);
        expo_free(e);
}

static void expo_render__openmetrics__counter_family_unit_and_eof(void **state) {
        const struct series_desc series[] = {
                { .metric = METRIC_DEVICE_DMA_BYTES, .label_values = { "0", "host_to_device" } },
                { .metric = METRIC_CORE_UTILIZATION, .label_values = { "0", "0" } },
        };
        const double values[] = { 42, 0.5 };
        const uint8_t valid[] = { 1, 1 };
        char *text = render_format(series, 2, values, valid, ACCEPT_OPENMETRICS);

        /* A counter's family drops _total; its samples keep it. */
        assert_non_null(strstr(text,
                               "# TYPE neuron_device_dma_bytes counter\n"
                               "# UNIT neuron_device_dma_bytes bytes\n"
                               "neuron_device_dma_bytes_total{neuron_device=\"0\",direction=\"host_to_device\"} 42\n"));
        assert_non_null(strstr(text, "# TYPE neuroncore_utilization_ratio gauge\n"
                                     "# UNIT neuroncore_utilization_ratio ratio\n"));
        assert_non_null(strstr(text, "# TYPE neurond_build info\nneurond_build_info{"));
        assert_null(strstr(text, "# TYPE neuron_device_dma_bytes_total"));
        /* "# EOF" ends the exposition, once. */
        size_t len = strlen(text);
        assert_true(len > 6);
        assert_string_equal(text + len - 6, "# EOF\n");
        assert_ptr_equal(strstr(text, "# EOF"), text + len - 6);
        free(text);
}

static void expo_render__text__no_unit_nor_eof(void **state) {
        const struct series_desc series[] = {
                { .metric = METRIC_DEVICE_DMA_BYTES, .label_values = { "0", "host_to_device" } },
        };
        const double values[] = { 42 };
        const uint8_t valid[] = { 1 };
        char *text = render(series, 1, values, valid);

        assert_non_null(strstr(text, "# TYPE neuron_device_dma_bytes_total counter\n"));
        assert_non_null(strstr(text, "# TYPE neurond_build_info gauge\n"));
        assert_null(strstr(text, "# UNIT"));
        assert_null(strstr(text, "# EOF"));
        free(text);
}

static void expo_render__self_counters__rendered_by_code(void **state) {
        const struct series_desc series[] = {
                { .metric = METRIC_DEVICE_MEMORY_USED, .label_values = { "0" } },
        };
        static atomic_uint_fast64_t stored = 1234, errors = 2, requests[EXPO_HTTP_CODES];
        struct expo_self s = self;
        struct expo *e = NULL;
        struct buf out = { 0 };

        s.samples_stored = &stored;
        s.store_errors = &errors;
        s.http_requests = requests;
        atomic_store(&requests[expo_http_code_index(200)], 7);
        atomic_store(&requests[expo_http_code_index(404)], 3);
        atomic_store(&requests[expo_http_code_index(418)], 1);
        assert_int_equal(expo_new(series, 1, &e), 0);
        expo_render(e, NULL, &s, ACCEPT_OPENMETRICS, &out);
        buf_append(&out, "", 1);
        assert_non_null(strstr(out.data, "# TYPE neurond_samples_stored counter\nneurond_samples_stored_total 1234\n"));
        assert_non_null(strstr(out.data, "neurond_store_errors_total 2\n"));
        assert_non_null(strstr(out.data, "neurond_http_requests_total{code=\"200\"} 7\n"));
        assert_non_null(strstr(out.data, "neurond_http_requests_total{code=\"404\"} 3\n"));
        assert_non_null(strstr(out.data, "neurond_http_requests_total{code=\"other\"} 1\n"));
        assert_null(strstr(out.data, "code=\"500\""));
        buf_free(&out);
        expo_free(e);
}

static size_t two_endpoints(void *impl) {
        return 2;
}

static void endpoint_stats(void *impl, size_t i, struct forward_stats *ret) {
        *ret = (struct forward_stats){
                .samples_sent = 100 + i, .samples_failed = 3, .retries = 4, .pending = 5, .behind_seconds = i ? 12.5 : 0
        };
        snprintf(ret->endpoint, sizeof(ret->endpoint), "%s", i ? "vm" : "prom");
}

static void expo_render__remote_write__counters_per_endpoint(void **state) {
        static const struct forward_ops ops = { .count = two_endpoints, .get = endpoint_stats };
        const struct forward fw = { &ops, NULL };
        const struct series_desc series[] = {
                { .metric = METRIC_DEVICE_MEMORY_USED, .label_values = { "0" } },
        };
        struct expo_self s = self;
        struct expo *e = NULL;
        struct buf out = { 0 };

        s.forward = &fw;
        assert_int_equal(expo_new(series, 1, &e), 0);
        expo_render(e, NULL, &s, ACCEPT_OPENMETRICS, &out);
        buf_append(&out, "", 1);
        assert_non_null(strstr(out.data, "# TYPE neurond_remote_write_samples_sent counter\n"
                                         "neurond_remote_write_samples_sent_total{endpoint=\"prom\"} 100\n"
                                         "neurond_remote_write_samples_sent_total{endpoint=\"vm\"} 101\n"));
        assert_non_null(strstr(out.data, "neurond_remote_write_samples_failed_total{endpoint=\"vm\"} 3\n"));
        assert_non_null(strstr(out.data, "neurond_remote_write_retries_total{endpoint=\"prom\"} 4\n"));
        assert_non_null(strstr(out.data, "neurond_remote_write_pending_samples{endpoint=\"vm\"} 5\n"));
        assert_non_null(strstr(out.data, "# UNIT neurond_remote_write_behind_seconds seconds\n"));
        assert_non_null(strstr(out.data, "neurond_remote_write_behind_seconds{endpoint=\"vm\"} 12.5\n"));
        buf_free(&out);
        expo_free(e);
}

static void expo_render_with_pods__held_core_and_device__pod_labels_after_their_own(void **state) {
        /* Device 0 (cores 0 and 1) went to one container whole; core 2 of
         * device 1 to another; core 3 nobody holds. */
        const struct series_desc series[] = {
                { .metric = METRIC_CORE_UTILIZATION, .label_values = { "0", "1" } },
                { .metric = METRIC_DEVICE_MEMORY_TOTAL, .label_values = { "0" } },
                { .metric = METRIC_CORE_UTILIZATION, .label_values = { "1", "2" } },
                { .metric = METRIC_CORE_UTILIZATION, .label_values = { "1", "3" } },
                { .metric = METRIC_DEVICE_MEMORY_TOTAL, .label_values = { "1" } },
        };
        const struct pod_core cores[] = { { 0, 0 }, { 0, 1 }, { 1, 2 }, { 1, 3 } };
        struct pod_map *pods = pod_map_new();
        struct expo *e = NULL;
        struct snapshot *snap = snapshot_new(5);
        struct buf out = { 0 };
        (void) state;

        assert_int_equal(pod_map_add(pods, "ml", "train-0", "worker", "aws.amazon.com/neuron", "0"), 1);
        assert_int_equal(pod_map_add(pods, "serve", "infer-0", "server", "aws.amazon.com/neuroncore", "2"), 1);
        assert_int_equal(pod_map_index(pods, cores, 4), 0);
        assert_int_equal(expo_new(series, 5, &e), 0);
        for (size_t i = 0; i < 5; i++) {
                snap->values[i] = 0;
                snap->valid[i] = 1;
        }
        expo_render_with_pods(e, snap, pods, &self, ACCEPT_TEXT, &out);
        buf_append(&out, "", 1);
        assert_false(out.failed);
        assert_non_null(strstr(out.data,
                               "neuroncore_utilization_ratio{neuron_device=\"0\",neuroncore=\"1\",pod=\"train-0\","
                               "namespace=\"ml\",container=\"worker\"} 0\n"));
        assert_non_null(strstr(out.data, "neuron_device_memory_total_bytes{neuron_device=\"0\",pod=\"train-0\","
                                         "namespace=\"ml\",container=\"worker\"} 0\n"));
        assert_non_null(strstr(out.data,
                               "neuroncore_utilization_ratio{neuron_device=\"1\",neuroncore=\"2\",pod=\"infer-0\","
                               "namespace=\"serve\",container=\"server\"} 0\n"));
        /* Unheld, and a device only half held: no pod labels at all. */
        assert_non_null(strstr(out.data, "neuroncore_utilization_ratio{neuron_device=\"1\",neuroncore=\"3\"} 0\n"));
        assert_non_null(strstr(out.data, "neuron_device_memory_total_bytes{neuron_device=\"1\"} 0\n"));
        buf_free(&out);

        /* Without a pod map, none. */
        expo_render_with_pods(e, snap, NULL, &self, ACCEPT_TEXT, &out);
        buf_append(&out, "", 1);
        assert_null(strstr(out.data, "pod="));
        buf_free(&out);
        snapshot_unref(snap);
        expo_free(e);
        pod_map_unref(pods);
}

static void expo_render__collector_down__up_zero(void **state) {
        const struct series_desc series[] = {
                { .metric = METRIC_DEVICE_MEMORY_USED, .label_values = { "0" } },
        };
        struct expo *e = NULL;
        struct snapshot *snap = snapshot_new(1);
        struct buf out = { 0 };

        /* What the loop leaves after a failed read: nothing valid, up 0. */
        snap->values[0] = 0;
        snap->valid[0] = 0;
        snap->collector_up[0] = 0;
        assert_int_equal(expo_new(series, 1, &e), 0);
        expo_render(e, snap, &self, ACCEPT_TEXT, &out);
        buf_append(&out, "", 1);
        assert_non_null(strstr(out.data, "neurond_collector_up{collector=\"backend\"} 0\n"));
        assert_null(strstr(out.data, "neuron_device_memory_used_bytes{"));
        assert_null(strstr(out.data, "NaN"));
        buf_free(&out);
        snapshot_unref(snap);
        expo_free(e);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(expo_render__families__grouped_with_help_and_type),
                cmocka_unit_test(expo_render__backend_devices__zero_or_count),
                cmocka_unit_test(expo_render__invalid_value__series_absent),
                cmocka_unit_test(expo_render__label_value__escaped),
                cmocka_unit_test(expo_render__empty_label_values__left_out),
                cmocka_unit_test(expo_render__instance__info_families_and_labels),
                cmocka_unit_test(expo_escape_label_value__invalid_utf8__replacement_character),
                cmocka_unit_test(utf8_sanitize__invalid_bytes__replaced_and_cut_at_characters),
                cmocka_unit_test(buf_double__values__shortest_round_trip),
                cmocka_unit_test(expo_render__no_snapshot__build_info_only),
                cmocka_unit_test(expo_render__openmetrics__counter_family_unit_and_eof),
                cmocka_unit_test(expo_render__text__no_unit_nor_eof),
                cmocka_unit_test(expo_render__self_counters__rendered_by_code),
                cmocka_unit_test(expo_render__remote_write__counters_per_endpoint),
                cmocka_unit_test(expo_render_with_pods__held_core_and_device__pod_labels_after_their_own),
                cmocka_unit_test(expo_render__collector_down__up_zero),
        };
        return cmocka_run_group_tests_name("expo", tests, NULL, NULL);
}
