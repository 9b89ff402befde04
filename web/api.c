#include "config.h"

#include <errno.h>
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "lib/clock.h"
#include "lib/parse.h"
#include "web/accept.h"
#include "web/api.h"
#include "web/http.h"
#include "web/params.h"
#include "web/queue.h"
#include "web/stream.h"

#define JSON_TYPE "application/json"

/* The 503 for a store that cannot answer (-EAGAIN: no database open yet,
 * see store_open_deferred()); false when r is no error. */
static bool answer_store_error(struct web_reply *reply, int r) {
        if (r == -EAGAIN)
                reply_error(reply, 503, "unavailable",
                            "storage is unavailable: the database could not be opened yet; neurond keeps retrying");
        else if (r < 0)
                reply_error(reply, 503, "unavailable", "reading the store failed: %s", strerror(-r));
        return r < 0;
}

/* The accelerator backend as of snap: its series set's copy of the
 * devices, or none before the first tick. The backend's own inventory is
 * the tick loop's to change (sysfs finds its devices late). */
static const struct inventory *backend_of(const struct snapshot *snap) {
        static const struct inventory none = { 0 };
        return snap && snap->set ? &snap->set->backend : &none;
}

/* Prometheus writes times as seconds with a fraction. */
static void json_time(struct buf *b, int64_t ms) {
        buf_printf(b, "%lld.%03lld", (long long) (ms / 1000), (long long) (ms % 1000));
}

/* Prometheus writes sample values as strings so NaN and Inf survive JSON. */
static void json_value(struct buf *b, double v) {
        buf_append(b, "\"", 1);
        buf_double(b, v);
        buf_append(b, "\"", 1);
}

/* One sample as Prometheus writes it: [time, "value"]. */
static void json_sample(struct buf *b, int64_t ms, double v) {
        buf_puts(b, "[");
        json_time(b, ms);
        buf_puts(b, ",");
        json_value(b, v);
        buf_puts(b, "]");
}

/* The labels as Prometheus writes them: an empty value is no label; with
 * the pod, namespace and container of holder when it is not NULL (a
 * current value of a held core or device). */
static void json_series_labels(struct buf *b, const struct series_desc *d, const struct pod_holder *holder) {
        const struct metric_desc *m = &metric_table[d->metric];
        buf_puts(b, "{\"__name__\":");
        json_string(b, m->name);
        for (size_t l = 0; l < metric_label_count(m); l++) {
                if (!d->label_values[l][0])
                        continue;
                buf_puts(b, ",");
                json_string(b, m->labels[l]);
                buf_puts(b, ":");
                json_string(b, d->label_values[l]);
        }
        for (size_t l = 0; holder && l < POD_LABELS; l++) {
                buf_puts(b, ",");
                json_string(b, pod_label_names[l]);
                buf_puts(b, ":");
                json_string(b, pod_holder_label(holder, l));
        }
        buf_puts(b, "}");
}

static bool reject_params(const struct web_request *req, struct web_reply *reply) {
        if (req->n_params == 0)
                return false;
        reply_error(reply, 400, "bad_data", "parameter '%.64s': this endpoint takes no parameters", req->params[0].key);
        return true;
}

/* Fresh while the latest tick is younger than three wall-clock intervals
 * plus a grace for a slow tick, or while the admin endpoint holds the
 * timer; otherwise the loop is stalled. */
void api_healthz(const struct web_context *ctx, const struct web_request *req, struct web_reply *reply) {
        if (reject_params(req, reply))
                return;
        struct snapshot *snap = snapshot_slot_get(ctx->latest);
        /* SIGHUP may change the interval from the loop thread. */
        double wall_interval_ms = (double) __atomic_load_n(&ctx->interval_ms, __ATOMIC_RELAXED) / ctx->time_scale;
        double limit_ms = 3 * wall_interval_ms + 2000;

        reply->content_type = JSON_TYPE;
        if (!snap) {
                reply->status = 503;
                buf_puts(&reply->body, "{\"status\":\"starting\",\"error\":\"no tick has completed yet\"}\n");
                return;
        }
        double age_ms = (double) (clock_monotonic_ms() - snap->monotonic_ms);
        struct tick_state ticks = { .held = false };
        if (ctx->ticks)
                tick_control_get(ctx->ticks, &ticks);
        bool fresh = age_ms <= limit_ms || ticks.held;
        struct history_stats st = { 0 };
        if (ctx->history.ops)
                ctx->history.ops->get_stats(ctx->history.impl, &st);
        /* Degraded still answers 200: polling and serving go on while
         * the store cannot write. */
        reply->status = fresh ? 200 : 503;
        buf_printf(&reply->body, "{\"status\":\"%s\",\"last_tick_age_seconds\":%.3f,\"tick\":%llu",
                   !fresh        ? "stalled"
                   : st.degraded ? "degraded"
                                 : "ok",
                   age_ms / 1000.0, (unsigned long long) snap->tick);
        if (ticks.held)
                buf_puts(&reply->body, ",\"held\":true");
        if (!fresh)
                buf_puts(&reply->body, ",\"error\":\"the poll loop has not completed a tick recently\"");
        else if (st.degraded && st.last_error < 0)
                buf_printf(&reply->body, ",\"error\":\"%s: %s; retrying\"",
                           st.unopened ? "the database cannot be opened" : "storing ticks fails",
                           strerror(-st.last_error));
        else if (st.degraded)
                buf_printf(&reply->body,
                           ",\"error\":\"%zu series are not stored: %zu listed more than once, %zu beyond the series "
                           "limit\"",
                           st.series_duplicated + st.series_over_limit, st.series_duplicated, st.series_over_limit);
        buf_puts(&reply->body, "}\n");
        snapshot_unref(snap);
}

static bool series_has_label(const struct series_desc *d, const char *name, const char *value) {
        int idx = metric_label_index(&metric_table[d->metric], name);
        return idx >= 0 && strcmp(d->label_values[idx], value) == 0;
}

/* Whether the series belongs to device `index`: its neuron_device label,
 * or neuron_device_index where the ecosystem spells it so. */
static bool series_on_device(const struct series_desc *d, const char *index) {
        return series_has_label(d, "neuron_device", index) || series_has_label(d, "neuron_device_index", index);
}

/* series_has_label(), or for a pod label, holder's value of it. */
static bool value_has_label(const struct series_desc *d, const struct pod_holder *holder, const char *name,
                            const char *value) {
        int idx = pod_label_index(name);
        if (idx < 0)
                return series_has_label(d, name, value);
        return holder && strcmp(pod_holder_label(holder, (size_t) idx), value) == 0;
}

/* The metric families the backend reports for a device: what the driver or
 * model does not expose has no series, so it is absent here too. */
static void json_device_metrics(struct buf *b, const struct series_set *set, unsigned index) {
        char idx[16];
        bool seen[METRIC__COUNT] = { false };
        snprintf(idx, sizeof(idx), "%u", index);
        for (size_t i = 0; set && i < set->n; i++)
                if (series_on_device(&set->series[i], idx))
                        seen[set->series[i].metric] = true;
        buf_puts(b, ",\"metrics\":[");
        for (int m = 0, n = 0; m < METRIC__COUNT; m++) {
                if (!seen[m])
                        continue;
                buf_puts(b, n++ ? "," : "");
                json_string(b, metric_table[m].name);
        }
        buf_puts(b, "]");
}

/* Who uses which core: each logical NeuronCore of the device, its
 * physical cores and the runtime holding it (null when none). */
static void json_device_cores(struct buf *b, const struct series_set *set, const struct device_info *d) {
        unsigned lnc = set->backend.lnc ? set->backend.lnc : 1;
        buf_puts(b, ",\"neuroncores\":[");
        for (unsigned k = 0; k < d->core_count; k++) {
                unsigned core = d->first_core + k;
                const struct runtime_info *r = runtime_info_find_core(set->runtimes, set->n_runtimes, core);
                buf_printf(b, "%s{\"neuroncore\":%u,\"physical_neuroncores\":[", k ? "," : "", core);
                for (unsigned p = 0; p < lnc; p++)
                        buf_printf(b, "%s%u", p ? "," : "", core * lnc + p);
                buf_puts(b, "],\"runtime_tag\":");
                if (r) {
                        json_string(b, r->tag);
                        buf_printf(b, ",\"pid\":%u}", r->pid);
                } else {
                        buf_puts(b, "null,\"pid\":null}");
                }
        }
        buf_puts(b, "]");
}

/* A number, or null for NaN and the infinities JSON has no word for. */
static void json_number(struct buf *b, double v) {
        if (isfinite(v))
                buf_double(b, v);
        else
                buf_puts(b, "null");
}

static void json_finding(struct buf *b, const struct health_finding *f) {
        char text[HEALTH_REASON_MAX];
        health_finding_text(f, text, sizeof(text));
        buf_puts(b, "{\"kind\":");
        json_string(b, health_rules[f->rule].kind);
        buf_printf(b, ",\"state\":\"%s\",\"reason\":", health_state_names[f->state]);
        json_string(b, text);
        if (f->core >= 0)
                buf_printf(b, ",\"core\":%d", f->core);
        else
                buf_puts(b, ",\"core\":null");
        buf_puts(b, ",\"value\":");
        json_number(b, f->value);
        buf_puts(b, ",\"since\":");
        json_time(b, f->since_ms);
        buf_puts(b, "}");
}

static const struct health_device *health_of(const struct health_result *h, unsigned index) {
        for (size_t k = 0; h && k < h->n_devices; k++)
                if (h->devices[k].index == index)
                        return &h->devices[k];
        return NULL;
}

/* A device's health as of the tick: its state, since when, the findings
 * (the rules that tripped, and those it could not evaluate), the action of
 * the worst, and its cores' states. Before the first result: unknown. */
static void json_device_health(struct buf *b, const struct health_result *h, const struct device_info *d) {
        const struct health_device *hd = health_of(h, d->index);
        buf_printf(b, ",\"health\":{\"state\":\"%s\",\"since\":", health_state_names[hd ? hd->state : HEALTH_UNKNOWN]);
        if (hd)
                json_time(b, hd->since_ms);
        else
                buf_puts(b, "null");
        buf_puts(b, ",\"reasons\":[");
        for (size_t k = 0; hd && k < hd->count; k++) {
                buf_puts(b, k ? "," : "");
                json_finding(b, &h->findings[hd->first + k]);
        }
        buf_puts(b, "],\"action\":");
        if (hd && hd->action)
                json_string(b, hd->action);
        else
                buf_puts(b, "null");
        buf_puts(b, ",\"neuroncores\":[");
        for (unsigned k = 0; h && k < d->core_count && d->first_core + k < h->n_cores; k++) {
                const struct health_core *c = &h->cores[d->first_core + k];
                buf_printf(b, "%s{\"neuroncore\":%u,\"state\":\"%s\",\"since\":", k ? "," : "", d->first_core + k,
                           health_state_names[c->state]);
                json_time(b, c->since_ms);
                buf_puts(b, "}");
        }
        buf_puts(b, "]}");
}

/* Device d of snap's backend, with its health as of that tick. */
static void json_device(struct buf *b, const struct snapshot *snap, const struct device_info *d) {
        const struct series_set *set = snap->set;
        buf_printf(b, "{\"index\":%u,\"name\":", d->index);
        json_string(b, d->name);
        buf_puts(b, ",\"arch\":");
        json_string(b, d->arch);
        buf_puts(b, ",\"core_arch\":");
        json_string(b, d->core_arch);
        buf_printf(b, ",\"cores\":%u,\"physical_cores\":%u,\"first_core\":%u,\"memory_total_bytes\":", d->core_count,
                   d->physical_core_count, d->first_core);
        /* 0 means the capacity is unknown (a chip not in the catalog): say so. */
        if (d->memory_bytes)
                buf_printf(b, "%llu", (unsigned long long) d->memory_bytes);
        else
                buf_puts(b, "null");
        buf_puts(b, ",\"peers\":[");
        for (unsigned p = 0; p < d->n_peers; p++)
                buf_printf(b, "%s%u", p ? "," : "", d->peers[p]);
        /* On one node of an UltraServer: each peer's node (its index is on that node). */
        if (d->peer_nodes) {
                buf_puts(b, "],\"peer_nodes\":[");
                for (unsigned p = 0; p < d->n_peers; p++)
                        buf_printf(b, "%s%u", p ? "," : "", d->peer_nodes[p]);
        }
        buf_puts(b, "],\"serial_number\":");
        json_string(b, d->serial);
        json_device_metrics(b, set, d->index);
        json_device_cores(b, set, d);
        json_device_health(b, snap->health, d);
        buf_puts(b, "}");
}

static void json_identity(struct buf *b, const struct instance_identity *id) {
        static const struct {
                const char *name;
                size_t offset;
        } fields[] = {
                { "instance_id", offsetof(struct instance_identity, instance_id) },
                { "instance_type", offsetof(struct instance_identity, instance_type) },
                { "instance_name", offsetof(struct instance_identity, instance_name) },
                { "availability_zone", offsetof(struct instance_identity, availability_zone) },
                { "availability_zone_id", offsetof(struct instance_identity, availability_zone_id) },
                { "region", offsetof(struct instance_identity, region) },
                { "subnet_id", offsetof(struct instance_identity, subnet_id) },
                { "ami_id", offsetof(struct instance_identity, ami_id) },
                { "error", offsetof(struct instance_identity, error) },
        };
        for (size_t i = 0; i < sizeof(fields) / sizeof(fields[0]); i++) {
                buf_puts(b, i ? "," : "{");
                json_string(b, fields[i].name);
                buf_puts(b, ":");
                json_string(b, (const char *) id + fields[i].offset);
        }
        buf_puts(b, "}");
}

/* The UltraServer this host is a node of: null when none and nothing went
 * wrong finding out. */
static void json_ultraserver(struct buf *b, const struct ultraserver_identity *us) {
        buf_puts(b, ",\"ultraserver\":");
        if (!us->nodes && !us->error[0]) {
                buf_puts(b, "null");
                return;
        }
        buf_puts(b, "{\"id\":");
        if (us->nodes) {
                json_string(b, us->id);
                buf_printf(b, ",\"node\":%u,\"nodes\":%u", us->node, us->nodes);
        } else {
                buf_puts(b, "null,\"node\":null,\"nodes\":null");
        }
        buf_puts(b, ",\"modes\":[");
        for (unsigned m = 1, n = 0; m <= 4; m++)
                if (us->modes & 1u << m)
                        buf_printf(b, "%s%u", n++ ? "," : "", m);
        buf_puts(b, "],\"error\":");
        json_string(b, us->error);
        buf_puts(b, "}");
}

void api_devices(const struct web_context *ctx, const struct web_request *req, struct web_reply *reply) {
        struct buf *b = &reply->body;

        if (reject_params(req, reply))
                return;
        struct snapshot *snap = snapshot_slot_get(ctx->latest);
        const struct inventory *inv = backend_of(snap);
        reply_json_success(b, snap);
        buf_puts(b, "{\"instance_type\":");
        json_string(b, inv->instance_type);
        buf_puts(b, ",\"backend\":");
        json_string(b, inv->backend);
        buf_puts(b, ",\"backend_reason\":");
        json_string(b, inv->backend_reason);
        buf_puts(b, ",\"driver_version\":");
        json_string(b, inv->driver_version);
        buf_printf(b, ",\"lnc\":%u,\"instance\":", inv->lnc);
        json_identity(b, &inv->identity);
        json_ultraserver(b, &inv->ultraserver);
        buf_puts(b, ",\"devices\":[");
        for (unsigned i = 0; i < inv->n_devices; i++) {
                if (i)
                        buf_puts(b, ",");
                json_device(b, snap, &inv->devices[i]);
        }
        buf_puts(b, "]}}\n");
        snapshot_unref(snap);
        reply->status = 200;
        reply->content_type = JSON_TYPE;
}

/* /api/v1/devices/{index}: one device, with its current values. */
void api_device(const struct web_context *ctx, const struct web_request *req, struct web_reply *reply) {
        const char *id = strrchr(req->path, '/') + 1;
        struct buf *b = &reply->body;
        uint64_t index;

        if (reject_params(req, reply))
                return;
        if (strlen(id) > 5 || (id[0] == '0' && id[1]) || parse_uint_range(id, 0, 99999, &index) < 0) {
                reply_error(reply, 400, "bad_data", "device id '%.32s' is not a device index", id);
                return;
        }
        struct snapshot *snap = snapshot_slot_get(ctx->latest);
        const struct inventory *inv = backend_of(snap);
        const struct device_info *dev = NULL;
        for (unsigned i = 0; i < inv->n_devices; i++)
                if (inv->devices[i].index == index)
                        dev = &inv->devices[i];
        if (!dev) {
                reply_error(reply, 404, "not_found", "no device %u (this host has %u)", (unsigned) index,
                            inv->n_devices);
                snapshot_unref(snap);
                return;
        }
        char label[16];
        snprintf(label, sizeof(label), "%u", (unsigned) index);
        struct pod_map *pods = pod_slot_get(ctx->pods);
        reply_json_success(b, snap);
        buf_puts(b, "{\"device\":");
        json_device(b, snap, dev);
        buf_puts(b, ",\"timestamp\":");
        json_time(b, snap->timestamp_ms);
        buf_puts(b, ",\"values\":[");
        bool first = true;
        for (size_t i = 0; i < snap->n; i++) {
                const struct series_desc *d = &snap->set->series[i];
                if (!snap->valid[i] || !series_on_device(d, label))
                        continue;
                buf_puts(b, first ? "{\"metric\":" : ",{\"metric\":");
                first = false;
                json_series_labels(b, d, pod_map_series_holder(pods, d));
                buf_puts(b, ",\"value\":");
                json_value(b, snap->values[i]);
                buf_puts(b, "}");
        }
        buf_puts(b, "]}}\n");
        pod_map_unref(pods);
        snapshot_unref(snap);
        reply->status = 200;
        reply->content_type = JSON_TYPE;
}

static bool is_known_label(const char *name) {
        for (int m = 0; m < METRIC__COUNT; m++)
                if (metric_label_index(&metric_table[m], name) >= 0)
                        return true;
        return false;
}

/* Parameter i of an endpoint filtered by metric= and label=value: not
 * given twice (but metric= when several_metrics), and a known metric or a
 * label of some metric, or with pod_labels a pod label. Returns 1 for
 * metric= (its id in *ret_metric), 0 for a label, or -EINVAL with the
 * error in reply. */
static int check_filter_param(const struct param *params, size_t i, bool pod_labels, bool several_metrics,
                              int *ret_metric, struct web_reply *reply) {
        for (size_t j = 0; j < i; j++)
                if (strcmp(params[i].key, params[j].key) == 0 &&
                    (!several_metrics || strcmp(params[i].key, "metric") != 0 ||
                     strcmp(params[i].value, params[j].value) == 0)) {
                        reply_error(reply, 400, "bad_data", "parameter '%.64s' given more than once", params[i].key);
                        return -EINVAL;
                }
        if (strcmp(params[i].key, "metric") == 0) {
                int metric = metric_lookup(params[i].value);
                if (metric < 0) {
                        reply_error(reply, 400, "bad_data", "parameter 'metric': unknown metric '%.64s'",
                                    params[i].value);
                        return -EINVAL;
                }
                *ret_metric = metric;
                return 1;
        }
        if (!is_known_label(params[i].key) && !(pod_labels && pod_label_index(params[i].key) >= 0)) {
                reply_error(reply, 400, "bad_data", "parameter '%.64s': not a parameter nor a label", params[i].key);
                return -EINVAL;
        }
        return 0;
}

/* Whether name is a label of one of the wanted metrics. */
static bool label_of_wanted(const bool *wanted, const char *name) {
        for (int m = 0; m < METRIC__COUNT; m++)
                if (wanted[m] && metric_label_index(&metric_table[m], name) >= 0)
                        return true;
        return false;
}

/* Every current value, optionally of one or more metrics (metric= given
 * once each) and filtered by label=value, all from one tick. */
void api_latest(const struct web_context *ctx, const struct web_request *req, struct web_reply *reply) {
        const struct param *params = req->params;
        size_t n = req->n_params;
        bool wanted[METRIC__COUNT] = { false };
        size_t n_metrics = 0, last_metric = 0;
        struct buf *b = &reply->body;

        for (size_t i = 0; i < n; i++) {
                int metric = -1;
                int r = check_filter_param(params, i, ctx->pods != NULL, true, &metric, reply);
                if (r < 0)
                        return;
                if (r > 0) {
                        wanted[metric] = true;
                        n_metrics++;
                        last_metric = (size_t) metric;
                }
        }
        /* A label filter must be a label of a metric asked for: a typo
         * would otherwise answer nothing, as if no series matched. */
        for (size_t i = 0; i < n && n_metrics > 0; i++)
                if (strcmp(params[i].key, "metric") != 0 && !label_of_wanted(wanted, params[i].key) &&
                    !(ctx->pods && pod_label_index(params[i].key) >= 0)) {
                        if (n_metrics == 1)
                                reply_error(reply, 400, "bad_data", "parameter '%.64s': not a label of %s",
                                            params[i].key, metric_table[last_metric].name);
                        else
                                reply_error(reply, 400, "bad_data",
                                            "parameter '%.64s': not a label of any metric asked for", params[i].key);
                        return;
                }

        struct snapshot *snap = snapshot_slot_get(ctx->latest);
        struct pod_map *pods = pod_slot_get(ctx->pods);
        reply_json_success(b, snap);
        buf_puts(b, "{\"resultType\":\"vector\",\"timestamp\":");
        if (snap)
                json_time(b, snap->timestamp_ms);
        else
                buf_puts(b, "null");
        buf_puts(b, ",\"result\":[");
        bool first = true;
        for (size_t i = 0; snap && snap->set && i < snap->n; i++) {
                const struct series_desc *d = &snap->set->series[i];
                if (!snap->valid[i] || (n_metrics > 0 && !wanted[d->metric]))
                        continue;
                const struct pod_holder *holder = pod_map_series_holder(pods, d);
                bool keep = true;
                for (size_t p = 0; p < n && keep; p++)
                        if (strcmp(params[p].key, "metric") != 0)
                                keep = value_has_label(d, holder, params[p].key, params[p].value);
                if (!keep)
                        continue;
                buf_puts(b, first ? "{\"metric\":" : ",{\"metric\":");
                first = false;
                json_series_labels(b, d, holder);
                buf_puts(b, ",\"value\":");
                json_sample(b, snap->timestamp_ms, snap->values[i]);
                buf_puts(b, "}");
        }
        buf_puts(b, "]}}\n");
        pod_map_unref(pods);
        snapshot_unref(snap);
        reply->status = 200;
        reply->content_type = JSON_TYPE;
}

static bool matches(const struct series_desc *d, const struct history_query *q) {
        if (d->metric != q->metric)
                return false;
        for (size_t i = 0; i < q->n_matchers; i++)
                if (!series_has_label(d, q->matchers[i].name, q->matchers[i].value))
                        return false;
        return true;
}

void api_query_range_admit(const struct web_context *ctx, const struct web_request *req, struct web_reply *reply) {
        size_t max_series = ctx->max_query_series ? ctx->max_query_series : HTTP_DEFAULT_MAX_QUERY_SERIES;
        size_t max_points = ctx->max_query_points ? ctx->max_query_points : HTTP_DEFAULT_MAX_QUERY_POINTS;
        struct history_query q;
        char err[256];

        if (params_parse_query_range(req->params, req->n_params, clock_wall_ms(), &q, err, sizeof(err)) < 0) {
                reply_error(reply, 400, "bad_data", "%s", err);
                return;
        }
        /* The cost, as the store will count it: step-aligned buckets from
         * the one holding start, for every series that matches. */
        size_t points = (size_t) ((q.end_ms - (q.start_ms - q.start_ms % q.step_ms)) / q.step_ms) + 1;
        size_t series = 0;
        struct snapshot *snap = snapshot_slot_get(ctx->latest);
        for (size_t i = 0; snap && snap->set && i < snap->set->n; i++)
                series += matches(&snap->set->series[i], &q);
        snapshot_unref(snap);
        if (series > max_series)
                reply_error(reply, 422, "execution",
                            "the query matches %zu series, more than max_query_series (%zu); add label filters", series,
                            max_series);
        else if (series * points > max_points)
                reply_error(reply, 422, "execution",
                            "the query would return up to %zu points (%zu series x %zu points per series), more "
                            "than max_query_points (%zu); add label filters or increase step",
                            series * points, series, points, max_points);
}

/* A range query's matrix, written while it is sent (web/stream.h): each
 * series' points are freed once written, so the answer shrinks as it
 * goes out. */
struct matrix {
        struct snapshot *snap; /* the latest tick when the query was read */
        struct history_result *res;
        size_t series; /* the series being written */
        size_t point;  /* its next point */
        bool opened;   /* its labels are written */
        bool started, ended;
};

static bool matrix_produce(void *cls, struct buf *out) {
        struct matrix *m = cls;

        if (!m->started) {
                reply_json_success(out, m->snap);
                buf_puts(out, "{\"resultType\":\"matrix\",\"result\":[");
                m->started = true;
        }
        while (out->len < STREAM_PIECE_BYTES && !out->failed && m->series < m->res->n_series) {
                struct history_series *sr = &m->res->series[m->series];
                /* Not m->point == 0: a piece can end right after the labels. */
                if (!m->opened) {
                        buf_puts(out, m->series ? ",{\"metric\":" : "{\"metric\":");
                        json_series_labels(out, &sr->desc, NULL);
                        buf_puts(out, ",\"values\":[");
                        m->opened = true;
                }
                for (; m->point < sr->n_points && out->len < STREAM_PIECE_BYTES; m->point++) {
                        buf_puts(out, m->point ? "," : "");
                        json_sample(out, sr->points[m->point].timestamp_ms, sr->points[m->point].value);
                }
                if (m->point < sr->n_points)
                        break;
                buf_puts(out, "]}");
                free(sr->points);
                sr->points = NULL;
                sr->n_points = 0;
                m->series++;
                m->point = 0;
                m->opened = false;
        }
        if (m->series == m->res->n_series && !m->ended) {
                buf_puts(out, "]}}\n");
                m->ended = true;
        }
        return !m->ended;
}

static void matrix_free(void *cls) {
        struct matrix *m = cls;
        history_result_free(m->res);
        snapshot_unref(m->snap);
        free(m);
}

/* The store gives up between two series when this says so. */
static bool query_cancelled(const void *job) {
        return job && queue_job_cancelled(job);
}

void api_query_range(const struct web_context *ctx, const struct web_request *req, struct web_reply *reply) {
        const struct param *params = req->params;
        size_t n = req->n_params;
        struct history_query q;
        struct history_result *res = NULL;
        char err[256];

        if (params_parse_query_range(params, n, clock_wall_ms(), &q, err, sizeof(err)) < 0) {
                reply_error(reply, 400, "bad_data", "%s", err);
                return;
        }
        q.cancelled = query_cancelled;
        q.cancel_cls = req->job;
        /* Taken first: the store then holds at least this tick. */
        struct snapshot *snap = snapshot_slot_get(ctx->latest);
        int r = ctx->history.ops->query_range(ctx->history.impl, &q, &res);
        if (r < 0)
                snapshot_unref(snap);
        if (r == -E2BIG) {
                reply_error(reply, 422, "execution",
                            "the query would return more than %d points in all, the store's limit; add label filters "
                            "or increase step",
                            HISTORY_POINTS_MAX);
                return;
        }
        if (r == -EINVAL) {
                reply_error(reply, 400, "bad_data", "the query cannot be answered: %s", strerror(-r));
                return;
        }
        if (r == -ECANCELED) {
                reply_error(reply, 503, "unavailable", "the query was cancelled");
                return;
        }
        if (answer_store_error(reply, r))
                return;
        struct matrix *m = calloc(1, sizeof(*m));
        if (!m) {
                history_result_free(res);
                snapshot_unref(snap);
                reply_error(reply, 500, "internal", "out of memory");
                return;
        }
        m->res = res;
        m->snap = snap;
        bool gzip = req->conn && accept_gzip(MHD_lookup_connection_value(req->conn, MHD_HEADER_KIND,
                                                                         MHD_HTTP_HEADER_ACCEPT_ENCODING));
        reply->response = stream_response(matrix_produce, m, matrix_free, gzip);
        if (!reply->response) {
                reply_error(reply, 500, "internal", "out of memory");
                return;
        }
        if (gzip)
                MHD_add_response_header(reply->response, MHD_HTTP_HEADER_CONTENT_ENCODING, "gzip");
        MHD_add_response_header(reply->response, MHD_HTTP_HEADER_VARY, "Accept-Encoding");
        MHD_add_response_header(reply->response, MHD_HTTP_HEADER_CACHE_CONTROL, "no-store");
        reply->status = 200;
        reply->content_type = JSON_TYPE;
}

/* Every stored series with its labels, optionally of one metric and
 * filtered by label=value; series of earlier runs included. */
void api_series(const struct web_context *ctx, const struct web_request *req, struct web_reply *reply) {
        const struct param *params = req->params;
        size_t n = req->n_params;
        struct history_matcher matchers[HISTORY_MATCHERS_MAX];
        size_t n_matchers = 0;
        int metric = -1;

        for (size_t i = 0; i < n; i++) {
                int r = check_filter_param(params, i, false, false, &metric, reply);
                if (r < 0)
                        return;
                if (r > 0)
                        continue;
                if (n_matchers == HISTORY_MATCHERS_MAX || strlen(params[i].key) >= sizeof(matchers[0].name) ||
                    strlen(params[i].value) >= sizeof(matchers[0].value)) {
                        reply_error(reply, 400, "bad_data", "parameter '%.64s': not a parameter nor a label",
                                    params[i].key);
                        return;
                }
                snprintf(matchers[n_matchers].name, sizeof(matchers[0].name), "%s", params[i].key);
                snprintf(matchers[n_matchers].value, sizeof(matchers[0].value), "%s", params[i].value);
                n_matchers++;
        }
        struct series_desc *list = NULL;
        size_t count = 0;
        struct snapshot *snap = snapshot_slot_get(ctx->latest);
        int r = ctx->history.ops->list_series(ctx->history.impl, metric, matchers, n_matchers, &list, &count);
        if (answer_store_error(reply, r)) {
                snapshot_unref(snap);
                return;
        }
        struct buf *b = &reply->body;
        reply_json_success(b, snap);
        snapshot_unref(snap);
        buf_puts(b, "[");
        for (size_t i = 0; i < count; i++) {
                if (i)
                        buf_puts(b, ",");
                json_series_labels(b, &list[i], NULL);
        }
        buf_puts(b, "]}\n");
        free(list);
        reply->status = 200;
        reply->content_type = JSON_TYPE;
}

/* The indexes whose holder in lookup (n entries) is holder, as a JSON
 * array. */
static void json_held(struct buf *b, const long *lookup, size_t n, long holder) {
        buf_puts(b, "[");
        for (size_t i = 0, k = 0; i < n; i++)
                if (lookup[i] == holder)
                        buf_printf(b, "%s%zu", k++ ? "," : "", i);
        buf_puts(b, "]");
}

/* A grant list of one unit, as a JSON array of indexes. */
static void json_assigned(struct buf *b, const struct pod_map *m, size_t holder, enum pod_unit unit) {
        buf_puts(b, "[");
        for (size_t i = 0, k = 0; i < m->n_grants; i++)
                if (m->grants[i].holder == holder && m->grants[i].unit == unit)
                        buf_printf(b, "%s%u", k++ ? "," : "", m->grants[i].index);
        buf_puts(b, "]");
}

void api_pods(const struct web_context *ctx, const struct web_request *req, struct web_reply *reply) {
        struct buf *b = &reply->body;

        if (reject_params(req, reply))
                return;
        struct pod_map *m = pod_slot_get(ctx->pods);
        const char *state = !ctx->pods ? "off" : !m ? "starting" : m->error ? "error" : "ok";
        struct snapshot *snap = snapshot_slot_get(ctx->latest);
        reply_json_success(b, snap);
        snapshot_unref(snap);
        buf_printf(b, "{\"state\":\"%s\",\"socket\":", state);
        if (ctx->pods)
                json_string(b, ctx->pod_resources_socket);
        else
                buf_puts(b, "null");
        if (m && m->error) {
                buf_puts(b, ",\"error\":");
                json_string(b, m->error_text);
        }
        buf_puts(b, ",\"asked\":");
        if (m && m->asked_ms)
                json_time(b, m->asked_ms);
        else
                buf_puts(b, "null");
        buf_puts(b, ",\"answered\":");
        if (m && m->answered_ms)
                json_time(b, m->answered_ms);
        else
                buf_puts(b, "null");
        buf_printf(b, ",\"unmapped_ids\":%zu,\"containers\":[", m ? m->bad_ids : 0);
        for (size_t h = 0; m && h < m->n_holders; h++) {
                const struct pod_holder *holder = &m->holders[h];
                buf_puts(b, h ? ",{\"namespace\":" : "{\"namespace\":");
                json_string(b, holder->namespace);
                buf_puts(b, ",\"pod\":");
                json_string(b, holder->pod);
                buf_puts(b, ",\"container\":");
                json_string(b, holder->container);
                buf_puts(b, ",\"neuroncores\":");
                json_held(b, m->core_holder, m->n_core_holders, (long) h);
                buf_puts(b, ",\"neuron_devices\":");
                json_held(b, m->device_holder, m->n_device_holders, (long) h);
                buf_puts(b, ",\"assigned\":{\"neuroncores\":");
                json_assigned(b, m, h, POD_UNIT_CORE);
                buf_puts(b, ",\"neuron_devices\":");
                json_assigned(b, m, h, POD_UNIT_DEVICE);
                buf_puts(b, "}}");
        }
        buf_puts(b, "]}}\n");
        pod_map_unref(m);
        reply->status = 200;
        reply->content_type = JSON_TYPE;
}

void api_status(const struct web_context *ctx, const struct web_request *req, struct web_reply *reply) {
        struct buf *b = &reply->body;

        if (reject_params(req, reply))
                return;
        struct snapshot *snap = snapshot_slot_get(ctx->latest);
        const struct inventory *inv = backend_of(snap);
        reply_json_success(b, snap);
        buf_puts(b, "{\"version\":");
        json_string(b, ctx->self.version);
        buf_puts(b, ",\"backend\":");
        json_string(b, ctx->self.backend);
        /* A backend without devices works, with nothing to poll: why. */
        buf_printf(b, ",\"devices\":%u,\"backend_state\":\"%s\",\"backend_reason\":", inv->n_devices,
                   !snap            ? "starting"
                   : inv->n_devices ? "ok"
                                    : "no_devices");
        json_string(b, inv->backend_reason);
        buf_puts(b, ",\"instance_type\":");
        json_string(b, inv->instance_type);
        buf_printf(b, ",\"interval_seconds\":%.3f,\"time_scale\":",
                   (double) __atomic_load_n(&ctx->interval_ms, __ATOMIC_RELAXED) / 1000.0);
        buf_double(b, ctx->time_scale);
        buf_printf(b, ",\"series\":%zu,\"runtimes\":%zu,\"started\":", snap && snap->set ? snap->set->n : 0,
                   snap && snap->set ? snap->set->n_runtimes : 0);
        json_time(b, ctx->started_ms);
        buf_printf(b, ",\"uptime_seconds\":%.3f,\"last_tick\":", (double) (clock_wall_ms() - ctx->started_ms) / 1000.0);
        if (snap)
                json_time(b, snap->timestamp_ms);
        else
                buf_puts(b, "null");
        /* As /healthz says it: the latest tick may be old without the loop
         * being stuck (the dashboard tells a person so). */
        struct tick_state ticks = { .held = false };
        if (ctx->ticks)
                tick_control_get(ctx->ticks, &ticks);
        if (ticks.held)
                buf_puts(b, ",\"held\":true");
        struct history_stats st;
        ctx->history.ops->get_stats(ctx->history.impl, &st);
        buf_printf(b,
                   ",\"store\":{\"used_bytes\":%lld,\"size_cap_bytes\":%llu,\"degraded\":%s,\"retention_seconds\":"
                   "{\"raw\":%lld,\"1m\":%lld,\"1h\":%lld}}",
                   (long long) st.used_bytes, (unsigned long long) st.size_cap_bytes, st.degraded ? "true" : "false",
                   (long long) (st.raw_retention_ms / 1000), (long long) (st.minute_retention_ms / 1000),
                   (long long) (st.hour_retention_ms / 1000));
        buf_puts(b, ",\"collectors\":[");
        for (size_t i = 0; i < ctx->self.n_collectors; i++) {
                buf_puts(b, i ? ",{\"name\":" : "{\"name\":");
                json_string(b, ctx->self.collector_names[i]);
                buf_printf(b, ",\"up\":%s}", snap && snap->collector_up[i] ? "true" : "false");
        }
        buf_puts(b, "]}}\n");
        snapshot_unref(snap);
        reply->status = 200;
        reply->content_type = JSON_TYPE;
}

/* The Neuron runtimes as of the latest tick and the cores each holds. */
void api_runtimes(const struct web_context *ctx, const struct web_request *req, struct web_reply *reply) {
        struct buf *b = &reply->body;

        if (reject_params(req, reply))
                return;
        struct snapshot *snap = snapshot_slot_get(ctx->latest);
        const struct series_set *set = snap ? snap->set : NULL;
        const struct inventory *inv = backend_of(snap);
        unsigned cores_per_device = inv->n_devices ? inv->devices[0].core_count : 0;
        reply_json_success(b, snap);
        buf_puts(b, "{\"timestamp\":");
        if (snap)
                json_time(b, snap->timestamp_ms);
        else
                buf_puts(b, "null");
        buf_puts(b, ",\"runtimes\":[");
        for (size_t i = 0; set && i < set->n_runtimes; i++) {
                const struct runtime_info *r = &set->runtimes[i];
                buf_printf(b, "%s{\"pid\":%u,\"runtime_tag\":", i ? "," : "", r->pid);
                json_string(b, r->tag);
                buf_puts(b, ",\"neuroncores\":[");
                for (unsigned k = 0; k < r->n_cores; k++)
                        buf_printf(b, "%s%u", k ? "," : "", r->cores[k]);
                buf_puts(b, "],\"neuron_devices\":[");
                /* Cores are ascending: a device's cores are neighbours. */
                for (unsigned k = 0, n = 0; cores_per_device && k < r->n_cores; k++) {
                        unsigned dev = r->cores[k] / cores_per_device;
                        if (k > 0 && r->cores[k - 1] / cores_per_device == dev)
                                continue;
                        buf_printf(b, "%s%u", n++ ? "," : "", dev);
                }
                buf_puts(b, "]}");
        }
        buf_puts(b, "]}}\n");
        snapshot_unref(snap);
        reply->status = 200;
        reply->content_type = JSON_TYPE;
}

static void json_event(struct buf *b, const struct health_event *ev) {
        buf_puts(b, "{\"time\":");
        json_time(b, ev->timestamp_ms);
        if (ev->device >= 0)
                buf_printf(b, ",\"device\":%d", ev->device);
        else
                buf_puts(b, ",\"device\":null");
        if (ev->core >= 0)
                buf_printf(b, ",\"core\":%d", ev->core);
        else
                buf_puts(b, ",\"core\":null");
        buf_printf(b, ",\"kind\":\"%s\",\"phase\":\"%s\",\"severity\":\"%s\",\"state\":\"%s\",\"reason\":",
                   health_kind_name(ev->kind), health_phase_names[ev->phase], health_severity_names[ev->severity],
                   health_state_names[ev->state]);
        json_string(b, ev->reason);
        buf_puts(b, ",\"value\":");
        json_number(b, ev->value);
        buf_puts(b, "}");
}

/* The host at a glance: the worst device state, how many devices are in
 * each, those not healthy with their reasons, and the last events. */
void api_health(const struct web_context *ctx, const struct web_request *req, struct web_reply *reply) {
        struct buf *b = &reply->body;

        if (reject_params(req, reply))
                return;
        struct snapshot *snap = snapshot_slot_get(ctx->latest);
        const struct health_result *h = snap ? snap->health : NULL;
        unsigned n_devices = backend_of(snap)->n_devices;
        size_t counts[HEALTH__COUNT] = { 0 };
        for (size_t k = 0; h && k < h->n_devices; k++)
                counts[h->devices[k].state]++;
        /* Before the first result every device is unknown. */
        if (!h)
                counts[HEALTH_UNKNOWN] = n_devices;
        reply_json_success(b, snap);
        buf_puts(b, "{\"timestamp\":");
        if (h)
                json_time(b, h->timestamp_ms);
        else
                buf_puts(b, "null");
        buf_printf(b, ",\"state\":\"%s\",\"devices\":%u,\"counts\":{",
                   health_state_names[h ? health_worst(h) : HEALTH_UNKNOWN], n_devices);
        for (int st = 0; st < HEALTH__COUNT; st++)
                buf_printf(b, "%s\"%s\":%zu", st ? "," : "", health_state_names[st], counts[st]);
        buf_puts(b, "},\"not_healthy\":[");
        for (size_t k = 0, n = 0; h && k < h->n_devices; k++) {
                const struct health_device *d = &h->devices[k];
                if (d->state == HEALTH_HEALTHY)
                        continue;
                buf_printf(b, "%s{\"device\":%u,\"state\":\"%s\",\"since\":", n++ ? "," : "", d->index,
                           health_state_names[d->state]);
                json_time(b, d->since_ms);
                buf_puts(b, ",\"action\":");
                if (d->action)
                        json_string(b, d->action);
                else
                        buf_puts(b, "null");
                buf_puts(b, ",\"reasons\":[");
                for (size_t j = 0; j < d->count; j++) {
                        buf_puts(b, j ? "," : "");
                        json_finding(b, &h->findings[d->first + j]);
                }
                buf_puts(b, "]}");
        }
        buf_puts(b, "],\"events\":[");
        /* Newest first: what happened last is what a reader wants first. */
        for (size_t k = 0; h && k < h->n_recent; k++) {
                buf_puts(b, k ? "," : "");
                json_event(b, &h->recent[h->n_recent - 1 - k]);
        }
        buf_puts(b, "]}}\n");
        snapshot_unref(snap);
        reply->status = 200;
        reply->content_type = JSON_TYPE;
}

#define EVENTS_LIMIT_DEFAULT 1000
#define EVENTS_LIMIT_MAX 10000

/* Stored health events in a time range, filtered by device, kind and
 * severity. Times are relative to the latest tick's stamp ("-1h"), the
 * daemon's clock, which the model's speed and driven ticks move. */
void api_events(const struct web_context *ctx, const struct web_request *req, struct web_reply *reply) {
        struct history_events_query q = { .device = -1, .kind = -1, .severity = -1, .limit = EVENTS_LIMIT_DEFAULT };
        struct snapshot *snap = snapshot_slot_get(ctx->latest);
        int64_t now = snap ? snap->timestamp_ms : clock_wall_ms();
        bool have_start = false, have_end = false;
        int r = 0;

        for (size_t i = 0; i < req->n_params && r == 0; i++) {
                const char *key = req->params[i].key, *value = req->params[i].value;
                uint64_t v;
                for (size_t j = 0; j < i; j++)
                        if (strcmp(key, req->params[j].key) == 0) {
                                reply_error(reply, 400, "bad_data", "parameter '%.64s' given more than once", key);
                                r = -EINVAL;
                        }
                if (r < 0)
                        break;
                if (strcmp(key, "start") == 0 || strcmp(key, "end") == 0) {
                        bool start = key[0] == 's';
                        if (params_parse_time_at(value, now, start ? &q.start_ms : &q.end_ms) < 0) {
                                reply_error(reply, 400, "bad_data",
                                            "parameter '%s': '%.64s' is not Unix seconds, RFC 3339, now or a time "
                                            "before it such as -1h",
                                            key, value);
                                r = -EINVAL;
                        }
                        *(start ? &have_start : &have_end) = true;
                } else if (strcmp(key, "device") == 0) {
                        if (parse_uint_range(value, 0, 99999, &v) < 0) {
                                reply_error(reply, 400, "bad_data", "parameter 'device': '%.64s' is not a device index",
                                            value);
                                r = -EINVAL;
                        }
                        q.device = (int) v;
                } else if (strcmp(key, "kind") == 0) {
                        q.kind = health_kind_lookup(value);
                        if (q.kind < 0) {
                                reply_error(reply, 400, "bad_data",
                                            "parameter 'kind': '%.64s' is not a rule's kind nor 'state'", value);
                                r = -EINVAL;
                        }
                } else if (strcmp(key, "severity") == 0) {
                        q.severity = health_severity_lookup(value);
                        if (q.severity < 0) {
                                reply_error(reply, 400, "bad_data",
                                            "parameter 'severity': '%.64s' is not info, warning or critical", value);
                                r = -EINVAL;
                        }
                } else if (strcmp(key, "limit") == 0) {
                        if (parse_uint_range(value, 1, EVENTS_LIMIT_MAX, &v) < 0) {
                                reply_error(reply, 400, "bad_data", "parameter 'limit': '%.64s' is not 1 to %d", value,
                                            EVENTS_LIMIT_MAX);
                                r = -EINVAL;
                        }
                        q.limit = (size_t) v;
                } else {
                        reply_error(reply, 400, "bad_data", "parameter '%.64s': not a parameter of this endpoint", key);
                        r = -EINVAL;
                }
        }
        if (r == 0) {
                if (!have_end)
                        q.end_ms = now;
                if (!have_start)
                        q.start_ms = q.end_ms - 3600 * 1000;
                if (q.start_ms > q.end_ms) {
                        reply_error(reply, 400, "bad_data", "parameter 'start': after end");
                        r = -EINVAL;
                }
        }
        struct health_event *events = NULL;
        size_t n = 0;
        if (r == 0 && !ctx->history.ops->query_events) {
                reply_error(reply, 503, "unavailable", "this store keeps no events");
                r = -ENOTSUP;
        }
        if (r == 0) {
                r = ctx->history.ops->query_events(ctx->history.impl, &q, &events, &n);
                answer_store_error(reply, r);
        }
        if (r < 0) {
                snapshot_unref(snap);
                return;
        }
        struct buf *b = &reply->body;
        reply_json_success(b, snap);
        snapshot_unref(snap);
        buf_puts(b, "{\"start\":");
        json_time(b, q.start_ms);
        buf_puts(b, ",\"end\":");
        json_time(b, q.end_ms);
        buf_puts(b, ",\"events\":[");
        for (size_t i = 0; i < n; i++) {
                buf_puts(b, i ? "," : "");
                json_event(b, &events[i]);
        }
        buf_puts(b, "]}}\n");
        free(events);
        reply->status = 200;
        reply->content_type = JSON_TYPE;
}

void api_not_found(const struct web_context *ctx, const struct web_request *req, struct web_reply *reply) {
        reply_error(reply, 404, "not_found", "no such API endpoint: %.200s", req->path);
}
