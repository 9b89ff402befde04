#include "config.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <json-c/json.h>

#include "collectors/nmon.h"

/* Bytes and counts above this are not a real figure (2^60: an exbibyte). */
#define NUMBER_MAX 1152921504606846976.0
/* A period outside this is a broken clock. */
#define PERIOD_MAX 86400.0

static json_object *get(json_object *o, const char *key) {
        json_object *v = NULL;
        if (!json_object_is_type(o, json_type_object) || !json_object_object_get_ex(o, key, &v))
                return NULL;
        return v;
}

/* The object under key, or NULL when absent, null or not an object. */
static json_object *get_object(json_object *o, const char *key) {
        json_object *v = get(o, key);
        return json_object_is_type(v, json_type_object) ? v : NULL;
}

/* A number in [0, max]. Returns 0, -ENOENT when absent or null, -EINVAL
 * when not a number or out of range. */
static int get_number(json_object *o, const char *key, double max, double *ret) {
        json_object *v = get(o, key);
        if (!v)
                return -ENOENT;
        if (!json_object_is_type(v, json_type_int) && !json_object_is_type(v, json_type_double))
                return -EINVAL;
        double d = json_object_get_double(v);
        if (!isfinite(d) || d < 0 || d > max)
                return -EINVAL;
        *ret = d;
        return 0;
}

/* Copies a string, each byte outside printable ASCII as '?', cut to fit. */
static void clean_string(const char *s, size_t len, char *out, size_t size) {
        size_t n = len < size - 1 ? len : size - 1;
        for (size_t i = 0; i < n; i++)
                out[i] = s[i] >= 0x20 && s[i] < 0x7f ? s[i] : '?';
        out[n] = '\0';
}

/* A group's or object's "error": "" unless a non-empty string. */
static void get_error(json_object *o, char *out, size_t size) {
        json_object *v = get(o, "error");
        out[0] = '\0';
        if (json_object_is_type(v, json_type_string))
                clean_string(json_object_get_string(v), (size_t) json_object_get_string_len(v), out, size);
}

/* A group to read: present, an object, and without error (which goes to
 * the runtime's error when it has none yet). */
static json_object *usable_group(json_object *report, const char *name, struct nmon_runtime *rt) {
        json_object *g = get_object(report, name);
        char e[NMON_ERROR_MAX];
        if (!g)
                return NULL;
        get_error(g, e, sizeof(e));
        if (!e[0])
                return g;
        if (!rt->error[0])
                snprintf(rt->error, sizeof(rt->error), "%s: %.96s", name, e);
        return NULL;
}

/* A core index key: decimal, no sign or leading zero, below the cap. */
static int parse_core_key(const char *key, unsigned *ret) {
        unsigned v = 0;
        if (!key[0] || (key[0] == '0' && key[1]))
                return -EINVAL;
        for (const char *p = key; *p; p++) {
                if (*p < '0' || *p > '9')
                        return -EINVAL;
                v = v * 10 + (unsigned) (*p - '0');
                if (v >= NMON_CORE_INDEX_MAX)
                        return -EINVAL;
        }
        *ret = v;
        return 0;
}

/* The runtime's entry for core index, added in order when new (at most max). */
static int core_entry(struct nmon_runtime *rt, unsigned index, size_t max, struct nmon_core **ret) {
        size_t at = 0;
        while (at < rt->n_cores && rt->cores[at].index < index)
                at++;
        if (at < rt->n_cores && rt->cores[at].index == index) {
                *ret = &rt->cores[at];
                return 0;
        }
        if (rt->n_cores >= max)
                return -E2BIG;
        struct nmon_core *grown = realloc(rt->cores, (rt->n_cores + 1) * sizeof(*grown));
        if (!grown)
                return -ENOMEM;
        rt->cores = grown;
        memmove(&rt->cores[at + 1], &rt->cores[at], (rt->n_cores - at) * sizeof(*grown));
        rt->cores[at] = (struct nmon_core){ .index = index };
        rt->n_cores++;
        *ret = &rt->cores[at];
        return 0;
}

/* Reads a number that must be valid when present; absent is fine. */
#define OPTIONAL(expr, has)                                                                                            \
        do {                                                                                                           \
                int r_ = (expr);                                                                                       \
                if (r_ == -EINVAL)                                                                                     \
                        return r_;                                                                                     \
                has = r_ == 0;                                                                                         \
        } while (0)

static int parse_counters(json_object *g, double period, struct nmon_runtime *rt) {
        json_object *in_use = get_object(g, "neuroncores_in_use");
        if (!in_use)
                return 0;
        json_object_object_foreach(in_use, key, val) {
                unsigned index;
                struct nmon_core *c;
                double pct = 0, flops = 0;
                bool has_pct, has_flops;
                if (parse_core_key(key, &index) < 0 || !json_object_is_type(val, json_type_object))
                        return -EINVAL;
                OPTIONAL(get_number(val, "neuroncore_utilization", 100, &pct), has_pct);
                OPTIONAL(get_number(val, "flops", NUMBER_MAX, &flops), has_flops);
                int r = core_entry(rt, index, NMON_CORES_MAX, &c);
                if (r < 0)
                        return r;
                c->has_util = has_pct;
                c->util = pct / 100;
                /* Operations per second over the period: the period's count. */
                c->has_flops = has_flops && period > 0;
                c->flops = round(flops * period);
        }
        return 0;
}

static int parse_percentiles(json_object *o, double *out, bool *ret_has) {
        bool all = true;
        *ret_has = false;
        if (!o)
                return 0; /* null: no execution in the period */
        if (!json_object_is_type(o, json_type_object))
                return -EINVAL;
        for (int i = 0; i < METRIC_PERCENTILES; i++) {
                int r = get_number(o, metric_percentile_names[i], PERIOD_MAX, &out[i]);
                if (r == -EINVAL)
                        return r;
                all = all && r == 0;
        }
        *ret_has = all;
        return 0;
}

static int parse_execution(json_object *g, struct nmon_runtime *rt) {
        json_object *summary = get_object(g, "execution_summary"), *errors = get_object(g, "error_summary");
        json_object *latency = get_object(g, "latency_stats");
        int r = 0;
        bool all = summary && errors;
        for (int i = 0; i < EXEC_STATUS__COUNT && all; i++) {
                r = get_number(summary, metric_exec_status_names[i], NUMBER_MAX, &rt->status[i]);
                all = r == 0;
        }
        for (int i = 0; i < EXEC_ERROR__COUNT && all; i++) {
                r = get_number(errors, metric_exec_error_names[i], NUMBER_MAX, &rt->errors[i]);
                all = r == 0;
        }
        if (r == -EINVAL)
                return r;
        rt->has_exec = all;
        if (!latency)
                return 0;
        r = parse_percentiles(get(latency, "total_latency"), rt->latency, &rt->has_latency);
        if (r == 0)
                r = parse_percentiles(get(latency, "device_latency"), rt->device_latency, &rt->has_device_latency);
        return r;
}

static int parse_memory(json_object *g, struct nmon_runtime *rt) {
        json_object *used = get_object(g, "neuron_runtime_used_bytes");
        json_object *breakdown = get_object(used, "usage_breakdown");
        json_object *host = get_object(breakdown, "host"), *cores = get_object(breakdown, "neuroncore_memory_usage");
        bool has_host, has_device;
        if (!used)
                return 0;
        OPTIONAL(get_number(used, "host", NUMBER_MAX, &rt->memory_host), has_host);
        OPTIONAL(get_number(used, "neuron_device", NUMBER_MAX, &rt->memory_device), has_device);
        rt->has_memory = has_host && has_device;
        bool all = host != NULL;
        for (int i = 0; i < HOST_MEM__COUNT && all; i++) {
                int r = get_number(host, metric_host_memory_names[i], NUMBER_MAX, &rt->host_memory[i]);
                if (r == -EINVAL)
                        return r;
                all = r == 0;
        }
        rt->has_host_breakdown = all;
        if (!cores)
                return 0;
        json_object_object_foreach(cores, key, val) {
                unsigned index;
                struct nmon_core *c;
                double mem[METRIC_CORE_MEMORY_KINDS];
                bool kinds = true;
                if (parse_core_key(key, &index) < 0 || !json_object_is_type(val, json_type_object))
                        return -EINVAL;
                for (int k = 0; k < METRIC_CORE_MEMORY_KINDS && kinds; k++) {
                        int r = get_number(val, metric_core_memory_kinds[k], NUMBER_MAX, &mem[k]);
                        if (r == -EINVAL)
                                return r;
                        kinds = r == 0;
                }
                int r = core_entry(rt, index, NMON_CORES_MAX, &c);
                if (r < 0)
                        return r;
                c->has_mem = kinds;
                if (kinds)
                        memcpy(c->mem, mem, sizeof(mem));
        }
        return 0;
}

static int parse_vcpu(json_object *g, struct nmon_runtime *rt) {
        json_object *usage = get_object(g, "vcpu_usage");
        double user, system;
        if (!usage)
                return 0;
        int r = get_number(usage, "user", 100, &user);
        if (r == 0)
                r = get_number(usage, "system", 100, &system);
        if (r == -EINVAL)
                return r;
        rt->has_vcpu = r == 0;
        rt->vcpu_user = r == 0 ? user / 100 : 0;
        rt->vcpu_system = r == 0 ? system / 100 : 0;
        return 0;
}

static int parse_runtime(json_object *o, struct nmon_runtime *rt, char *err, size_t errlen) {
        json_object *report = get_object(o, "report"), *tag = get(o, "neuron_runtime_tag");
        json_object *g;
        double pid, period = 0;
        int r;

        if (!json_object_is_type(o, json_type_object) || get_number(o, "pid", 2147483647.0, &pid) < 0 || pid < 1 ||
            pid != floor(pid)) {
                snprintf(err, errlen, "a runtime without a valid pid");
                return -EINVAL;
        }
        rt->pid = (uint32_t) pid;
        if (json_object_is_type(tag, json_type_string) && json_object_get_string_len(tag) > 0)
                clean_string(json_object_get_string(tag), (size_t) json_object_get_string_len(tag), rt->tag,
                             sizeof(rt->tag));
        else
                snprintf(rt->tag, sizeof(rt->tag), "%u", rt->pid);
        get_error(o, rt->error, sizeof(rt->error));
        if (!report)
                return 0;
        r = 0;
        if ((g = usable_group(report, "neuroncore_counters", rt))) {
                /* Without a period the flops rate cannot become a count. */
                if (get_number(g, "period", PERIOD_MAX, &period) == -EINVAL)
                        r = -EINVAL;
                if (r == 0)
                        r = parse_counters(g, period, rt);
        }
        if (r == 0 && (g = usable_group(report, "execution_stats", rt)))
                r = parse_execution(g, rt);
        if (r == 0 && (g = usable_group(report, "memory_used", rt)))
                r = parse_memory(g, rt);
        if (r == 0 && (g = usable_group(report, "neuron_runtime_vcpu_usage", rt)))
                r = parse_vcpu(g, rt);
        if (r == -EINVAL)
                snprintf(err, errlen, "runtime %u: a malformed or out-of-range figure", rt->pid);
        if (r == -E2BIG)
                snprintf(err, errlen, "runtime %u: more than %d cores", rt->pid, NMON_CORES_MAX);
        return r;
}

static void parse_hardware(json_object *doc, struct nmon_report *rep) {
        json_object *hw = get_object(doc, "neuron_hardware_info");
        double v;
        if (!hw)
                return;
        get_error(hw, rep->error, sizeof(rep->error));
        if (get_number(hw, "logical_neuroncore_config", 8, &v) == 0 && v == floor(v))
                rep->lnc = (unsigned) v;
        if (get_number(hw, "neuroncore_per_device_count", NMON_CORE_INDEX_MAX, &v) == 0 && v == floor(v))
                rep->cores_per_device = (unsigned) v;
}

void nmon_report_free(struct nmon_report *r) {
        if (!r)
                return;
        for (size_t i = 0; i < r->n_runtimes; i++)
                free(r->runtimes[i].cores);
        free(r->runtimes);
        *r = (struct nmon_report){ 0 };
}

int nmon_parse(const char *text, size_t len, struct nmon_report *ret, char *err, size_t errlen) {
        struct nmon_report rep = { 0 };
        json_tokener *tok = NULL;
        json_object *doc = NULL;
        int r = 0;

        err[0] = '\0';
        if (len > NMON_LINE_MAX) {
                snprintf(err, errlen, "a line of more than %u bytes", NMON_LINE_MAX);
                return -E2BIG;
        }
        if (memchr(text, '\0', len)) {
                snprintf(err, errlen, "a NUL byte in the line");
                return -EINVAL;
        }
        tok = json_tokener_new_ex(NMON_DEPTH_MAX);
        if (!tok)
                return -ENOMEM;
        doc = json_tokener_parse_ex(tok, text, (int) len);
        enum json_tokener_error e = json_tokener_get_error(tok);
        size_t end = json_tokener_get_parse_end(tok);
        while (end < len && (text[end] == ' ' || text[end] == '\t' || text[end] == '\r'))
                end++;
        if (!doc || e != json_tokener_success || end != len || !json_object_is_type(doc, json_type_object)) {
                snprintf(err, errlen, "not a JSON object: %s",
                         e == json_tokener_continue  ? "the line ends inside it"
                         : e != json_tokener_success ? json_tokener_error_desc(e)
                         : end != len                ? "text after it"
                                                     : "another JSON value");
                r = -EINVAL;
                goto out;
        }
        parse_hardware(doc, &rep);
        json_object *runtimes = get(doc, "neuron_runtime_data");
        if (runtimes && !json_object_is_type(runtimes, json_type_array)) {
                snprintf(err, errlen, "neuron_runtime_data is not an array");
                r = -EINVAL;
                goto out;
        }
        size_t n = runtimes ? json_object_array_length(runtimes) : 0;
        if (n > NMON_RUNTIMES_MAX) {
                snprintf(err, errlen, "more than %d runtimes", NMON_RUNTIMES_MAX);
                r = -E2BIG;
                goto out;
        }
        rep.runtimes = calloc(n ? n : 1, sizeof(*rep.runtimes));
        if (!rep.runtimes) {
                r = -ENOMEM;
                goto out;
        }
        for (size_t i = 0; i < n && r == 0; i++) {
                r = parse_runtime(json_object_array_get_idx(runtimes, i), &rep.runtimes[i], err, errlen);
                rep.n_runtimes = i + 1;
                for (size_t k = 0; k < i && r == 0; k++)
                        if (rep.runtimes[k].pid == rep.runtimes[i].pid) {
                                snprintf(err, errlen, "runtime %u listed twice", rep.runtimes[i].pid);
                                r = -EINVAL;
                        }
        }
out:
        if (doc)
                json_object_put(doc);
        json_tokener_free(tok);
        if (r < 0) {
                nmon_report_free(&rep);
                return r;
        }
        *ret = rep;
        return 0;
}

/* ---- runtimes that share a tag ---------------------------------------- */

/* Percentiles of several runtimes: the highest of those that have them. */
static void fold_max(double *to, bool *has, const double *from, bool from_has) {
        for (int i = 0; i < METRIC_PERCENTILES && from_has; i++)
                to[i] = *has && to[i] > from[i] ? to[i] : from[i];
        *has = *has || from_has;
}

static int fold_core(struct nmon_runtime *to, const struct nmon_core *c) {
        struct nmon_core *t;
        size_t n = to->n_cores;
        int r = core_entry(to, c->index, NMON_CORE_INDEX_MAX, &t);
        if (r < 0)
                return r;
        if (to->n_cores > n) {
                *t = *c;
                return 0;
        }
        /* A sum stands only when every runtime listing the core has its
         * part; the counter adds what each has. */
        t->has_util = t->has_util && c->has_util;
        t->util = fmin(1, t->util + c->util);
        t->flops = (t->has_flops ? t->flops : 0) + (c->has_flops ? c->flops : 0);
        t->has_flops = t->has_flops || c->has_flops;
        t->has_mem = t->has_mem && c->has_mem;
        for (int k = 0; k < METRIC_CORE_MEMORY_KINDS; k++)
                t->mem[k] += c->mem[k];
        return 0;
}

static int fold_runtime(struct nmon_runtime *to, const struct nmon_runtime *rt) {
        if (!to->error[0])
                memcpy(to->error, rt->error, sizeof(to->error));
        for (int s = 0; s < EXEC_STATUS__COUNT && rt->has_exec; s++)
                to->status[s] = (to->has_exec ? to->status[s] : 0) + rt->status[s];
        for (int e = 0; e < EXEC_ERROR__COUNT && rt->has_exec; e++)
                to->errors[e] = (to->has_exec ? to->errors[e] : 0) + rt->errors[e];
        to->has_exec = to->has_exec || rt->has_exec;
        fold_max(to->latency, &to->has_latency, rt->latency, rt->has_latency);
        fold_max(to->device_latency, &to->has_device_latency, rt->device_latency, rt->has_device_latency);
        to->has_memory = to->has_memory && rt->has_memory;
        to->memory_host += rt->memory_host;
        to->memory_device += rt->memory_device;
        to->has_host_breakdown = to->has_host_breakdown && rt->has_host_breakdown;
        for (int k = 0; k < HOST_MEM__COUNT; k++)
                to->host_memory[k] += rt->host_memory[k];
        to->has_vcpu = to->has_vcpu && rt->has_vcpu;
        to->vcpu_user = fmin(1, to->vcpu_user + rt->vcpu_user);
        to->vcpu_system = fmin(1, to->vcpu_system + rt->vcpu_system);
        int r = 0;
        for (size_t c = 0; c < rt->n_cores && r == 0; c++)
                r = fold_core(to, &rt->cores[c]);
        return r;
}

int nmon_merge_tags(const struct nmon_report *in, struct nmon_report *ret) {
        struct nmon_report out = { .lnc = in->lnc, .cores_per_device = in->cores_per_device };
        int r = 0;
        memcpy(out.error, in->error, sizeof(out.error));
        out.runtimes = calloc(in->n_runtimes ? in->n_runtimes : 1, sizeof(*out.runtimes));
        if (!out.runtimes)
                return -ENOMEM;
        for (size_t i = 0; i < in->n_runtimes && r == 0; i++) {
                const struct nmon_runtime *rt = &in->runtimes[i];
                size_t k = 0;
                while (k < out.n_runtimes && strcmp(out.runtimes[k].tag, rt->tag) != 0)
                        k++;
                if (k == out.n_runtimes) {
                        /* The first of its tag: a copy, without its cores yet. */
                        out.runtimes[k] = *rt;
                        out.runtimes[k].cores = NULL;
                        out.runtimes[k].n_cores = 0;
                        out.n_runtimes++;
                        r = 0;
                        for (size_t c = 0; c < rt->n_cores && r == 0; c++)
                                r = fold_core(&out.runtimes[k], &rt->cores[c]);
                } else {
                        r = fold_runtime(&out.runtimes[k], rt);
                }
        }
        if (r < 0) {
                nmon_report_free(&out);
                return r;
        }
        *ret = out;
        return 0;
}
