/* What the remote write files share; not part of the module's interface.
 *
 *   remote-config.c  endpoint defaults, external labels, the checks of an endpoint
 *   remote-encode.c  label sets and WriteRequest bodies (protobuf, snappy)
 *   remote-http.c    one endpoint's HTTP(S) connection (libcurl)
 *   remote-writer.c  one endpoint's thread: batches, retries, positions, counters */
#pragma once

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "remote/prompb/remote.pb-c.h"
#include "remote/remote.h"

/* The stale marker of the remote write specification: a NaN no other
 * sample uses. */
#define REMOTE_STALE_NAN_BITS 0x7ff0000000000002ULL

/* ---- remote-encode.c ---- */

/* A series' labels as a request carries them: __name__, the stored
 * labels and the external labels, sorted by name. */
struct remote_labelset {
        size_t n;
        Prometheus__Label *labels;
        Prometheus__Label **ptrs; /* n, into labels, for TimeSeries.labels */
        char *strings;            /* every name and value the labels point to */
        /* Scratch for remote_encode(); the encoding thread's only. */
        size_t count, at;
};

/* The label set of a series named name with labels (empty values are left
 * out) and the external labels that it has no label of the same name of.
 * Returns 0 or -ENOMEM. */
int remote_labelset_new(const char *name, const struct cursor_label *labels, size_t n_labels,
                        const struct remote_labels *external, struct remote_labelset **ret);
void remote_labelset_free(struct remote_labelset *s); /* NULL-safe */

/* One sample of a request. */
struct remote_item {
        struct remote_labelset *set;
        int64_t timestamp_ms;
        double value;
};

/* Scratch space for encoding, grown as needed and reused. */
struct remote_encoder {
        Prometheus__Sample *samples;
        Prometheus__Sample **sample_ptrs;
        size_t samples_cap;
        Prometheus__TimeSeries *series;
        Prometheus__TimeSeries **series_ptrs;
        struct remote_labelset **distinct;
        size_t series_cap;
        uint8_t *packed;
        size_t packed_cap;
};

/* A WriteRequest of the items (one TimeSeries per label set, its samples
 * in the items' order, which must be by time for each set), packed and
 * snappy-compressed into a new buffer (free() it). Returns 0, -ENOMEM, or
 * -EINVAL when compression fails. */
int remote_encode(struct remote_encoder *enc, struct remote_item *items, size_t n, uint8_t **ret_body, size_t *ret_len);
void remote_encoder_done(struct remote_encoder *enc);

/* ---- remote-http.c ---- */

struct remote_http;

/* A connection for e; secret is the password (basic authentication) or
 * the token (bearer), or NULL. A request in flight is abandoned when *stop
 * becomes true. Returns 0 or a negative errno with the reason in err. */
int remote_http_new(const struct remote_endpoint *e, const char *secret, const atomic_bool *stop,
                    struct remote_http **ret, char *err, size_t errlen);
void remote_http_free(struct remote_http *h); /* NULL-safe */

/* POSTs a WriteRequest body. Returns 0 with the status code, the
 * Retry-After seconds (0 when none) and the start of the response body in
 * msg, or a negative errno for a request that got no answer (-ECANCELED
 * when stopped) with libcurl's words in msg. */
int remote_http_post(struct remote_http *h, const uint8_t *body, size_t len, long *ret_status,
                     int64_t *ret_retry_after_s, char *msg, size_t msglen);
