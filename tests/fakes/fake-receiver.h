/* A remote write receiver for the tests: libmicrohttpd on 127.0.0.1 that
 * decodes each request (snappy, protobuf WriteRequest) and keeps its
 * samples and headers, answering statuses the test scripts. */
#pragma once

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define FAKE_RECEIVER_SCRIPT_MAX 16
#define FAKE_RECEIVER_BODIES 16

struct fake_received {
        char series[512]; /* name{label="value",...} with the labels in the order sent */
        int64_t timestamp_ms;
        double value;
};

struct fake_receiver {
        struct MHD_Daemon *mhd;
        uint16_t port;
        pthread_mutex_t lock;
        pthread_cond_t cond;
        /* Set by the test: the statuses of the first requests (then 204),
         * the Retry-After to send with them (0: none), whether a request
         * waits until released, and the Authorization it demands (401
         * otherwise; "" for none). */
        int script[FAKE_RECEIVER_SCRIPT_MAX];
        size_t n_script;
        unsigned retry_after_s;
        bool hang;
        char require_authorization[256];
        /* What arrived. */
        unsigned requests;
        bool hanging, released;
        bool labels_unsorted;          /* a series' label names were not in order */
        bool bad_body;                 /* a body did not decode */
        struct fake_received *samples; /* from requests answered 2xx */
        size_t n_samples, cap;
        char content_encoding[64], content_type[64], version[32], user_agent[64], authorization[256];
        uint8_t *bodies[FAKE_RECEIVER_BODIES]; /* the first requests' bodies as sent */
        size_t body_len[FAKE_RECEIVER_BODIES];
};

/* Serves on 127.0.0.1 at port (0: any; r->port says which). Returns 0 or -EIO. */
int fake_receiver_start(struct fake_receiver *r, uint16_t port);
/* Stops serving (releasing a hanging request) and frees what arrived. NULL-safe. */
void fake_receiver_stop(struct fake_receiver *r);
/* Stops serving (connections are refused), keeping what arrived; then
 * serves again on the same port. */
void fake_receiver_pause(struct fake_receiver *r);
int fake_receiver_restart(struct fake_receiver *r);
void fake_receiver_release(struct fake_receiver *r);

/* Waits up to seconds until at least n samples arrived (or, with
 * hanging, a request hangs); returns whether they did. */
bool fake_receiver_wait_samples(struct fake_receiver *r, size_t n, unsigned seconds);
bool fake_receiver_wait_hanging(struct fake_receiver *r, unsigned seconds);
bool fake_receiver_wait_requests(struct fake_receiver *r, unsigned n, unsigned seconds);
