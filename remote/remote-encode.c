#include "config.h"

#include <errno.h>
#include <snappy-c.h>
#include <stdlib.h>
#include <string.h>

#include "remote/remote-internal.h"

struct pair {
        const char *name, *value;
};

static int pair_compare(const void *a, const void *b) {
        return strcmp(((const struct pair *) a)->name, ((const struct pair *) b)->name);
}

int remote_labelset_new(const char *name, const struct cursor_label *labels, size_t n_labels,
                        const struct remote_labels *external, struct remote_labelset **ret) {
        struct pair pairs[1 + CURSOR_LABELS_MAX + REMOTE_EXTERNAL_LABELS_MAX];
        size_t n = 0, bytes = 0;

        pairs[n++] = (struct pair){ "__name__", name };
        for (size_t i = 0; i < n_labels && i < CURSOR_LABELS_MAX; i++)
                if (labels[i].value[0])
                        pairs[n++] = (struct pair){ labels[i].name, labels[i].value };
        size_t own = n;
        for (size_t i = 0; external && i < external->n; i++) {
                bool taken = false;
                for (size_t j = 0; j < own && !taken; j++)
                        taken = strcmp(pairs[j].name, external->label[i].name) == 0;
                if (!taken)
                        pairs[n++] = (struct pair){ external->label[i].name, external->label[i].value };
        }
        /* The specification wants label names in lexicographic order. */
        qsort(pairs, n, sizeof(pairs[0]), pair_compare);
        for (size_t i = 0; i < n; i++)
                bytes += strlen(pairs[i].name) + strlen(pairs[i].value) + 2;

        struct remote_labelset *s = calloc(1, sizeof(*s));
        if (!s)
                return -ENOMEM;
        s->labels = calloc(n, sizeof(*s->labels));
        s->ptrs = calloc(n, sizeof(*s->ptrs));
        s->strings = malloc(bytes);
        if (!s->labels || !s->ptrs || !s->strings) {
                remote_labelset_free(s);
                return -ENOMEM;
        }
        char *at = s->strings;
        for (size_t i = 0; i < n; i++) {
                Prometheus__Label *l = &s->labels[i];
                prometheus__label__init(l);
                size_t a = strlen(pairs[i].name) + 1, b = strlen(pairs[i].value) + 1;
                l->name = memcpy(at, pairs[i].name, a);
                l->value = memcpy(at + a, pairs[i].value, b);
                at += a + b;
                s->ptrs[i] = l;
        }
        s->n = n;
        *ret = s;
        return 0;
}

void remote_labelset_free(struct remote_labelset *s) {
        if (!s)
                return;
        free(s->labels);
        free(s->ptrs);
        free(s->strings);
        free(s);
}

/* Grows the scratch arrays to hold n samples of up to n series. */
static int reserve(struct remote_encoder *enc, size_t n) {
        if (n > enc->samples_cap) {
                Prometheus__Sample *samples = realloc(enc->samples, n * sizeof(*samples));
                if (samples)
                        enc->samples = samples;
                Prometheus__Sample **ptrs = realloc(enc->sample_ptrs, n * sizeof(*ptrs));
                if (ptrs)
                        enc->sample_ptrs = ptrs;
                if (!samples || !ptrs)
                        return -ENOMEM;
                enc->samples_cap = n;
        }
        if (n > enc->series_cap) {
                Prometheus__TimeSeries *series = realloc(enc->series, n * sizeof(*series));
                if (series)
                        enc->series = series;
                Prometheus__TimeSeries **ptrs = realloc(enc->series_ptrs, n * sizeof(*ptrs));
                if (ptrs)
                        enc->series_ptrs = ptrs;
                struct remote_labelset **distinct = realloc(enc->distinct, n * sizeof(*distinct));
                if (distinct)
                        enc->distinct = distinct;
                if (!series || !ptrs || !distinct)
                        return -ENOMEM;
                enc->series_cap = n;
        }
        return 0;
}

int remote_encode(struct remote_encoder *enc, struct remote_item *items, size_t n, uint8_t **ret_body,
                  size_t *ret_len) {
        size_t n_series = 0;

        if (reserve(enc, n ? n : 1) < 0)
                return -ENOMEM;
        /* Group the items by label set, keeping their order within each:
         * count, then give each set its slice, then fill the slices. */
        for (size_t i = 0; i < n; i++) {
                struct remote_labelset *s = items[i].set;
                if (s->count++ == 0)
                        enc->distinct[n_series++] = s;
        }
        size_t at = 0;
        for (size_t k = 0; k < n_series; k++) {
                struct remote_labelset *s = enc->distinct[k];
                Prometheus__TimeSeries *ts = &enc->series[k];
                prometheus__time_series__init(ts);
                ts->n_labels = s->n;
                ts->labels = s->ptrs;
                ts->n_samples = s->count;
                ts->samples = &enc->sample_ptrs[at];
                enc->series_ptrs[k] = ts;
                s->at = at;
                at += s->count;
        }
        for (size_t i = 0; i < n; i++) {
                struct remote_labelset *s = items[i].set;
                Prometheus__Sample *sample = &enc->samples[i];
                prometheus__sample__init(sample);
                sample->timestamp = items[i].timestamp_ms;
                sample->value = items[i].value;
                enc->sample_ptrs[s->at++] = sample;
        }
        for (size_t k = 0; k < n_series; k++)
                enc->distinct[k]->count = 0;

        Prometheus__WriteRequest req = PROMETHEUS__WRITE_REQUEST__INIT;
        req.n_timeseries = n_series;
        req.timeseries = enc->series_ptrs;
        size_t packed = prometheus__write_request__get_packed_size(&req);
        if (packed > enc->packed_cap) {
                uint8_t *grown = realloc(enc->packed, packed);
                if (!grown)
                        return -ENOMEM;
                enc->packed = grown;
                enc->packed_cap = packed;
        }
        prometheus__write_request__pack(&req, enc->packed);

        size_t len = snappy_max_compressed_length(packed);
        uint8_t *body = malloc(len ? len : 1);
        if (!body)
                return -ENOMEM;
        if (snappy_compress((const char *) enc->packed, packed, (char *) body, &len) != SNAPPY_OK) {
                free(body);
                return -EINVAL;
        }
        *ret_body = body;
        *ret_len = len;
        return 0;
}

void remote_encoder_done(struct remote_encoder *enc) {
        free(enc->samples);
        free(enc->sample_ptrs);
        free(enc->series);
        free(enc->series_ptrs);
        free(enc->distinct);
        free(enc->packed);
        *enc = (struct remote_encoder){ 0 };
}
