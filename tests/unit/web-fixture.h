/* A web_context over a small, known inventory, with fake history and
 * fault ops, served by the real server on 127.0.0.1 port 0; and a plain
 * socket client that sends a request and reads the answer to its end.
 * For the web tests: each test sets up a fixture, adjusts ctx (auth,
 * admin, CORS), starts it, asks, and frees it. */
#pragma once

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "web/expo.h"
#include "web/http.h"

/* The inventory: devices 0 and 1, the runtime "serve" (pid 4242) holding
 * cores 0 and 1, the identity of instance i-0123456789abcdef0, and these
 * series, in this order. */
enum {
        FIXTURE_UP_0,     /* neuron_device_up{neuron_device="0"} 1 */
        FIXTURE_UP_1,     /* neuron_device_up{neuron_device="1"} 1 */
        FIXTURE_UTIL_0_0, /* neuroncore_utilization_ratio{neuron_device="0",neuroncore="0",runtime_tag="serve"} 0.25 */
        FIXTURE_UTIL_1_2, /* neuroncore_utilization_ratio{neuron_device="1",neuroncore="2"} 0.5 */
        FIXTURE_DMA_0,    /* neuron_device_dma_bytes_total{neuron_device="0",direction="host_to_device"}, not valid */
        FIXTURE_SERIES_COUNT,
};
#define FIXTURE_TICK_MS 1700000000250LL /* the snapshot's timestamp */

/* History ops that answer from fields the test sets, and keep what they
 * were asked. */
struct fake_history {
        int error;                       /* < 0: query_range and list_series fail with it */
        unsigned more_series;            /* list_series lists this many more (device 100 on) */
        struct history_query last_query; /* the latest query_range's */
        int last_metric;                 /* the latest list_series' */
        size_t last_n_matchers;
        struct history_matcher last_matchers[HISTORY_MATCHERS_MAX];
        struct history_stats stats;
        struct history_events_query last_events; /* the latest query_events' */
};

/* Fault ops that keep the last spec injected. */
struct fake_faults {
        char injected[FAULT_SPEC_MAX];
        unsigned clears;
};

struct web_fixture {
        struct inventory inv;
        struct snapshot_slot latest;
        struct pod_slot pods; /* empty, and not in ctx until a test puts it there */
        struct fake_history history;
        struct fake_faults faults;
        char web_root[64];
        atomic_uint_fast64_t http_requests[EXPO_HTTP_CODES];
        struct web_context ctx;
        struct http_server *srv;
        uint16_t port;
};

/* Builds the inventory, a published snapshot with its series set, a web root
 * holding index.html ("<!doctype html>hello\n") and ctx over them. */
void web_fixture_init(struct web_fixture *f);
/* Starts the server with f->ctx as the test left it. */
void web_fixture_start(struct web_fixture *f);
void web_fixture_free(struct web_fixture *f); /* stops the server first */

/* One answer, read until the server closed the connection. */
struct web_answer {
        unsigned status; /* 0: no HTTP status line */
        char *text;      /* everything received, NUL-terminated */
        const char *body;
        size_t body_len;
};

/* Sends "METHOD target HTTP/1.1" with Host, Connection: close and
 * headers (whole lines with their CRLF, or NULL). */
void web_fixture_ask(struct web_fixture *f, const char *method, const char *target, const char *headers,
                     struct web_answer *ret);
/* Sends len raw bytes as they are. */
void web_fixture_send(struct web_fixture *f, const char *raw, size_t len, struct web_answer *ret);
/* Asks as web_fixture_ask() does, and fails the test unless the answer
 * has status and, when body_part is not NULL, holds it in its body. */
void web_fixture_expect(struct web_fixture *f, const char *method, const char *target, const char *headers,
                        unsigned status, const char *body_part);
/* The value of the answer's first header called name, or false. */
bool web_answer_header(const struct web_answer *a, const char *name, char *value, size_t size);
void web_answer_free(struct web_answer *a);
