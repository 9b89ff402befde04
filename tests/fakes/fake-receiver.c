#include "config.h"

#include <arpa/inet.h>
#include <errno.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <snappy-c.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "remote/prompb/remote.pb-c.h"
#include "tests/fakes/fake-receiver.h"

struct upload {
        uint8_t *data;
        size_t len;
};

static void copy_header(struct MHD_Connection *c, const char *name, char *out, size_t size) {
        const char *v = MHD_lookup_connection_value(c, MHD_HEADER_KIND, name);
        snprintf(out, size, "%s", v ? v : "");
}

/* Keeps the samples of a decoded request; the caller holds the lock. */
static void keep(struct fake_receiver *r, const Prometheus__WriteRequest *req) {
        for (size_t i = 0; i < req->n_timeseries; i++) {
                const Prometheus__TimeSeries *ts = req->timeseries[i];
                char series[512] = "";
                size_t at = 0;
                for (size_t j = 0; j < ts->n_labels; j++) {
                        const Prometheus__Label *l = ts->labels[j];
                        if (j > 0 && strcmp(ts->labels[j - 1]->name, l->name) >= 0)
                                r->labels_unsorted = true;
                        if (strcmp(l->name, "__name__") == 0)
                                continue;
                        at += (size_t) snprintf(series + at, at < sizeof(series) ? sizeof(series) - at : 0,
                                                "%s%s=\"%s\"", at ? "," : "", l->name, l->value);
                }
                char full[512];
                const char *name = "";
                for (size_t j = 0; j < ts->n_labels; j++)
                        if (strcmp(ts->labels[j]->name, "__name__") == 0)
                                name = ts->labels[j]->value;
                if (snprintf(full, sizeof(full), "%s{%s}", name, series) >= (int) sizeof(full))
                        abort(); /* a series longer than the fake keeps: the test's mistake */
                for (size_t j = 0; j < ts->n_samples; j++) {
                        if (r->n_samples == r->cap) {
                                r->cap = r->cap ? 2 * r->cap : 256;
                                r->samples = realloc(r->samples, r->cap * sizeof(*r->samples));
                        }
                        struct fake_received *s = &r->samples[r->n_samples++];
                        snprintf(s->series, sizeof(s->series), "%s", full);
                        s->timestamp_ms = ts->samples[j]->timestamp;
                        s->value = ts->samples[j]->value;
                }
        }
}

static enum MHD_Result respond(struct MHD_Connection *c, unsigned status, unsigned retry_after) {
        struct MHD_Response *resp = MHD_create_response_from_buffer(0, "", MHD_RESPMEM_PERSISTENT);
        if (retry_after) {
                char value[16];
                snprintf(value, sizeof(value), "%u", retry_after);
                MHD_add_response_header(resp, "Retry-After", value);
        }
        enum MHD_Result ret = MHD_queue_response(c, status, resp);
        MHD_destroy_response(resp);
        return ret;
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *c, const char *url, const char *method,
                                  const char *version, const char *upload_data, size_t *upload_data_size,
                                  void **con_cls) {
        struct fake_receiver *r = cls;
        struct upload *u = *con_cls;

        if (!u) {
                *con_cls = calloc(1, sizeof(struct upload));
                return MHD_YES;
        }
        if (*upload_data_size) {
                u->data = realloc(u->data, u->len + *upload_data_size);
                memcpy(u->data + u->len, upload_data, *upload_data_size);
                u->len += *upload_data_size;
                *upload_data_size = 0;
                return MHD_YES;
        }

        pthread_mutex_lock(&r->lock);
        unsigned n = r->requests++;
        copy_header(c, "Content-Encoding", r->content_encoding, sizeof(r->content_encoding));
        copy_header(c, "Content-Type", r->content_type, sizeof(r->content_type));
        copy_header(c, "X-Prometheus-Remote-Write-Version", r->version, sizeof(r->version));
        copy_header(c, "User-Agent", r->user_agent, sizeof(r->user_agent));
        copy_header(c, "Authorization", r->authorization, sizeof(r->authorization));
        if (n < FAKE_RECEIVER_BODIES) {
                r->bodies[n] = malloc(u->len ? u->len : 1);
                memcpy(r->bodies[n], u->data, u->len);
                r->body_len[n] = u->len;
        }
        if (r->hang) {
                r->hanging = true;
                pthread_cond_broadcast(&r->cond);
                while (!r->released)
                        pthread_cond_wait(&r->cond, &r->lock);
        }
        unsigned status = n < r->n_script ? (unsigned) r->script[n] : 204;
        if (r->require_authorization[0] && strcmp(r->authorization, r->require_authorization) != 0)
                status = 401;
        size_t raw_len = 0;
        char *raw = NULL;
        Prometheus__WriteRequest *req = NULL;
        if (snappy_uncompressed_length((const char *) u->data, u->len, &raw_len) == SNAPPY_OK) {
                raw = malloc(raw_len ? raw_len : 1);
                if (snappy_uncompress((const char *) u->data, u->len, raw, &raw_len) == SNAPPY_OK)
                        req = prometheus__write_request__unpack(NULL, raw_len, (const uint8_t *) raw);
        }
        if (!req) {
                r->bad_body = true;
                status = 400;
        } else if (status >= 200 && status < 300) {
                keep(r, req);
        }
        prometheus__write_request__free_unpacked(req, NULL);
        free(raw);
        unsigned retry_after = status == 429 || status >= 500 ? r->retry_after_s : 0;
        pthread_cond_broadcast(&r->cond);
        pthread_mutex_unlock(&r->lock);
        return respond(c, status, retry_after);
}

static void on_completed(void *cls, struct MHD_Connection *c, void **con_cls, enum MHD_RequestTerminationCode toe) {
        struct upload *u = *con_cls;
        if (u)
                free(u->data);
        free(u);
        *con_cls = NULL;
}

static int serve(struct fake_receiver *r, uint16_t port) {
        struct sockaddr_in addr = { .sin_family = AF_INET, .sin_port = htons(port) };
        addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        r->mhd = MHD_start_daemon(MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_THREAD_PER_CONNECTION, port, NULL, NULL,
                                  on_request, r, MHD_OPTION_SOCK_ADDR, &addr, MHD_OPTION_NOTIFY_COMPLETED, on_completed,
                                  r, MHD_OPTION_LISTENING_ADDRESS_REUSE, 1u, MHD_OPTION_END);
        if (!r->mhd)
                return -EIO;
        r->port = MHD_get_daemon_info(r->mhd, MHD_DAEMON_INFO_BIND_PORT)->port;
        return 0;
}

int fake_receiver_start(struct fake_receiver *r, uint16_t port) {
        pthread_mutex_init(&r->lock, NULL);
        pthread_cond_init(&r->cond, NULL);
        return serve(r, port);
}

int fake_receiver_restart(struct fake_receiver *r) {
        return serve(r, r->port);
}

void fake_receiver_release(struct fake_receiver *r) {
        pthread_mutex_lock(&r->lock);
        r->released = true;
        pthread_cond_broadcast(&r->cond);
        pthread_mutex_unlock(&r->lock);
}

void fake_receiver_pause(struct fake_receiver *r) {
        fake_receiver_release(r);
        if (r->mhd)
                MHD_stop_daemon(r->mhd);
        r->mhd = NULL;
}

void fake_receiver_stop(struct fake_receiver *r) {
        if (!r)
                return;
        fake_receiver_pause(r);
        for (size_t i = 0; i < FAKE_RECEIVER_BODIES; i++)
                free(r->bodies[i]);
        free(r->samples);
        pthread_cond_destroy(&r->cond);
        pthread_mutex_destroy(&r->lock);
}

/* Waits until done(r, arg) or seconds passed; the caller holds no lock. */
static bool wait_for(struct fake_receiver *r, bool (*done)(const struct fake_receiver *r, size_t arg), size_t arg,
                     unsigned seconds) {
        struct timespec until;
        clock_gettime(CLOCK_REALTIME, &until);
        until.tv_sec += seconds;
        pthread_mutex_lock(&r->lock);
        bool ok;
        while (!(ok = done(r, arg)))
                if (pthread_cond_timedwait(&r->cond, &r->lock, &until) == ETIMEDOUT) {
                        ok = done(r, arg);
                        break;
                }
        pthread_mutex_unlock(&r->lock);
        return ok;
}

static bool have_samples(const struct fake_receiver *r, size_t n) {
        return r->n_samples >= n;
}

static bool is_hanging(const struct fake_receiver *r, size_t unused) {
        return r->hanging;
}

static bool have_requests(const struct fake_receiver *r, size_t n) {
        return r->requests >= n;
}

bool fake_receiver_wait_samples(struct fake_receiver *r, size_t n, unsigned seconds) {
        return wait_for(r, have_samples, n, seconds);
}

bool fake_receiver_wait_hanging(struct fake_receiver *r, unsigned seconds) {
        return wait_for(r, is_hanging, 0, seconds);
}

bool fake_receiver_wait_requests(struct fake_receiver *r, unsigned n, unsigned seconds) {
        return wait_for(r, have_requests, n, seconds);
}
