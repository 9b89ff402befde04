/* What the web side serves from: the daemon fills one web_context before
 * the server starts and keeps it alive until the server has stopped.
 * Handlers run on libmicrohttpd's threads; everything they read through it
 * is either immutable after start or thread safe (the snapshot slot, the
 * store's query path, the fault ops, the atomic counters). */
#pragma once

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "lib/faults.h"
#include "lib/history.h"
#include "lib/pod.h"
#include "lib/snapshot.h"
#include "lib/ticks.h"
#include "web/auth.h"
#include "web/expo.h"

struct web_context {
        const char *web_root;
        bool instance_labels; /* the instance labels on every series of /metrics */
        struct expo_self self;
        struct snapshot_slot *latest;
        struct pod_slot *pods;            /* who holds which cores and devices; NULL when pod_labels is off */
        const char *pod_resources_socket; /* where the kubelet is asked */
        struct history history;           /* stored history; ops NULL when there is none */
        int64_t interval_ms;              /* simulated time between ticks */
        double time_scale;                /* simulated seconds per wall second */
        int64_t started_ms;               /* Unix ms when the daemon started */
        bool admin;                       /* serve the admin endpoint (web/admin.h) */
        struct fault_control faults;      /* what it injects faults into; ops NULL when the backend cannot */
        struct tick_control *ticks;       /* driven ticks, with admin; NULL otherwise */

        /* Security and limits. Numbers left at 0 and strings left NULL or ""
         * take the defaults in web/http.h. */
        const char *tls_cert; /* PEM text (http_read_pem); with tls_key, serve HTTPS */
        const char *tls_key;
        const char *tls_priorities; /* GnuTLS priority string */
        const char *allowed_hosts;  /* names a Host header may carry (web/hosts.h) */
        struct auth *auth;          /* NULL: no authentication */
        bool healthz_open;          /* /healthz answers without credentials */
        const char *cors_origin;    /* Access-Control-Allow-Origin, NULL or "" for off */
        unsigned max_connections;
        unsigned connection_timeout_s;       /* idle time before a connection is closed */
        unsigned header_timeout_s;           /* time for a request head to arrive (web/conns.h) */
        size_t max_header_bytes;             /* request headers; past it 431 */
        unsigned max_queries;                /* range and series queries running or answering at once */
        size_t max_query_series;             /* series one range query may match; past it 422 */
        size_t max_query_points;             /* points one range query may return; past it 422 */
        atomic_uint_fast64_t *http_requests; /* EXPO_HTTP_CODES counters, or NULL */
};
