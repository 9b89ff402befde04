#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/process.h"
#include "web/expo.h"

const char *const expo_http_codes[EXPO_HTTP_CODES] = {
        "200", "204", "304", "400", "401", "403", "404", "405",   "406",
        "414", "421", "422", "431", "500", "501", "503", "other",
};

struct expo_family {
        enum metric_id metric;
        size_t first, count; /* a range of expo.order */
        char *header[2];     /* HELP/TYPE(/UNIT) lines per accept_format */
        size_t header_len[2];
};

/* Where a series is, for the pod labels of its core or device. */
struct expo_place {
        enum pod_place place;
        unsigned device, core;
};

struct expo {
        char *info[2]; /* instance_info and neuron_hardware_info per accept_format, or NULL */
        size_t info_len[2];
        size_t n_series;
        size_t *order;   /* series indexes grouped by family */
        char **prefixes; /* per series: `name{labels} ` */
        size_t *prefix_lens;
        struct expo_place *places; /* per series */
        size_t prefix_total;       /* sum of prefix_lens, to reserve the output once */
        size_t header_total;       /* sum of the longer header of each family */
        size_t n_families;
        struct expo_family families[METRIC__COUNT];
};

size_t expo_http_code_index(unsigned status) {
        char text[4] = { (char) ('0' + status / 100 % 10), (char) ('0' + status / 10 % 10), (char) ('0' + status % 10),
                         0 };
        for (size_t i = 0; status >= 100 && status <= 999 && i < EXPO_HTTP_CODES - 1; i++)
                if (memcmp(expo_http_codes[i], text, 4) == 0)
                        return i;
        return EXPO_HTTP_CODES - 1;
}

void expo_escape_label_value(struct buf *out, const char *value) {
        const char *run = value;
        for (const char *p = value;; p++) {
                const char *esc = *p == '\\' ? "\\\\" : *p == '"' ? "\\\"" : *p == '\n' ? "\\n" : NULL;
                /* A label value that is not UTF-8 makes Prometheus refuse the
                 * whole scrape: such a byte goes out as U+FFFD. */
                size_t len = (unsigned char) *p < 0x80 ? 1 : utf8_char_length(p);
                if (len == 0)
                        esc = "\xef\xbf\xbd";
                if (!esc && *p) {
                        p += len - 1;
                        continue;
                }
                if (p > run)
                        buf_append(out, run, (size_t) (p - run));
                if (!*p)
                        break;
                buf_puts(out, esc);
                run = p + 1;
        }
}

/* HELP text: the text format escapes \ and newline, OpenMetrics also ". */
static void escape_help(struct buf *out, const char *help, enum accept_format format) {
        for (const char *p = help; *p; p++) {
                if (*p == '\\')
                        buf_append(out, "\\\\", 2);
                else if (*p == '\n')
                        buf_append(out, "\\n", 2);
                else if (*p == '"' && format == ACCEPT_OPENMETRICS)
                        buf_append(out, "\\\"", 2);
                else
                        buf_append(out, p, 1);
        }
}

static bool has_suffix(const char *name, const char *suffix) {
        size_t n = strlen(name), s = strlen(suffix);
        return n > s && strcmp(name + n - s, suffix) == 0;
}

/* The header of one family. In OpenMetrics a counter's family is its
 * sample name without _total, and an info family is its name without
 * _info; the text format names the family by its sample. */
static void family_header(struct buf *out, enum accept_format format, const char *sample, const char *help,
                          const char *type, const char *unit) {
        size_t name_len = strlen(sample);
        if (format == ACCEPT_OPENMETRICS) {
                if (strcmp(type, "counter") == 0 && has_suffix(sample, "_total"))
                        name_len -= strlen("_total");
                else if (strcmp(type, "info") == 0 && has_suffix(sample, "_info"))
                        name_len -= strlen("_info");
        } else if (strcmp(type, "info") == 0) {
                type = "gauge";
        }
        /* OpenMetrics calls an untyped family "unknown". */
        if (format == ACCEPT_OPENMETRICS && strcmp(type, "untyped") == 0)
                type = "unknown";
        buf_puts(out, "# HELP ");
        buf_append(out, sample, name_len);
        buf_puts(out, " ");
        escape_help(out, help, format);
        buf_puts(out, "\n# TYPE ");
        buf_append(out, sample, name_len);
        buf_puts(out, " ");
        buf_puts(out, type);
        buf_puts(out, "\n");
        if (format == ACCEPT_OPENMETRICS && unit) {
                buf_puts(out, "# UNIT ");
                buf_append(out, sample, name_len);
                buf_puts(out, " ");
                buf_puts(out, unit);
                buf_puts(out, "\n");
        }
}

void expo_free(struct expo *e) {
        if (!e)
                return;
        /* prefixes is NULL when its own allocation failed. */
        for (size_t i = 0; e->prefixes && i < e->n_series; i++)
                free(e->prefixes[i]);
        for (size_t f = 0; f < e->n_families; f++) {
                free(e->families[f].header[0]);
                free(e->families[f].header[1]);
        }
        free(e->info[0]);
        free(e->info[1]);
        free(e->prefixes);
        free(e->prefix_lens);
        free(e->places);
        free(e->order);
        free(e);
}

/* Appends `name="value"` pairs with non-empty values, the first after
 * `{` and the others after `,`; *open says whether `{` was written. */
static void append_labels(struct buf *b, const char *const *names, const char *const *values, size_t n, bool *open) {
        for (size_t i = 0; i < n; i++) {
                if (!values[i] || !values[i][0])
                        continue;
                buf_puts(b, *open ? "," : "{");
                *open = true;
                buf_puts(b, names[i]);
                buf_puts(b, "=\"");
                expo_escape_label_value(b, values[i]);
                buf_puts(b, "\"");
        }
}

#define INSTANCE_LABELS 6
static const char *const instance_label_names[INSTANCE_LABELS] = {
        "instance_name", "instance_id", "instance_type", "availability_zone", "region", "subnet_id",
};

static void instance_label_values(const struct instance_identity *id, const char *values[INSTANCE_LABELS]) {
        const char *v[INSTANCE_LABELS] = {
                id->instance_name, id->instance_id, id->instance_type, id->availability_zone, id->region, id->subnet_id,
        };
        memcpy(values, v, sizeof(v));
}

/* neuron-monitor's neuron_device_type: the chip family in lower case. */
static void device_type(const struct device_info *d, char *out, size_t size) {
        size_t i = 0;
        for (; d->name[i] && i + 1 < size; i++)
                out[i] = (char) (d->name[i] >= 'A' && d->name[i] <= 'Z' ? d->name[i] - 'A' + 'a' : d->name[i]);
        out[i] = '\0';
        /* The driver says "Trainium1"; the tools say "trainium". */
        if (strcmp(out, "trainium1") == 0)
                out[strlen("trainium")] = '\0';
}

/* neuron-monitor's neuroncore_version: "v2" from "NCv2", with a "d" for
 * a logical core of two physical ones (the user guide's "v3d"). */
static void core_version(const struct device_info *d, unsigned lnc, char *out, size_t size) {
        const char *v = strncmp(d->core_arch, "NC", 2) == 0 ? d->core_arch + 2 : d->core_arch;
        snprintf(out, size, "%s%s", v, lnc > 1 && v[0] ? "d" : "");
}

/* The two info families, rendered once: they change only with the inventory. */
static void render_info(struct buf *b, enum accept_format format, const struct inventory *inv) {
        const char *inst[INSTANCE_LABELS];
        bool open = false;

        instance_label_values(&inv->identity, inst);
        if (inv->identity.instance_id[0]) {
                family_header(b, format, "instance_info", "EC2 instance information; always 1.", "info", NULL);
                buf_puts(b, "instance_info");
                append_labels(b, instance_label_names, inst, INSTANCE_LABELS, &open);
                buf_puts(b, open ? "} 1\n" : " 1\n");
        }
        if (inv->ultraserver.nodes) {
                static const char *const us_names[] = { "ultraserver_id", "ultraserver_node", "ultraserver_nodes" };
                char node[16], nodes[16];
                snprintf(node, sizeof(node), "%u", inv->ultraserver.node);
                snprintf(nodes, sizeof(nodes), "%u", inv->ultraserver.nodes);
                const char *us_values[] = { inv->ultraserver.id, node, nodes };
                family_header(b, format, "neuron_ultraserver_info", "The UltraServer this host is a node of; always 1.",
                              "info", NULL);
                buf_puts(b, "neuron_ultraserver_info");
                open = false;
                append_labels(b, us_names, us_values, 3, &open);
                buf_puts(b, "} 1\n");
        }
        if (inv->n_devices == 0)
                return;
        const struct device_info *d = &inv->devices[0];
        char count[16], per[16], size[24], type[32], version[16], lnc[8];
        snprintf(count, sizeof(count), "%u", inv->n_devices);
        snprintf(per, sizeof(per), "%u", d->core_count);
        snprintf(size, sizeof(size), "%llu", (unsigned long long) d->memory_bytes);
        snprintf(lnc, sizeof(lnc), "%u", inv->lnc);
        device_type(d, type, sizeof(type));
        core_version(d, inv->lnc, version, sizeof(version));
        static const char *const names[] = {
                "neuron_device_count", "neuroncore_per_device_count", "neuron_device_memory_size",
                "neuron_device_type",  "neuroncore_version",          "logical_neuroncore_config",
        };
        const char *values[] = { count, per, d->memory_bytes ? size : "", type, version, inv->lnc ? lnc : "" };
        family_header(b, format, "neuron_hardware_info", "Neuron hardware information; always 1.", "info", NULL);
        buf_puts(b, "neuron_hardware_info");
        open = false;
        append_labels(b, names, values, sizeof(names) / sizeof(names[0]), &open);
        append_labels(b, instance_label_names, inst, INSTANCE_LABELS, &open);
        buf_puts(b, "} 1\n");
}

int expo_new_with(const struct series_desc *series, size_t n, const struct expo_instance *instance, struct expo **ret) {
        struct expo *e = calloc(1, sizeof(*e));
        if (!e)
                return -ENOMEM;
        e->n_series = n;
        e->order = calloc(n ? n : 1, sizeof(*e->order));
        e->prefixes = calloc(n ? n : 1, sizeof(*e->prefixes));
        e->prefix_lens = calloc(n ? n : 1, sizeof(*e->prefix_lens));
        e->places = calloc(n ? n : 1, sizeof(*e->places));
        if (!e->order || !e->prefixes || !e->prefix_lens || !e->places)
                goto fail;

        /* Counting sort by family keeps each family's series in inventory order. */
        size_t per_family[METRIC__COUNT] = { 0 };
        for (size_t i = 0; i < n; i++)
                per_family[series[i].metric]++;
        size_t next[METRIC__COUNT];
        size_t at = 0;
        for (int m = 0; m < METRIC__COUNT; m++) {
                next[m] = at;
                if (per_family[m]) {
                        struct expo_family *fam = &e->families[e->n_families++];
                        const struct metric_desc *md = &metric_table[m];
                        *fam = (struct expo_family){ .metric = m, .first = at, .count = per_family[m] };
                        for (int f = ACCEPT_TEXT; f <= ACCEPT_OPENMETRICS; f++) {
                                struct buf b = { 0 };
                                family_header(&b, (enum accept_format) f, md->name, md->help,
                                              md->type == METRIC_COUNTER   ? "counter"
                                              : md->type == METRIC_INFO    ? "info"
                                              : md->type == METRIC_UNTYPED ? "untyped"
                                                                           : "gauge",
                                              md->unit);
                                if (b.failed) {
                                        buf_free(&b);
                                        goto fail;
                                }
                                fam->header[f] = b.data;
                                fam->header_len[f] = b.len;
                                if (f == ACCEPT_OPENMETRICS) /* the longer one: it adds UNIT */
                                        e->header_total += b.len;
                        }
                }
                at += per_family[m];
        }
        for (size_t i = 0; i < n; i++)
                e->order[next[series[i].metric]++] = i;

        const char *inst[INSTANCE_LABELS] = { NULL };
        if (instance && instance->labels_on_every_series)
                instance_label_values(&instance->inv->identity, inst);
        for (size_t i = 0; i < n; i++) {
                const struct metric_desc *m = &metric_table[series[i].metric];
                const char *values[METRIC_LABELS_MAX];
                struct buf b = { 0 };
                bool open = false;
                for (size_t l = 0; l < METRIC_LABELS_MAX; l++)
                        values[l] = series[i].label_values[l];
                buf_puts(&b, m->name);
                append_labels(&b, m->labels, values, metric_label_count(m), &open);
                append_labels(&b, instance_label_names, inst, INSTANCE_LABELS, &open);
                buf_puts(&b, open ? "} " : " ");
                if (b.failed) {
                        buf_free(&b);
                        goto fail;
                }
                e->prefixes[i] = b.data;
                e->prefix_lens[i] = b.len;
                e->prefix_total += b.len;
                struct expo_place *p = &e->places[i];
                p->place = pod_series_place(&series[i], &p->device, &p->core);
        }
        for (int f = ACCEPT_TEXT; instance && f <= ACCEPT_OPENMETRICS; f++) {
                struct buf b = { 0 };
                render_info(&b, (enum accept_format) f, instance->inv);
                if (b.failed) {
                        buf_free(&b);
                        goto fail;
                }
                e->info[f] = b.data;
                e->info_len[f] = b.len;
        }
        *ret = e;
        return 0;
fail:
        expo_free(e);
        return -ENOMEM;
}

int expo_new(const struct series_desc *series, size_t n, struct expo **ret) {
        return expo_new_with(series, n, NULL, ret);
}

static void counter_line(struct buf *out, const char *name, const atomic_uint_fast64_t *value) {
        buf_puts(out, name);
        buf_printf(out, " %llu\n", (unsigned long long) atomic_load_explicit(value, memory_order_relaxed));
}

/* Remote write, per endpoint: the names docs/remote-write.md gives, which
 * every request also carries. */
static void render_forward(const struct forward *fw, enum accept_format format, struct buf *out) {
        static const struct {
                const char *name, *help, *type, *unit;
        } families[] = {
                { "neurond_remote_write_samples_sent_total", "Stored samples the remote write receiver took.",
                  "counter", NULL },
                { "neurond_remote_write_samples_failed_total",
                  "Stored samples the receiver refused for good (4xx) or past sample_age_limit.", "counter", NULL },
                { "neurond_remote_write_retries_total",
                  "Remote write requests sent again after no answer, a 5xx or a 429.", "counter", NULL },
                { "neurond_remote_write_pending_samples", "Stored samples not sent yet, as last counted.", "gauge",
                  NULL },
                { "neurond_remote_write_behind_seconds",
                  "The newest stored sample's time minus the newest sent one's; 0 when caught up.", "gauge",
                  "seconds" },
        };
        size_t n = fw->ops->count(fw->impl);

        for (size_t k = 0; k < sizeof(families) / sizeof(families[0]); k++) {
                family_header(out, format, families[k].name, families[k].help, families[k].type, families[k].unit);
                for (size_t i = 0; i < n; i++) {
                        struct forward_stats st;
                        fw->ops->get(fw->impl, i, &st);
                        const double values[] = { (double) st.samples_sent, (double) st.samples_failed,
                                                  (double) st.retries, (double) st.pending, st.behind_seconds };
                        buf_puts(out, families[k].name);
                        buf_puts(out, "{endpoint=\"");
                        expo_escape_label_value(out, st.endpoint);
                        buf_puts(out, "\"} ");
                        buf_double(out, values[k]);
                        buf_puts(out, "\n");
                }
        }
}

/* neurond's process as Prometheus client libraries describe theirs. */
static void render_process(struct buf *out, enum accept_format format, const struct process_stats *ps) {
        family_header(out, format, "process_cpu_seconds_total", "Total user and system CPU time spent in seconds.",
                      "counter", "seconds");
        buf_puts(out, "process_cpu_seconds_total ");
        buf_double(out, ps->cpu_seconds);
        buf_puts(out, "\n");
        family_header(out, format, "process_start_time_seconds",
                      "Start time of the process since unix epoch in seconds.", "gauge", "seconds");
        buf_puts(out, "process_start_time_seconds ");
        buf_double(out, ps->start_time);
        buf_puts(out, "\n");
        family_header(out, format, "process_virtual_memory_bytes", "Virtual memory size in bytes.", "gauge", "bytes");
        buf_printf(out, "process_virtual_memory_bytes %llu\n", (unsigned long long) ps->virtual_bytes);
        family_header(out, format, "process_resident_memory_bytes", "Resident memory size in bytes.", "gauge", "bytes");
        buf_printf(out, "process_resident_memory_bytes %llu\n", (unsigned long long) ps->resident_bytes);
        family_header(out, format, "process_open_fds", "Number of open file descriptors.", "gauge", NULL);
        buf_printf(out, "process_open_fds %llu\n", (unsigned long long) ps->open_fds);
        family_header(out, format, "process_max_fds", "Maximum number of open file descriptors.", "gauge", NULL);
        buf_printf(out, "process_max_fds %llu\n", (unsigned long long) ps->max_fds);
}

static void render_self(const struct snapshot *snap, const struct expo_self *self, enum accept_format format,
                        struct buf *out) {
        const struct inventory *backend = snap && snap->set ? &snap->set->backend : NULL;

        family_header(out, format, "neurond_build_info", "neurond version and backend; always 1.", "info", NULL);
        buf_puts(out, "neurond_build_info{version=\"");
        expo_escape_label_value(out, self->version);
        buf_puts(out, "\",backend=\"");
        expo_escape_label_value(out, self->backend);
        buf_puts(out, "\",instance_type=\"");
        expo_escape_label_value(out, backend ? backend->instance_type : "");
        buf_puts(out, "\"} 1\n");

        if (self->samples_stored) {
                family_header(out, format, "neurond_samples_stored_total", "Samples written to the store.", "counter",
                              NULL);
                counter_line(out, "neurond_samples_stored_total", self->samples_stored);
        }
        if (self->store_errors) {
                family_header(out, format, "neurond_store_errors_total", "Ticks the store failed to write.", "counter",
                              NULL);
                counter_line(out, "neurond_store_errors_total", self->store_errors);
        }
        if (self->history) {
                struct history_stats st;
                self->history->ops->get_stats(self->history->impl, &st);
                family_header(out, format, "neurond_storage_degraded",
                              "1 while samples are not stored: the database cannot be written (ticks wait in memory), "
                              "or series are left out (neurond_storage_series_unstored); else 0.",
                              "gauge", NULL);
                buf_printf(out, "neurond_storage_degraded %d\n", st.degraded ? 1 : 0);
                family_header(out, format, "neurond_storage_series_unstored",
                              "Series of the current list not stored: listed more than once (duplicate), or beyond "
                              "the series limit (limit).",
                              "gauge", NULL);
                buf_printf(out, "neurond_storage_series_unstored{reason=\"duplicate\"} %zu\n", st.series_duplicated);
                buf_printf(out, "neurond_storage_series_unstored{reason=\"limit\"} %zu\n", st.series_over_limit);
                family_header(out, format, "neurond_storage_series_refused_total",
                              "Series left out at max_series, counted each time a series list holding them is "
                              "taken.",
                              "counter", NULL);
                buf_printf(out, "neurond_storage_series_refused_total %llu\n", (unsigned long long) st.series_refused);
                family_header(out, format, "neurond_storage_damaged_databases_total",
                              "Damaged database files set aside at start-up.", "counter", NULL);
                buf_printf(out, "neurond_storage_damaged_databases_total %u\n", st.damaged_set_aside);
        }
        if (self->forward && self->forward->ops)
                render_forward(self->forward, format, out);
        if (self->http_requests) {
                family_header(out, format, "neurond_http_requests_total",
                              "HTTP responses sent, by status code (before this one).", "counter", NULL);
                for (size_t i = 0; i < EXPO_HTTP_CODES; i++) {
                        uint64_t v = atomic_load_explicit(&self->http_requests[i], memory_order_relaxed);
                        /* Codes never sent stay absent rather than a wall of zeros;
                         * 200 is always there so the family never vanishes. */
                        if (v == 0 && i != 0)
                                continue;
                        buf_printf(out, "neurond_http_requests_total{code=\"%s\"} %llu\n", expo_http_codes[i],
                                   (unsigned long long) v);
                }
        }
        struct process_stats ps;
        if (self->process && process_stats_read(&ps) == 0)
                render_process(out, format, &ps);
        if (!snap)
                return;
        family_header(out, format, "neurond_collector_up", "1 when the collector's last read succeeded, else 0.",
                      "gauge", NULL);
        for (size_t i = 0; i < self->n_collectors; i++) {
                buf_puts(out, "neurond_collector_up{collector=\"");
                expo_escape_label_value(out, self->collector_names[i]);
                buf_printf(out, "\"} %d\n", snap->collector_up[i] ? 1 : 0);
        }
        if (backend) {
                family_header(out, format, "neurond_backend_devices",
                              "Devices the accelerator backend polls. 0 while it has none (sysfs: no Neuron driver "
                              "loaded, or it lists no device): their series are then absent, and /api/v1/status says "
                              "why.",
                              "gauge", NULL);
                buf_printf(out, "neurond_backend_devices %u\n", backend->n_devices);
        }
        family_header(out, format, "neurond_last_poll_timestamp_seconds", "Unix time of the latest tick.", "gauge",
                      "seconds");
        buf_printf(out, "neurond_last_poll_timestamp_seconds %lld.%03lld\n", (long long) (snap->timestamp_ms / 1000),
                   (long long) (snap->timestamp_ms % 1000));
        family_header(out, format, "neurond_poll_duration_seconds", "Time the collectors took in the latest tick.",
                      "gauge", "seconds");
        buf_puts(out, "neurond_poll_duration_seconds ");
        buf_double(out, snap->poll_seconds);
        buf_puts(out, "\n");
        family_header(out, format, "neurond_tick_overruns_total",
                      "Poll intervals skipped because a tick took longer than the interval.", "counter", NULL);
        buf_printf(out, "neurond_tick_overruns_total %llu\n", (unsigned long long) snap->overruns);
        if (!snap->health)
                return;
        family_header(out, format, "neurond_health_events_total",
                      "Health events since neurond started, by kind (a rule, or state for a device's change of "
                      "state) and severity (docs/health.md).",
                      "counter", NULL);
        for (unsigned k = 0; k < HEALTH_KINDS; k++)
                for (int sev = 0; sev < HEALTH_SEVERITY__COUNT; sev++)
                        buf_printf(out, "neurond_health_events_total{kind=\"%s\",severity=\"%s\"} %llu\n",
                                   health_kind_name(k), health_severity_names[sev],
                                   (unsigned long long) snap->health->events_total[k][sev]);
}

/* The container holding series i's core or device in pods, or NULL. */
static const struct pod_holder *series_holder(const struct expo *e, size_t i, const struct pod_map *pods) {
        const struct expo_place *p = &e->places[i];

        if (p->place == POD_PLACE_CORE)
                return pod_map_core_holder(pods, p->core);
        if (p->place == POD_PLACE_DEVICE)
                return pod_map_device_holder(pods, p->device);
        return NULL;
}

/* Series i's prefix with holder's pod labels after its own: a placed
 * series has labels, so its prefix ends in "} ". */
static void held_prefix(struct buf *out, const struct expo *e, size_t i, const struct pod_holder *holder) {
        buf_append(out, e->prefixes[i], e->prefix_lens[i] - 2);
        for (size_t l = 0; l < POD_LABELS; l++) {
                buf_puts(out, ",");
                buf_puts(out, pod_label_names[l]);
                buf_puts(out, "=\"");
                expo_escape_label_value(out, pod_holder_label(holder, l));
                buf_puts(out, "\"");
        }
        buf_puts(out, "} ");
}

/* The series, which depend only on the snapshot and pods. */
static void render_series(const struct expo *e, const struct snapshot *snap, const struct pod_map *pods,
                          enum accept_format format, struct buf *out) {
        int f = format == ACCEPT_OPENMETRICS ? ACCEPT_OPENMETRICS : ACCEPT_TEXT;

        if (!e || !snap || snap->n != e->n_series)
                return;
        /* Names and labels are known; a value takes at most 24 bytes. One
         * reservation, no regrowth but for the pod labels of held series. */
        buf_reserve(out, e->prefix_total + e->n_series * 25 + e->header_total + e->info_len[f]);
        if (e->info[f])
                buf_append(out, e->info[f], e->info_len[f]);
        for (size_t k = 0; k < e->n_families; k++) {
                const struct expo_family *fam = &e->families[k];
                buf_append(out, fam->header[f], fam->header_len[f]);
                for (size_t j = fam->first; j < fam->first + fam->count; j++) {
                        size_t i = e->order[j];
                        if (!snap->valid[i])
                                continue;
                        const struct pod_holder *holder = pods ? series_holder(e, i, pods) : NULL;
                        if (holder)
                                held_prefix(out, e, i, holder);
                        else
                                buf_append(out, e->prefixes[i], e->prefix_lens[i]);
                        buf_double(out, snap->values[i]);
                        buf_append(out, "\n", 1);
                }
        }
}

void expo_render_with_pods(const struct expo *e, const struct snapshot *snap, const struct pod_map *pods,
                           const struct expo_self *self, enum accept_format format, struct buf *out) {
        render_series(e, snap, pods, format, out);
        buf_reserve(out, 4096);
        render_self(snap, self, format, out);
        if (format == ACCEPT_OPENMETRICS)
                buf_puts(out, "# EOF\n");
}

void expo_render(const struct expo *e, const struct snapshot *snap, const struct expo_self *self,
                 enum accept_format format, struct buf *out) {
        expo_render_with_pods(e, snap, NULL, self, format, out);
}
