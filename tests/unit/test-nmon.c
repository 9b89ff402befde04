#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "collectors/nmon.h"
#include "tests/unit/assert-double.h"

static char path_buf[1024];

static const char *srcdir_path(const char *rel) {
        const char *top = getenv("top_srcdir");
        snprintf(path_buf, sizeof(path_buf), "%s/%s", top ? top : ".", rel);
        return path_buf;
}

/* Line n (from 1) of the fixture written from the user guide's schema. */
static char *fixture_line(int n) {
        FILE *f = fopen(srcdir_path("tests/data/neuron-monitor/run.jsonl"), "r");
        char *line = NULL;
        size_t cap = 0;
        ssize_t len = -1;
        assert_non_null(f);
        for (int i = 0; i < n; i++)
                len = getline(&line, &cap, f);
        fclose(f);
        assert_true(len > 0);
        if (line[len - 1] == '\n')
                line[len - 1] = '\0';
        return line;
}

static int parse(const char *text, struct nmon_report *rep) {
        char err[128];
        int r = nmon_parse(text, strlen(text), rep, err, sizeof(err));
        assert_true(r == 0 || err[0] != '\0');
        return r;
}

static void nmon_parse__user_guide_document__all_groups(void **state) {
        (void) state;
        struct nmon_report rep;
        char *line = fixture_line(1);
        assert_int_equal(parse(line, &rep), 0);
        assert_int_equal(rep.lnc, 1);
        assert_int_equal(rep.cores_per_device, 2);
        assert_int_equal(rep.n_runtimes, 1);
        const struct nmon_runtime *rt = &rep.runtimes[0];
        assert_int_equal(rt->pid, 4242);
        assert_string_equal(rt->tag, "train");
        assert_string_equal(rt->error, "");
        assert_int_equal(rt->n_cores, 2);
        assert_int_equal(rt->cores[1].index, 1);
        assert_true(rt->cores[1].has_util && rt->cores[1].has_flops && rt->cores[1].has_mem);
        assert_double_near(rt->cores[1].util, 0.51, 1e-12);
        assert_double_near(rt->cores[0].flops, 2e9, 0);
        assert_double_near(rt->cores[0].mem[0], 193986816, 0);
        assert_double_near(rt->cores[0].mem[3], 1024, 0);
        assert_true(rt->has_exec);
        assert_double_near(rt->status[EXEC_COMPLETED], 100, 0);
        assert_double_near(rt->status[EXEC_FAILED_TO_QUEUE], 2, 0);
        assert_double_near(rt->errors[EXEC_ERROR_GENERIC], 1, 0);
        assert_true(rt->has_latency && rt->has_device_latency);
        assert_double_near(rt->latency[3], 0.014, 1e-12);
        assert_double_near(rt->device_latency[6], 0.016, 1e-12);
        assert_true(rt->has_memory && rt->has_host_breakdown);
        assert_double_near(rt->memory_device, 12519788544.0, 0);
        assert_double_near(rt->host_memory[HOST_MEM_DMA_BUFFERS], 1048576, 0);
        assert_true(rt->has_vcpu);
        assert_double_near(rt->vcpu_user, 0.425, 1e-12);
        assert_double_near(rt->vcpu_system, 0.125, 1e-12);
        nmon_report_free(&rep);
        nmon_report_free(&rep); /* leaves it empty: twice is harmless */
        free(line);
}

static void nmon_parse__untagged_runtime_without_executions__pid_tag_latency_absent(void **state) {
        (void) state;
        struct nmon_report rep;
        char *line = fixture_line(2);
        assert_int_equal(parse(line, &rep), 0);
        assert_int_equal(rep.n_runtimes, 2);
        assert_string_equal(rep.runtimes[1].tag, "5151");
        assert_true(rep.runtimes[1].has_exec);
        assert_false(rep.runtimes[1].has_latency);
        assert_false(rep.runtimes[1].has_device_latency);
        nmon_report_free(&rep);
        free(line);
}

static void nmon_parse__group_error__group_absent_error_kept(void **state) {
        (void) state;
        struct nmon_report rep;
        char *line = fixture_line(4);
        assert_int_equal(parse(line, &rep), 0);
        assert_int_equal(rep.n_runtimes, 1);
        const struct nmon_runtime *rt = &rep.runtimes[0];
        assert_string_equal(rt->error, "neuroncore_counters: failed to read the NeuronCore counters");
        assert_false(rt->cores[0].has_util);
        assert_false(rt->cores[0].has_flops);
        assert_true(rt->cores[0].has_mem);
        assert_true(rt->has_exec);
        nmon_report_free(&rep);
        free(line);
}

static void nmon_parse__malformed__refused(void **state) {
        (void) state;
        struct nmon_report rep;
        char *line = fixture_line(3);
        static const char *const bad[] = {
                "",
                "[]",
                "{} {}",
                "{\"neuron_runtime_data\": {}}",
                "{\"neuron_runtime_data\": [{\"pid\": 0}]}",
                "{\"neuron_runtime_data\": [{\"pid\": 1.5}]}",
                "{\"neuron_runtime_data\": [{\"pid\": \"7\"}]}",
                "{\"neuron_runtime_data\": [{\"pid\": 7}, {\"pid\": 7}]}",
                "{\"neuron_runtime_data\": [{\"pid\": 7, \"report\": {\"neuroncore_counters\": {\"period\": 1, "
                "\"neuroncores_in_use\": {\"0\": {\"neuroncore_utilization\": 150}}}}}]}",
                "{\"neuron_runtime_data\": [{\"pid\": 7, \"report\": {\"neuroncore_counters\": {\"period\": 1, "
                "\"neuroncores_in_use\": {\"01\": {}}}}}]}",
                "{\"neuron_runtime_data\": [{\"pid\": 7, \"report\": {\"neuroncore_counters\": {\"period\": 1, "
                "\"neuroncores_in_use\": {\"4096\": {}}}}}]}",
                "{\"neuron_runtime_data\": [{\"pid\": 7, \"report\": {\"memory_used\": {\"neuron_runtime_used_bytes\": "
                "{\"host\": -1, \"neuron_device\": 0}}}}]}",
                "{\"neuron_runtime_data\": [{\"pid\": 7, \"report\": {\"execution_stats\": {\"error_summary\": {}, "
                "\"execution_summary\": {\"completed\": 1e300}}}}]}",
                "{\"a\": [[[[[[[[[[[[[[[[[[[[1]]]]]]]]]]]]]]]]]]]}",
        };
        assert_int_equal(parse(line, &rep), -EINVAL);
        for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
                int r = parse(bad[i], &rep);
                if (r != -EINVAL)
                        fail_msg("accepted or %d: %s", r, bad[i]);
        }
        char err[64];
        assert_int_equal(nmon_parse("{}\0", 3, &rep, err, sizeof(err)), -EINVAL);
        assert_int_equal(nmon_parse("{}", NMON_LINE_MAX + 1, &rep, err, sizeof(err)), -E2BIG);
        free(line);
}

static void nmon_parse__bounds__runtimes_and_cores_capped(void **state) {
        (void) state;
        struct nmon_report rep;
        size_t size = 64 * (NMON_RUNTIMES_MAX + 2), at = 0;
        char *text = malloc(size);
        assert_non_null(text);
        at += (size_t) snprintf(text + at, size - at, "{\"neuron_runtime_data\": [");
        for (int i = 1; i <= NMON_RUNTIMES_MAX + 1; i++)
                at += (size_t) snprintf(text + at, size - at, "%s{\"pid\": %d}", i > 1 ? "," : "", i);
        snprintf(text + at, size - at, "]}");
        assert_int_equal(parse(text, &rep), -E2BIG);
        free(text);

        size = 64 * (NMON_CORES_MAX + 2);
        text = malloc(size);
        assert_non_null(text);
        at = (size_t) snprintf(text, size,
                               "{\"neuron_runtime_data\": [{\"pid\": 9, \"report\": {\"neuroncore_counters\": "
                               "{\"period\": 1, \"neuroncores_in_use\": {");
        for (int i = 0; i <= NMON_CORES_MAX; i++)
                at += (size_t) snprintf(text + at, size - at, "%s\"%d\": {}", i ? "," : "", i);
        snprintf(text + at, size - at, "}}}}]}");
        assert_int_equal(parse(text, &rep), -E2BIG);
        free(text);
}

static void nmon_parse__hostile_tag__cleaned_and_cut(void **state) {
        (void) state;
        struct nmon_report rep;
        char text[512];
        snprintf(text, sizeof(text),
                 "{\"neuron_runtime_data\": [{\"pid\": 9, \"neuron_runtime_tag\": \"a\\nb\\u00e9\\\"%070d\"}]}", 0);
        assert_int_equal(parse(text, &rep), 0);
        assert_int_equal(strlen(rep.runtimes[0].tag), SERIES_LABEL_VALUE_MAX - 1);
        assert_int_equal(strncmp(rep.runtimes[0].tag, "a?b??\"000", 9), 0);
        nmon_report_free(&rep);
}

/* A runtime as neuron-monitor lists it, every group present: cores first
 * to last at util percent, 10 completions and 1 generic error, p50
 * latency lat (null when 0), 1000 host and 2000 device bytes, vCPU user
 * 30 %; the memory group in error when mem_error. */
static void runtime_json(char *out, size_t size, unsigned pid, const char *tag, unsigned first, unsigned last,
                         double util, double lat, bool mem_error) {
        char cores[8192] = "", mem[16384] = "", latency[256] = "null";
        size_t a = 0, b = 0;
        for (unsigned c = first; c <= last; c++) {
                a += (size_t) snprintf(cores + a, sizeof(cores) - a,
                                       "%s\"%u\": {\"neuroncore_utilization\": %g, \"flops\": 100}",
                                       c > first ? "," : "", c, util);
                b += (size_t) snprintf(
                        mem + b, sizeof(mem) - b,
                        "%s\"%u\": {\"constants\": 1, \"model_code\": 2, \"model_shared_scratchpad\": 0, "
                        "\"runtime_memory\": 0, \"tensors\": 4}",
                        c > first ? "," : "", c);
        }
        if (lat > 0)
                snprintf(latency, sizeof(latency),
                         "{\"p0\": %g, \"p1\": %g, \"p25\": %g, \"p50\": %g, \"p75\": %g, \"p99\": %g, \"p100\": %g}",
                         lat, lat, lat, lat, lat, lat, lat);
        snprintf(
                out, size,
                "{\"pid\": %u, \"neuron_runtime_tag\": \"%s\", \"error\": \"\", \"report\": {"
                "\"neuroncore_counters\": {\"period\": 1, \"error\": \"\", \"neuroncores_in_use\": {%s}}, "
                "\"execution_stats\": {\"period\": 1, \"error\": \"\", \"error_summary\": {\"generic\": 1, \"numerical\": 0, "
                "\"transient\": 0, \"model\": 0, \"runtime\": 0, \"hardware\": 0}, \"execution_summary\": {\"completed\": "
                "10, \"completed_with_err\": 0, \"completed_with_num_err\": 0, \"timed_out\": 0, \"incorrect_input\": 0, "
                "\"failed_to_queue\": 0}, \"latency_stats\": {\"total_latency\": %s, \"device_latency\": %s}}, "
                "\"memory_used\": {\"period\": 1, \"error\": \"%s\", \"neuron_runtime_used_bytes\": {\"host\": 1000, "
                "\"neuron_device\": 2000, \"usage_breakdown\": {\"host\": {\"application_memory\": 1000, \"constants\": 0, "
                "\"dma_buffers\": 0, \"tensors\": 0}, \"neuroncore_memory_usage\": {%s}}}}, "
                "\"neuron_runtime_vcpu_usage\": {\"period\": 1, \"error\": \"\", \"vcpu_usage\": {\"user\": 30, "
                "\"system\": 5}}}}",
                pid, tag, cores, latency, latency, mem_error ? "cannot read the memory" : "", mem);
}

static char *document(int n, const char *const *runtimes) {
        size_t size = 64;
        for (int i = 0; i < n; i++)
                size += strlen(runtimes[i]) + 1;
        char *doc = malloc(size);
        assert_non_null(doc);
        size_t at = (size_t) snprintf(doc, size, "{\"neuron_runtime_data\": [");
        for (int i = 0; i < n; i++)
                at += (size_t) snprintf(doc + at, size - at, "%s%s", i ? "," : "", runtimes[i]);
        snprintf(doc + at, size - at, "]}");
        return doc;
}

/* Workers under one tag: one runtime, its cores the union, counts and
 * bytes added, ratios added up to 1, the highest latency, a sum absent
 * when a worker lacks its part; other tags untouched. */
static void nmon_merge_tags__shared_tag__one_runtime_per_tag(void **state) {
        (void) state;
        static char a[8192], b[8192], c[8192], d[8192];
        struct nmon_report rep, tags;
        runtime_json(a, sizeof(a), 100, "job", 0, 1, 40, 0.002, false);
        runtime_json(b, sizeof(b), 101, "solo", 4, 4, 10, 0, false);
        runtime_json(c, sizeof(c), 102, "job", 0, 3, 70, 0.005, false);
        runtime_json(d, sizeof(d), 103, "job", 2, 3, 5, 0, false);
        char *doc = document(4, (const char *const[]){ a, b, c, d });
        assert_int_equal(parse(doc, &rep), 0);
        assert_int_equal(rep.n_runtimes, 4);
        assert_int_equal(nmon_merge_tags(&rep, &tags), 0);
        assert_int_equal(tags.n_runtimes, 2);
        const struct nmon_runtime *job = &tags.runtimes[0], *solo = &tags.runtimes[1];
        assert_string_equal(job->tag, "job");
        assert_int_equal(job->pid, 100);
        assert_string_equal(solo->tag, "solo");
        assert_int_equal(solo->n_cores, 1);
        assert_double_near(solo->cores[0].util, 0.1, 1e-12);
        assert_int_equal(job->n_cores, 4);
        for (unsigned k = 0; k < 4; k++)
                assert_int_equal(job->cores[k].index, k);
        assert_double_near(job->cores[0].util, 1, 0);        /* 40 % + 70 %, capped */
        assert_double_near(job->cores[2].util, 0.75, 1e-12); /* 70 % + 5 % */
        assert_double_near(job->cores[1].flops, 200, 0);
        assert_double_near(job->cores[3].mem[4], 8, 0);
        assert_true(job->cores[3].has_util && job->cores[3].has_mem);
        assert_double_near(job->status[EXEC_COMPLETED], 30, 0);
        assert_double_near(job->errors[EXEC_ERROR_GENERIC], 3, 0);
        assert_true(job->has_latency);
        assert_double_near(job->latency[3], 0.005, 1e-12);
        assert_true(job->has_memory && job->has_host_breakdown);
        assert_double_near(job->memory_device, 6000, 0);
        assert_double_near(job->host_memory[HOST_MEM_APPLICATION], 3000, 0);
        assert_double_near(job->vcpu_user, 0.9, 1e-12);
        assert_double_near(job->vcpu_system, 0.15, 1e-12);
        nmon_report_free(&tags);
        nmon_report_free(&rep);
        free(doc);

        /* One worker's memory group fails: the tag's sums are absent, its
         * error is said; its cores keep the other groups. */
        runtime_json(d, sizeof(d), 103, "job", 2, 3, 5, 0, true);
        doc = document(3, (const char *const[]){ a, c, d });
        assert_int_equal(parse(doc, &rep), 0);
        assert_int_equal(nmon_merge_tags(&rep, &tags), 0);
        assert_int_equal(tags.n_runtimes, 1);
        job = &tags.runtimes[0];
        assert_string_equal(job->error, "memory_used: cannot read the memory");
        assert_false(job->has_memory);
        assert_false(job->has_host_breakdown);
        assert_true(job->cores[0].has_mem);
        assert_false(job->cores[2].has_mem);
        assert_true(job->cores[2].has_util);
        nmon_report_free(&tags);
        nmon_report_free(&rep);
        free(doc);
}

/* ---- the collector ---------------------------------------------------- */

static char scratch[256];

static int scratch_teardown(void **state) {
        char cmd[512];
        (void) state;
        snprintf(cmd, sizeof(cmd), "rm -rf '%s'", scratch);
        assert_int_equal(system(cmd), 0);
        return 0;
}

static const char *make_scratch(void) {
        snprintf(scratch, sizeof(scratch), "/tmp/test-nmon-XXXXXX");
        assert_non_null(mkdtemp(scratch));
        return scratch;
}

/* The index of the series with these label values ("" for absent), or -1. */
static long find(const struct collector *c, enum metric_id metric, const char *l0, const char *l1, const char *l2,
                 const char *l3) {
        const char *want[METRIC_LABELS_MAX] = { l0, l1, l2, l3 };
        for (size_t i = 0; i < c->inv.n_series; i++) {
                const struct series_desc *s = &c->inv.series[i];
                bool same = s->metric == metric;
                for (int k = 0; k < METRIC_LABELS_MAX && same; k++)
                        same = strcmp(s->label_values[k], want[k] ? want[k] : "") == 0;
                if (same)
                        return (long) i;
        }
        return -1;
}

struct values {
        struct sample_batch b;
        int r;
};

static void read_all(struct collector *c, int64_t now_ms, struct values *v) {
        free(v->b.values);
        free(v->b.valid);
        v->b.n = c->inv.n_series;
        v->b.values = calloc(v->b.n + 1, sizeof(double));
        v->b.valid = calloc(v->b.n + 1, 1);
        assert_non_null(v->b.values);
        assert_non_null(v->b.valid);
        v->r = c->ops->read(c, now_ms, &v->b);
}

static double value(const struct values *v, long i) {
        assert_true(i >= 0);
        assert_true(v->b.valid[i]);
        return v->b.values[i];
}

/* Writes a line into the monitor's FIFO and waits (10 s at most) until
 * the collector has read it: its document is then the latest. */
static void send_line(struct collector *c, int fd, const char *text) {
        uint64_t before = nmon_lines_read(c);
        size_t len = strlen(text);
        for (size_t at = 0; at < len;) {
                ssize_t n = write(fd, text + at, len - at);
                assert_true(n > 0);
                at += (size_t) n;
        }
        assert_int_equal(write(fd, "\n", 1), 1);
        for (int i = 0; i < 10000 && nmon_lines_read(c) == before; i++)
                usleep(1000);
        assert_true(nmon_lines_read(c) > before);
}

static void nmon_collector__fifo__runtimes_come_and_go_counters_add(void **state) {
        (void) state;
        char spec[2048], fifo[300], err[256];
        struct collector *c = NULL, *plain = NULL;
        struct values v = { 0 };
        snprintf(fifo, sizeof(fifo), "%s/monitor", make_scratch());
        assert_int_equal(mkfifo(fifo, 0600), 0);
        snprintf(spec, sizeof(spec), "sysfs:%s,monitor-fifo=%s", srcdir_path("tests/data/trn1"), fifo);
        assert_int_equal(collector_open_spec(spec, &c, err, sizeof(err)), 0);
        snprintf(spec, sizeof(spec), "sysfs:%s", srcdir_path("tests/data/trn1"));
        assert_int_equal(collector_open_spec(spec, &plain, err, sizeof(err)), 0);
        assert_string_equal(c->ops->name, "neuron-monitor");
        assert_int_equal(c->inv.n_devices, plain->inv.n_devices);
        assert_int_equal(c->inv.n_runtimes, 0);
        /* sysfs's execution counters give way to the runtimes'. */
        assert_true(find(plain, METRIC_CORE_EXECUTION_STATUS, "0", "0", NULL, "completed") >= 0);
        assert_int_equal(find(c, METRIC_CORE_EXECUTION_STATUS, "0", "0", NULL, "completed"), -1);
        assert_true(find(c, METRIC_CORE_MEMORY_CONSTANTS, "0", "0", NULL, NULL) >= 0);
        int w = open(fifo, O_WRONLY);
        assert_true(w >= 0);

        char *line1 = fixture_line(1), *line2 = fixture_line(2), *line3 = fixture_line(3), *line4 = fixture_line(4);
        int64_t now = 1000000;
        assert_int_equal(c->ops->refresh(c, now), 0);
        send_line(c, w, line1);
        assert_int_equal(c->ops->refresh(c, now += 1000), 1);
        assert_int_equal(c->inv.n_runtimes, 1);
        assert_int_equal(c->inv.runtimes[0].pid, 4242);
        assert_int_equal(c->inv.runtimes[0].n_cores, 2);
        read_all(c, now, &v);
        assert_int_equal(v.r, 0);
        long done = find(c, METRIC_CORE_EXECUTION_STATUS, NULL, NULL, "train", "completed");
        long util0 = find(c, METRIC_CORE_UTILIZATION, "0", "0", "train", NULL);
        long flops1 = find(c, METRIC_CORE_FLOPS, "0", "1", "train", NULL);
        assert_double_near(value(&v, done), 100, 0);
        assert_double_near(value(&v, util0), 0.5, 1e-12);
        assert_double_near(value(&v, flops1), 2e9, 0);
        assert_double_near(value(&v, find(c, METRIC_RUNTIME_VCPU_USAGE, "train", "user", NULL, NULL)), 0.425, 1e-12);
        assert_double_near(value(&v, find(c, METRIC_RUNTIME_LATENCY, "train", "p50", NULL, NULL)), 0.014, 1e-12);
        assert_double_near(value(&v, find(c, METRIC_RUNTIME_INFO, "train", "4242", NULL, NULL)), 1, 0);
        /* A held core's memory kinds carry the runtime; a free one's stay sysfs's. */
        assert_int_equal(find(c, METRIC_CORE_MEMORY_CONSTANTS, "0", "0", NULL, NULL), -1);
        assert_double_near(value(&v, find(c, METRIC_CORE_MEMORY_CONSTANTS, "0", "0", "train", NULL)), 193986816, 0);
        assert_true(find(c, METRIC_CORE_MEMORY_CONSTANTS, "3", "2", NULL, NULL) >= 0);

        /* The next period adds to the counters; the series stay. */
        send_line(c, w, line1);
        assert_int_equal(c->ops->refresh(c, now += 1000), 0);
        read_all(c, now, &v);
        assert_double_near(value(&v, done), 200, 0);
        assert_double_near(value(&v, flops1), 4e9, 0);

        /* A second runtime comes, with no execution yet: no latency. */
        send_line(c, w, line2);
        assert_int_equal(c->ops->refresh(c, now += 1000), 1);
        assert_int_equal(c->inv.n_runtimes, 2);
        read_all(c, now, &v);
        long lat = find(c, METRIC_RUNTIME_LATENCY, "5151", "p50", NULL, NULL);
        assert_true(lat >= 0);
        assert_false(v.b.valid[lat]);
        assert_double_near(value(&v, find(c, METRIC_CORE_UTILIZATION, "3", "2", "5151", NULL)), 0.52, 1e-12);
        assert_double_near(value(&v, find(c, METRIC_CORE_EXECUTION_STATUS, NULL, NULL, "train", "completed")), 300, 0);

        /* A malformed line is skipped and said; nothing else changes. */
        send_line(c, w, line3);
        assert_int_equal(c->ops->refresh(c, now += 1000), 0);
        read_all(c, now, &v);
        assert_int_equal(v.r, 1);
        assert_non_null(strstr(c->reason, "a line skipped: not a JSON object"));
        assert_int_equal(c->inv.n_runtimes, 2);

        /* The second runtime exits; a group's error leaves its series unread. */
        send_line(c, w, line4);
        assert_int_equal(c->ops->refresh(c, now += 1000), 1);
        assert_int_equal(c->inv.n_runtimes, 1);
        assert_int_equal(find(c, METRIC_RUNTIME_INFO, "5151", "5151", NULL, NULL), -1);
        read_all(c, now, &v);
        assert_int_equal(v.r, 1);
        assert_non_null(strstr(c->reason, "runtime train: neuroncore_counters: failed"));
        util0 = find(c, METRIC_CORE_UTILIZATION, "0", "0", "train", NULL);
        assert_false(v.b.valid[util0]);
        assert_double_near(value(&v, find(c, METRIC_CORE_EXECUTION_STATUS, NULL, NULL, "train", "completed")), 400, 0);

        /* Half a line waits for the rest; a silent monitor's runtimes go. */
        assert_int_equal(write(w, "{\"neuron", 8), 8);
        assert_int_equal(c->ops->refresh(c, now += 1000), 0);
        assert_int_equal(c->ops->refresh(c, now += NMON_STALE_MS + 1), 1);
        assert_int_equal(c->inv.n_runtimes, 0);
        assert_true(find(c, METRIC_CORE_MEMORY_CONSTANTS, "0", "0", NULL, NULL) >= 0);

        close(w);
        free(line1);
        free(line2);
        free(line3);
        free(line4);
        free(v.b.values);
        free(v.b.valid);
        collector_close(plain);
        collector_close(c);
}

/* No two series of the collector have the same family and labels. */
static void assert_series_unique(const struct collector *c) {
        for (size_t i = 0; i < c->inv.n_series; i++)
                for (size_t j = i + 1; j < c->inv.n_series; j++) {
                        const struct series_desc *a = &c->inv.series[i], *b = &c->inv.series[j];
                        bool same = a->metric == b->metric;
                        for (int k = 0; k < METRIC_LABELS_MAX && same; k++)
                                same = strcmp(a->label_values[k], b->label_values[k]) == 0;
                        if (same)
                                fail_msg("series %zu and %zu are the same: metric %d {%s,%s,%s,%s}", i, j, a->metric,
                                         a->label_values[0], a->label_values[1], a->label_values[2],
                                         a->label_values[3]);
                }
}

/* Workers under one tag, each listing cores the others list too: every
 * series once, a tag's figures over its workers, each process in
 * neuron_runtime_info and the inventory; the tag's counters go on when a
 * worker leaves. */
static void nmon_collector__shared_tag__series_once_counters_go_on(void **state) {
        (void) state;
        static char a[8192], b[8192], c2[8192], d[8192];
        char spec[2048], fifo[300], err[256];
        struct collector *c = NULL;
        struct values v = { 0 };
        snprintf(fifo, sizeof(fifo), "%s/monitor", make_scratch());
        assert_int_equal(mkfifo(fifo, 0600), 0);
        snprintf(spec, sizeof(spec), "sysfs:%s,monitor-fifo=%s", srcdir_path("tests/data/trn1"), fifo);
        assert_int_equal(collector_open_spec(spec, &c, err, sizeof(err)), 0);
        int w = open(fifo, O_WRONLY);
        assert_true(w >= 0);
        runtime_json(a, sizeof(a), 100, "job", 0, 1, 40, 0.002, false);
        runtime_json(b, sizeof(b), 101, "solo", 3, 3, 10, 0, false);
        runtime_json(c2, sizeof(c2), 102, "job", 0, 3, 0, 0.005, false);
        runtime_json(d, sizeof(d), 103, "job", 2, 3, 60, 0, false);
        char *doc1 = document(4, (const char *const[]){ a, b, c2, d }),
             *doc2 = document(2, (const char *const[]){ a, c2 });
        int64_t now = 1000000;

        send_line(c, w, doc1);
        assert_int_equal(c->ops->refresh(c, now), 1);
        assert_series_unique(c);
        assert_int_equal(c->inv.n_runtimes, 4);
        for (int i = 0; i < 4; i++) {
                char pid[16];
                snprintf(pid, sizeof(pid), "%u", c->inv.runtimes[i].pid);
                assert_true(find(c, METRIC_RUNTIME_INFO, c->inv.runtimes[i].tag, pid, NULL, NULL) >= 0);
        }
        read_all(c, now, &v);
        long done = find(c, METRIC_CORE_EXECUTION_STATUS, NULL, NULL, "job", "completed");
        assert_double_near(value(&v, done), 30, 0);
        assert_double_near(value(&v, find(c, METRIC_CORE_UTILIZATION, "0", "0", "job", NULL)), 0.4, 1e-12);
        assert_double_near(value(&v, find(c, METRIC_CORE_UTILIZATION, "3", "2", "job", NULL)), 0.6, 1e-12);
        assert_double_near(value(&v, find(c, METRIC_CORE_UTILIZATION, "3", "3", "solo", NULL)), 0.1, 1e-12);
        assert_double_near(value(&v, find(c, METRIC_RUNTIME_LATENCY, "job", "p99", NULL, NULL)), 0.005, 1e-12);
        assert_double_near(value(&v, find(c, METRIC_RUNTIME_MEMORY_USED, "job", "neuron_device", NULL, NULL)), 6000, 0);

        /* A worker leaves: the tag's counters add the others' counts. */
        send_line(c, w, doc2);
        assert_int_equal(c->ops->refresh(c, now += 1000), 1);
        assert_series_unique(c);
        assert_int_equal(c->inv.n_runtimes, 2);
        assert_int_equal(find(c, METRIC_RUNTIME_INFO, "job", "103", NULL, NULL), -1);
        assert_int_equal(find(c, METRIC_CORE_UTILIZATION, "3", "3", "solo", NULL), -1);
        read_all(c, now, &v);
        assert_int_equal(v.r, 0);
        done = find(c, METRIC_CORE_EXECUTION_STATUS, NULL, NULL, "job", "completed");
        assert_double_near(value(&v, done), 50, 0);
        assert_double_near(value(&v, find(c, METRIC_CORE_FLOPS, "3", "2", "job", NULL)), 300, 0);
        assert_double_near(value(&v, find(c, METRIC_CORE_UTILIZATION, "3", "2", "job", NULL)), 0, 0);

        close(w);
        free(doc1);
        free(doc2);
        free(v.b.values);
        free(v.b.valid);
        collector_close(c);
}

/* Documents written between two ticks are read as they come, however
 * large (a document of over 1 MB fills the pipe 16 times over): the tick
 * takes the latest, whole, and the counters count every one. (Small ones
 * first: under valgrind the large one is past a second's parsing, and
 * documents right after it in that second would be skipped.) */
static void nmon_collector__fifo_between_ticks__latest_whole_every_one_counted(void **state) {
        (void) state;
        enum { RUNTIMES = 192, SIZE = 24576 };
        char spec[2048], fifo[300], err[256];
        struct collector *c = NULL;
        struct values v = { 0 };
        snprintf(fifo, sizeof(fifo), "%s/monitor", make_scratch());
        assert_int_equal(mkfifo(fifo, 0600), 0);
        snprintf(spec, sizeof(spec), "sysfs:%s,monitor-fifo=%s", srcdir_path("tests/data/trn1"), fifo);
        assert_int_equal(collector_open_spec(spec, &c, err, sizeof(err)), 0);
        int w = open(fifo, O_WRONLY);
        assert_true(w >= 0);

        /* Three documents before a tick: the last one is the runtimes,
         * each one's executions are counted. */
        char *line1 = fixture_line(1), *line2 = fixture_line(2), *line4 = fixture_line(4);
        int64_t now = 1000000;
        send_line(c, w, line1);
        send_line(c, w, line2);
        send_line(c, w, line4);
        assert_int_equal(c->ops->refresh(c, now), 1);
        assert_int_equal(c->inv.n_runtimes, 1);
        read_all(c, now, &v);
        assert_double_near(value(&v, find(c, METRIC_CORE_EXECUTION_STATUS, NULL, NULL, "train", "completed")), 300, 0);

        /* 192 processes under 64 tags, each listing 32 cores. */
        char *runtimes[RUNTIMES];
        for (int i = 0; i < RUNTIMES; i++) {
                char tag[16];
                runtimes[i] = malloc(SIZE);
                assert_non_null(runtimes[i]);
                snprintf(tag, sizeof(tag), "w%d", i % 64);
                runtime_json(runtimes[i], SIZE, 1000 + (unsigned) i, tag, 0, 31, 1, 0.001, false);
        }
        char *big = document(RUNTIMES, (const char *const *) runtimes);
        assert_true(strlen(big) > 1000000);
        send_line(c, w, big);
        assert_int_equal(c->ops->refresh(c, now += 1000), 1);
        assert_int_equal(c->inv.n_runtimes, RUNTIMES);
        assert_true(find(c, METRIC_RUNTIME_INFO, "w63", "1127", NULL, NULL) >= 0);
        assert_series_unique(c);
        read_all(c, now, &v);
        assert_int_equal(v.r, 0);
        assert_double_near(value(&v, find(c, METRIC_CORE_UTILIZATION, "3", "3", "w0", NULL)), 0.03, 1e-12);
        assert_double_near(value(&v, find(c, METRIC_CORE_EXECUTION_STATUS, NULL, NULL, "w0", "completed")), 30, 0);

        close(w);
        for (int i = 0; i < RUNTIMES; i++)
                free(runtimes[i]);
        free(big);
        free(line1);
        free(line2);
        free(line4);
        free(v.b.values);
        free(v.b.valid);
        collector_close(c);
}

/* The driver's devices appear after the monitor's runtime did, and go
 * again: the runtime's per-core series follow sysfs's devices, and each
 * change is a new list (refresh 1). */
static void nmon_collector__devices_come_and_go__core_series_follow(void **state) {
        (void) state;
        char spec[2048], fifo[300], err[256], cmd[1600], dev[600], aside[600];
        struct collector *c = NULL;
        struct values v = { 0 };
        make_scratch();
        snprintf(cmd, sizeof(cmd), "cp -R '%s/.' '%s' && chmod -R u+w '%s'", srcdir_path("tests/data/trn1"), scratch,
                 scratch);
        assert_int_equal(system(cmd), 0);
        snprintf(dev, sizeof(dev), "%s/devices/virtual/neuron_device", scratch);
        snprintf(aside, sizeof(aside), "%s/aside", scratch);
        snprintf(fifo, sizeof(fifo), "%s/monitor", scratch);
        assert_int_equal(mkfifo(fifo, 0600), 0);
        assert_int_equal(rename(dev, aside), 0);
        snprintf(spec, sizeof(spec), "sysfs:%s,monitor-fifo=%s", scratch, fifo);
        assert_int_equal(collector_open_spec(spec, &c, err, sizeof(err)), 0);
        assert_int_equal(c->inv.n_devices, 0);
        assert_non_null(strstr(c->inv.backend_reason, "/devices/virtual/neuron_device is missing"));
        int w = open(fifo, O_WRONLY);
        assert_true(w >= 0);
        char *line1 = fixture_line(1);
        int64_t now = 1000000;

        send_line(c, w, line1);
        assert_int_equal(c->ops->refresh(c, now), 1);
        assert_int_equal(c->inv.n_runtimes, 1);
        assert_int_equal(c->inv.runtimes[0].n_cores, 0); /* no device has its cores yet */
        assert_true(find(c, METRIC_RUNTIME_INFO, "train", "4242", NULL, NULL) >= 0);
        assert_int_equal(find(c, METRIC_CORE_UTILIZATION, "0", "0", "train", NULL), -1);

        assert_int_equal(rename(aside, dev), 0);
        send_line(c, w, line1);
        assert_int_equal(c->ops->refresh(c, now += 1000), 1);
        assert_int_equal(c->inv.n_devices, 2);
        assert_string_equal(c->inv.backend_reason, "");
        assert_non_null(strstr(c->inv.backend, "+monitor"));
        assert_int_equal(c->inv.runtimes[0].n_cores, 2);
        read_all(c, now, &v);
        assert_int_equal(v.r, 0);
        assert_double_near(value(&v, find(c, METRIC_CORE_UTILIZATION, "0", "0", "train", NULL)), 0.5, 1e-12);
        assert_true(find(c, METRIC_DEVICE_UP, "3", NULL, NULL, NULL) >= 0);
        assert_int_equal(c->ops->refresh(c, now += 1000), 0);

        assert_int_equal(rename(dev, aside), 0);
        assert_int_equal(c->ops->refresh(c, now += 1000), 1);
        assert_int_equal(c->inv.n_devices, 0);
        assert_int_equal(find(c, METRIC_CORE_UTILIZATION, "0", "0", "train", NULL), -1);
        assert_int_equal(find(c, METRIC_DEVICE_UP, "3", NULL, NULL, NULL), -1);
        assert_true(find(c, METRIC_RUNTIME_INFO, "train", "4242", NULL, NULL) >= 0);
        read_all(c, now, &v);
        assert_int_equal(v.r, 0);

        close(w);
        free(line1);
        free(v.b.values);
        free(v.b.valid);
        collector_close(c);
}

static int64_t wall_ms(void) {
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        return (int64_t) ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Refreshes and reads every 20 ms, for at most 10 s, until the runtime
 * count is n, once the reason has said text (when given). */
static bool wait_for(struct collector *c, size_t n, const char *text, struct values *v) {
        bool said = !text;
        for (int i = 0; i < 500; i++) {
                int64_t now = wall_ms();
                assert_true(c->ops->refresh(c, now) >= 0);
                read_all(c, now, v);
                said = said || strstr(c->reason, text);
                if (c->inv.n_runtimes == n && said)
                        return true;
                usleep(20000);
        }
        print_message("# waited for %zu runtimes and '%s'; %zu runtimes, reason '%s'\n", n, text ? text : "",
                      c->inv.n_runtimes, c->reason);
        return false;
}

static void nmon_collector__child_killed_or_exiting__restarted_with_reason(void **state) {
        (void) state;
        char spec[2048], err[256], pidfile[300];
        struct collector *c = NULL;
        struct values v = { 0 };
        snprintf(pidfile, sizeof(pidfile), "%s/pid", make_scratch());
        /* A monitor printing the first document every 50 ms until killed. */
        char *top = strdup(srcdir_path(""));
        snprintf(
                spec, sizeof(spec),
                "sysfs:%stests/data/trn1,monitor=echo $$ >%s; while :; do head -n 1 %stests/data/neuron-monitor/run.jsonl; "
                "sleep 0.05; done",
                top, pidfile, top);
        assert_int_equal(collector_open_spec(spec, &c, err, sizeof(err)), 0);
        assert_true(wait_for(c, 1, NULL, &v));
        FILE *f = fopen(pidfile, "r");
        int pid = 0;
        assert_non_null(f);
        assert_int_equal(fscanf(f, "%d", &pid), 1);
        fclose(f);
        assert_int_equal(kill(pid, SIGKILL), 0);
        assert_true(wait_for(c, 0, "neuron-monitor was killed by signal 9", &v));
        /* Restarted after a second: the runtime is back. */
        assert_true(wait_for(c, 1, NULL, &v));
        collector_close(c);

        /* A monitor that exits: its status is the reason, its runtimes go. */
        snprintf(spec, sizeof(spec),
                 "sysfs:%stests/data/trn1,monitor=head -n 1 %stests/data/neuron-monitor/run.jsonl; exit 3", top, top);
        assert_int_equal(collector_open_spec(spec, &c, err, sizeof(err)), 0);
        assert_true(wait_for(c, 0, "neuron-monitor exited with status 3", &v));
        collector_close(c);
        free(top);
        free(v.b.values);
        free(v.b.valid);
}

/* A monitor that floods the pipe with junk lines: the collector parses at
 * most 64 lines a second (or 500 ms of them), skips the rest and says how
 * many, and the documents that follow the flood are taken. */
static void nmon_collector__junk_flood__lines_bounded_per_tick(void **state) {
        (void) state;
        char spec[2048], err[256];
        struct collector *c = NULL;
        struct values v = { 0 };
        char *top = strdup(srcdir_path(""));
        snprintf(spec, sizeof(spec),
                 "sysfs:%stests/data/trn1,monitor=yes x | head -n 1000000; while :; do head -n 1 "
                 "%stests/data/neuron-monitor/run.jsonl; sleep 0.05; done",
                 top, top);
        assert_int_equal(collector_open_spec(spec, &c, err, sizeof(err)), 0);
        assert_true(
                wait_for(c, 1, "lines skipped since the last tick, past 64 lines or 500 ms of parsing a second", &v));
        collector_close(c);
        free(top);
        free(v.b.values);
        free(v.b.valid);
}

static void nmon_open__bad_options__einval(void **state) {
        (void) state;
        char spec[2048], err[256];
        struct collector *c = NULL;
        snprintf(spec, sizeof(spec), "sysfs:%s,monitor=", srcdir_path("tests/data/trn1"));
        assert_int_equal(collector_open_spec(spec, &c, err, sizeof(err)), -EINVAL);
        assert_non_null(strstr(err, "monitor= needs a value"));
        snprintf(spec, sizeof(spec), "sysfs:%s,monitor-fifo=/nonexistent/fifo", srcdir_path("tests/data/trn1"));
        assert_int_equal(collector_open_spec(spec, &c, err, sizeof(err)), -EINVAL);
        assert_non_null(strstr(err, "/nonexistent/fifo"));
        snprintf(spec, sizeof(spec), "sysfs:%s,lnc=3,monitor=true", srcdir_path("tests/data/trn1"));
        assert_int_equal(collector_open_spec(spec, &c, err, sizeof(err)), -EINVAL);
        assert_non_null(strstr(err, "lnc=1 or lnc=2"));
}

int main(void) {
        /* The collector's children write to pipes the test may have closed. */
        signal(SIGPIPE, SIG_IGN);
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(nmon_parse__user_guide_document__all_groups),
                cmocka_unit_test(nmon_parse__untagged_runtime_without_executions__pid_tag_latency_absent),
                cmocka_unit_test(nmon_parse__group_error__group_absent_error_kept),
                cmocka_unit_test(nmon_parse__malformed__refused),
                cmocka_unit_test(nmon_parse__bounds__runtimes_and_cores_capped),
                cmocka_unit_test(nmon_parse__hostile_tag__cleaned_and_cut),
                cmocka_unit_test(nmon_merge_tags__shared_tag__one_runtime_per_tag),
                cmocka_unit_test_teardown(nmon_collector__fifo__runtimes_come_and_go_counters_add, scratch_teardown),
                cmocka_unit_test_teardown(nmon_collector__devices_come_and_go__core_series_follow, scratch_teardown),
                cmocka_unit_test_teardown(nmon_collector__shared_tag__series_once_counters_go_on, scratch_teardown),
                cmocka_unit_test_teardown(nmon_collector__fifo_between_ticks__latest_whole_every_one_counted,
                                          scratch_teardown),
                cmocka_unit_test_teardown(nmon_collector__child_killed_or_exiting__restarted_with_reason,
                                          scratch_teardown),
                cmocka_unit_test(nmon_collector__junk_flood__lines_bounded_per_tick),
                cmocka_unit_test(nmon_open__bad_options__einval),
        };
        return cmocka_run_group_tests_name("nmon", tests, NULL, NULL);
}
