#include "config.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "web/expo.h"

struct expo_family {
        enum metric_id metric;
        size_t first, count; /* a range of expo.order */
};

struct expo {
        size_t n_series;
        size_t *order;         /* series indexes grouped by family */
        char **prefixes;       /* per series: `name{labels} ` */
        size_t *prefix_lens;
        size_t n_families;
        struct expo_family families[METRIC__COUNT];
};

void expo_escape_label_value(struct buf *out, const char *value) {
        for (const char *p = value; *p; p++) {
                if (*p == '\\')
                        buf_append(out, "\\\\", 2);
                else if (*p == '"')
                        buf_append(out, "\\\"", 2);
                else if (*p == '\n')
                        buf_append(out, "\\n", 2);
                else
                        buf_append(out, p, 1);
        }
}

void expo_free(struct expo *e) {
        if (!e)
                return;
        for (size_t i = 0; i < e->n_series; i++)
                free(e->prefixes[i]);
        free(e->prefixes);
        free(e->prefix_lens);
        free(e->order);
        free(e);
}

int expo_new(const struct series_desc *series, size_t n, struct expo **ret) {
        struct expo *e = calloc(1, sizeof(*e));
        if (!e)
                return -ENOMEM;
        e->n_series = n;
        e->order = calloc(n ? n : 1, sizeof(*e->order));
        e->prefixes = calloc(n ? n : 1, sizeof(*e->prefixes));
        e->prefix_lens = calloc(n ? n : 1, sizeof(*e->prefix_lens));
        if (!e->order || !e->prefixes || !e->prefix_lens)
                goto fail;

        /* Counting sort by family keeps each family's series in inventory order. */
        size_t per_family[METRIC__COUNT] = { 0 };
        for (size_t i = 0; i < n; i++)
                per_family[series[i].metric]++;
        size_t next[METRIC__COUNT];
        size_t at = 0;
        for (int m = 0; m < METRIC__COUNT; m++) {
                next[m] = at;
                if (per_family[m])
                        e->families[e->n_families++] = (struct expo_family){ .metric = m, .first = at, .count = per_family[m] };
                at += per_family[m];
        }
        for (size_t i = 0; i < n; i++)
                e->order[next[series[i].metric]++] = i;

        for (size_t i = 0; i < n; i++) {
                const struct metric_desc *m = &metric_table[series[i].metric];
                struct buf b = { 0 };
                buf_puts(&b, m->name);
                size_t n_labels = metric_label_count(m);
                for (size_t l = 0; l < n_labels; l++) {
                        buf_puts(&b, l ? "," : "{");
                        buf_puts(&b, m->labels[l]);
                        buf_puts(&b, "=\"");
                        expo_escape_label_value(&b, series[i].label_values[l]);
                        buf_puts(&b, "\"");
                }
                buf_puts(&b, n_labels ? "} " : " ");
                if (b.failed) {
                        buf_free(&b);
                        goto fail;
                }
                e->prefixes[i] = b.data;
                e->prefix_lens[i] = b.len;
        }
        *ret = e;
        return 0;
fail:
        expo_free(e);
        return -ENOMEM;
}

static void family_header(struct buf *out, const char *name, const char *help, const char *type) {
        buf_puts(out, "# HELP ");
        buf_puts(out, name);
        buf_puts(out, " ");
        buf_puts(out, help);
        buf_puts(out, "\n# TYPE ");
        buf_puts(out, name);
        buf_puts(out, " ");
        buf_puts(out, type);
        buf_puts(out, "\n");
}

static void render_self(const struct snapshot *snap, const struct expo_self *self, struct buf *out) {
        family_header(out, "neurond_build_info", "neurond version and backend; always 1.", "gauge");
        buf_puts(out, "neurond_build_info{version=\"");
        expo_escape_label_value(out, self->version);
        buf_puts(out, "\",backend=\"");
        expo_escape_label_value(out, self->backend);
        buf_puts(out, "\",instance_type=\"");
        expo_escape_label_value(out, self->instance_type);
        buf_puts(out, "\"} 1\n");

        if (!snap)
                return;
        family_header(out, "neurond_collector_up", "1 when the collector's last read succeeded, else 0.", "gauge");
        for (size_t i = 0; i < self->n_collectors; i++) {
                buf_puts(out, "neurond_collector_up{collector=\"");
                expo_escape_label_value(out, self->collector_names[i]);
                buf_printf(out, "\"} %d\n", snap->collector_up[i] ? 1 : 0);
        }
        family_header(out, "neurond_last_poll_timestamp_seconds", "Unix time of the latest tick.", "gauge");
        buf_puts(out, "neurond_last_poll_timestamp_seconds ");
        buf_printf(out, "%lld.%03lld\n", (long long) (snap->timestamp_ms / 1000), (long long) (snap->timestamp_ms % 1000));
        family_header(out, "neurond_poll_duration_seconds", "Time the collectors took in the latest tick.", "gauge");
        buf_puts(out, "neurond_poll_duration_seconds ");
        buf_double(out, snap->poll_seconds);
        buf_puts(out, "\n");
}

void expo_render(const struct expo *e, const struct snapshot *snap, const struct expo_self *self, struct buf *out) {
        /* Typical line: ~60 bytes; reserving up front avoids most regrowth. */
        buf_reserve(out, e->n_series * 72 + 4096);
        if (snap && snap->n == e->n_series) {
                for (size_t f = 0; f < e->n_families; f++) {
                        const struct expo_family *fam = &e->families[f];
                        const struct metric_desc *m = &metric_table[fam->metric];
                        family_header(out, m->name, m->help, m->type == METRIC_COUNTER ? "counter" : "gauge");
                        for (size_t k = fam->first; k < fam->first + fam->count; k++) {
                                size_t i = e->order[k];
                                if (!snap->valid[i])
                                        continue;
                                buf_append(out, e->prefixes[i], e->prefix_lens[i]);
                                buf_double(out, snap->values[i]);
                                buf_append(out, "\n", 1);
                        }
                }
        }
        render_self(snap, self, out);
}
