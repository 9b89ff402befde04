/* Prometheus text exposition (format 0.0.4) and OpenMetrics 1.0 from the
 * latest snapshot.
 *
 * expo_new() precomputes, once per inventory, each series' rendered name and
 * labels, each family's header in both formats, and the order that groups
 * series by family, so that a scrape is one pass of memcpy and number
 * formatting into one buffer reserved up front. An expo is read-only after
 * creation: any number of threads may render with it at once. */
#pragma once

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "lib/buf.h"
#include "lib/forward.h"
#include "lib/history.h"
#include "lib/inventory.h"
#include "lib/pod.h"
#include "lib/snapshot.h"
#include "web/accept.h"

#define EXPO_CONTENT_TYPE "text/plain; version=0.0.4; charset=utf-8"
#define EXPO_OPENMETRICS_CONTENT_TYPE "application/openmetrics-text; version=1.0.0; charset=utf-8"

/* The status codes neurond_http_requests_total counts, in label order;
 * any other code is counted as the last entry, "other". */
#define EXPO_HTTP_CODES 17
extern const char *const expo_http_codes[EXPO_HTTP_CODES];
/* Index into expo_http_codes for a status code. */
size_t expo_http_code_index(unsigned status);

struct expo;

/* What the exposition says about neurond itself. The counters are written
 * by other threads with atomic adds; any pointer may be NULL, and its
 * family is then left out. */
struct expo_self {
        const char *version;
        const char *backend; /* the backend spec; the instance type comes from the snapshot's set */
        size_t n_collectors;
        const char *const *collector_names; /* parallel to snapshot->collector_up */
        const atomic_uint_fast64_t *samples_stored;
        const atomic_uint_fast64_t *store_errors;
        const atomic_uint_fast64_t *http_requests; /* EXPO_HTTP_CODES entries */
        const struct history *history;             /* the store's write health, or NULL */
        const struct forward *forward;             /* remote write endpoints, or NULL */
        bool process;                              /* neurond's own process_* figures (lib/process.h) */
};

/* What /metrics says about the instance and its hardware, as AWS's
 * exporter does: instance_info{instance_name, instance_id, instance_type,
 * availability_zone, region, subnet_id} when the identity is known, and
 * neuron_hardware_info{neuron_device_count, neuroncore_per_device_count,
 * neuron_device_memory_size, neuron_device_type, neuroncore_version,
 * logical_neuroncore_config, and the instance labels} when there are
 * devices; with labels_on_every_series, every series of the snapshot
 * carries the instance labels too. Empty values are left out. */
struct expo_instance {
        const struct inventory *inv; /* identity and devices of the accelerator backend */
        bool labels_on_every_series;
};

/* Prepares the exposition of these series; instance may be NULL (no info
 * families, no instance labels). */
int expo_new_with(const struct series_desc *series, size_t n, const struct expo_instance *instance, struct expo **ret);
int expo_new(const struct series_desc *series, size_t n, struct expo **ret);
void expo_free(struct expo *e); /* NULL-safe */

/* Appends the exposition of snap (may be NULL before the first tick) in
 * the given format; snap's series must be the ones e was made for. Series
 * not valid in the snapshot are left out (the loop clears every series of a
 * collector whose read failed, and neurond_collector_up says 0), and so are
 * labels with empty values. OpenMetrics output ends with "# EOF". */
void expo_render(const struct expo *e, const struct snapshot *snap, const struct expo_self *self,
                 enum accept_format format, struct buf *out);

/* expo_render(), with the pod, namespace and container labels of the
 * container that holds a series' core or device in pods (NULL: none, as
 * expo_render()) after the series' own labels. */
void expo_render_with_pods(const struct expo *e, const struct snapshot *snap, const struct pod_map *pods,
                           const struct expo_self *self, enum accept_format format, struct buf *out);

/* Appends a label value escaped for both formats (\\, \" and \n). */
void expo_escape_label_value(struct buf *out, const char *value);
