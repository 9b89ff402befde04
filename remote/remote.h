/* Prometheus remote write 1.0 to any number of endpoints: each endpoint
 * has a thread of its own that reads the stored samples through a cursor
 * (lib/cursor.h), oldest first in bounded batches, from a position the
 * store keeps durable under the endpoint's name, and sends them as
 * snappy-compressed protobuf WriteRequests over HTTP(S) with libcurl.
 *
 * A batch is sent until the receiver takes it (2xx) or refuses it for
 * good (4xx other than 429: counted as failed and dropped); on a network
 * error, a 5xx or a 429 the same request body is sent again after a
 * back-off that doubles from min_backoff to max_backoff (a Retry-After
 * longer than that is honoured up to max_backoff). The position moves past
 * a batch only then, so each sample is sent once, retries of a batch
 * aside. The database is the queue: an outage of the receiver costs
 * nothing but the time to catch up, within the store's retention and
 * size cap.
 *
 * The writer never touches the tick loop or the HTTP server: ticks go on
 * while a receiver is down, and /metrics reads only its counters.
 *
 * Threading: a writer's functions may be called from any thread. */
#pragma once

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "lib/cursor.h"
#include "lib/forward.h"

#define REMOTE_URL_MAX 1024
#define REMOTE_EXTERNAL_LABELS_MAX 16
#define REMOTE_USERNAME_MAX 256

/* The defaults of an endpoint's settings. */
#define REMOTE_DEFAULT_TIMEOUT_MS (30 * 1000)
#define REMOTE_DEFAULT_MAX_SAMPLES_PER_SEND 5000
#define REMOTE_DEFAULT_BATCH_SEND_DEADLINE_MS (5 * 1000)
#define REMOTE_DEFAULT_MIN_BACKOFF_MS 30
#define REMOTE_DEFAULT_MAX_BACKOFF_MS (5 * 1000)
#define REMOTE_MAX_SAMPLES_PER_SEND_MAX 1000000

/* External labels: added to every series sent, unless the series has a
 * label of that name already. */
struct remote_labels {
        size_t n;
        struct cursor_label label[REMOTE_EXTERNAL_LABELS_MAX];
};

/* One endpoint, as the configuration describes it. Empty strings are
 * unset. */
struct remote_endpoint {
        char name[CURSOR_NAME_MAX]; /* its section's name: the endpoint label of its metrics, its position's key */
        char url[REMOTE_URL_MAX];   /* http:// or https:// */
        int64_t remote_timeout_ms;  /* one request, connection included */
        /* TLS: the CA bundle to verify the receiver with (default: the
         * system's), a client certificate and key (PEM), and whether to
         * skip verifying the receiver (tests only). */
        char tls_ca_file[PATH_MAX];
        char tls_cert_file[PATH_MAX];
        char tls_key_file[PATH_MAX];
        bool tls_insecure_skip_verify;
        /* Authentication: basic (user and a file holding the password) or
         * a bearer token from a file, not both. */
        char basic_auth_username[REMOTE_USERNAME_MAX];
        char basic_auth_password_file[PATH_MAX];
        char bearer_token_file[PATH_MAX];
        struct remote_labels external_labels;
        /* Batches: at most max_samples_per_send samples per request; fewer
         * are sent once the oldest has waited batch_send_deadline. */
        uint64_t max_samples_per_send;
        int64_t batch_send_deadline_ms;
        int64_t min_backoff_ms, max_backoff_ms;
        /* Samples older than this, measured from the newest stored one,
         * are skipped rather than sent (counted as failed); 0 sends all. */
        int64_t sample_age_limit_ms;
};

/* Fills e with the defaults and the given name. */
void remote_endpoint_init(struct remote_endpoint *e, const char *name);

/* Parses "name=value, name=value": label names as Prometheus allows them
 * ([a-zA-Z_][a-zA-Z0-9_]*, not starting with "__"), values non-empty, in
 * double quotes when they hold a comma, a quote or leading or trailing
 * blanks (\" and \\ escape inside). Returns 0, or -EINVAL with the reason
 * in why. */
int remote_parse_labels(const char *text, struct remote_labels *ret, char *why, size_t whylen);

/* Checks what the configuration cannot: the URL's scheme, the
 * combination of settings, and that every file an endpoint names can be
 * read. Returns 0, or -EINVAL with the reason in err. */
int remote_endpoint_check(const struct remote_endpoint *e, char *err, size_t errlen);

/* Releases libcurl's global state, if a writer loaded libcurl; at exit,
 * once every set is stopped. */
void remote_global_cleanup(void);

/* Every endpoint's writer. */
struct remote_set;

/* Reads each endpoint's password or token file and starts its thread,
 * which continues from the position saved under the endpoint's name (a
 * new endpoint starts at the newest stored tick). The set keeps copies of
 * the endpoints and borrows source, which must outlive it. Returns 0, or
 * a negative errno with the reason in err (and nothing started). */
int remote_set_start(const struct remote_endpoint *endpoints, size_t n, const struct cursor_source *source,
                     struct remote_set **ret, char *err, size_t errlen);

/* New samples were stored: writers waiting for them read at once. Cheap;
 * for the tick loop. NULL-safe. */
void remote_set_wake(struct remote_set *set);

/* Stops every thread (a request in flight is abandoned, and sent again at
 * the next start) and frees the set. NULL-safe. */
void remote_set_stop(struct remote_set *set);

/* The writers' counters as lib/forward.h reads them; impl is a struct
 * remote_set. */
extern const struct forward_ops remote_forward_ops;
