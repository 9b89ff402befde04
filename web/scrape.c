#include "config.h"

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>

#include "web/accept.h"
#include "web/gzip.h"
#include "web/scrape.h"

/* The series half of /metrics for one tick, pod map, format and
 * encoding. */
struct rendered {
        atomic_int refs;
        uint64_t tick;
        struct pod_map *pods; /* a reference, so that no other map takes its address */
        struct buf body;
};

struct scrape_cache {
        pthread_mutex_t lock;
        struct rendered *slot[2][2]; /* [accept_format][gzip] */
};

static void rendered_unref(struct rendered *r) {
        if (r && atomic_fetch_sub(&r->refs, 1) == 1) {
                pod_map_unref(r->pods);
                buf_free(&r->body);
                free(r);
        }
}

int scrape_cache_new(struct scrape_cache **ret) {
        struct scrape_cache *cache = calloc(1, sizeof(*cache));
        if (!cache)
                return -ENOMEM;
        pthread_mutex_init(&cache->lock, NULL);
        *ret = cache;
        return 0;
}

void scrape_cache_free(struct scrape_cache *cache) {
        if (!cache)
                return;
        for (int f = 0; f < 2; f++)
                for (int z = 0; z < 2; z++)
                        rendered_unref(cache->slot[f][z]);
        pthread_mutex_destroy(&cache->lock);
        free(cache);
}

/* Replaces b's text by its gzip; b is marked failed when that fails. */
static void compress(struct buf *b) {
        struct buf z = { 0 };

        if (b->failed)
                return;
        if (gzip_encode(b, &z) < 0)
                z.failed = true;
        buf_free(b);
        *b = z;
}

/* A reference to the series half for snap and pods, rendered now unless
 * another scrape of the same tick and pod map already did. NULL when out
 * of memory. */
static struct rendered *cached_series(struct scrape_cache *cache, const struct expo *expo, const struct snapshot *snap,
                                      struct pod_map *pods, enum accept_format format, bool gzip) {
        struct rendered *r, *old = NULL;

        pthread_mutex_lock(&cache->lock);
        r = cache->slot[format][gzip];
        if (r && r->tick == snap->tick && r->pods == pods)
                atomic_fetch_add(&r->refs, 1);
        else
                r = NULL;
        pthread_mutex_unlock(&cache->lock);
        if (r)
                return r;

        r = calloc(1, sizeof(*r));
        if (!r)
                return NULL;
        atomic_init(&r->refs, 1);
        r->tick = snap->tick;
        r->pods = pod_map_ref(pods);
        expo_render_series(expo, snap, pods, format, &r->body);
        if (gzip)
                compress(&r->body);
        if (r->body.failed) {
                rendered_unref(r);
                return NULL;
        }
        pthread_mutex_lock(&cache->lock);
        struct rendered **slot = &cache->slot[format][gzip];
        /* At the same tick, a new pod map. */
        if (!*slot || (*slot)->tick <= r->tick) {
                old = *slot;
                atomic_fetch_add(&r->refs, 1);
                *slot = r;
        }
        pthread_mutex_unlock(&cache->lock);
        rendered_unref(old);
        return r;
}

struct metrics_body {
        struct rendered *series; /* shared, or NULL before the first tick */
        struct buf self;         /* this request's own part */
};

static void metrics_body_free(void *cls) {
        struct metrics_body *m = cls;
        rendered_unref(m->series);
        buf_free(&m->self);
        free(m);
}

void scrape_serve(const struct web_context *ctx, const struct web_request *req, struct web_reply *reply) {
        enum accept_format format =
                accept_format(MHD_lookup_connection_value(req->conn, MHD_HEADER_KIND, MHD_HTTP_HEADER_ACCEPT));
        bool gzip =
                accept_gzip(MHD_lookup_connection_value(req->conn, MHD_HEADER_KIND, MHD_HTTP_HEADER_ACCEPT_ENCODING));
        struct metrics_body *m = calloc(1, sizeof(*m));
        struct snapshot *snap = snapshot_slot_get(ctx->latest);
        struct pod_map *pods = pod_slot_get(ctx->pods);
        bool failed = !m;

        if (m && snap) {
                m->series = cached_series(req->scrape, ctx->expo, snap, pods, format, gzip);
                failed = !m->series;
        }
        if (m && !failed) {
                expo_render_self(snap, &ctx->self, format, &m->self);
                if (gzip)
                        compress(&m->self);
                failed = m->self.failed;
        }
        pod_map_unref(pods);
        snapshot_unref(snap);
        if (failed) {
                if (m)
                        metrics_body_free(m);
                reply_error(reply, 500, "internal", "out of memory");
                return;
        }
        struct MHD_IoVec iov[2] = {
                { .iov_base = m->series ? m->series->body.data : "", .iov_len = m->series ? m->series->body.len : 0 },
                { .iov_base = m->self.data, .iov_len = m->self.len },
        };
        reply->response = MHD_create_response_from_iovec(iov, 2, metrics_body_free, m);
        if (!reply->response) {
                metrics_body_free(m);
                reply_error(reply, 500, "internal", "out of memory");
                return;
        }
        if (gzip)
                MHD_add_response_header(reply->response, MHD_HTTP_HEADER_CONTENT_ENCODING, "gzip");
        MHD_add_response_header(reply->response, MHD_HTTP_HEADER_VARY, "Accept, Accept-Encoding");
        MHD_add_response_header(reply->response, MHD_HTTP_HEADER_CACHE_CONTROL, "no-store");
        reply->status = 200;
        reply->content_type = format == ACCEPT_OPENMETRICS ? EXPO_OPENMETRICS_CONTENT_TYPE : EXPO_CONTENT_TYPE;
}
