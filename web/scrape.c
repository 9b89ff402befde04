#include "config.h"

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>

#include "web/accept.h"
#include "web/gzip.h"
#include "web/scrape.h"

/* The series half of /metrics for one tick, format and encoding. */
struct rendered {
        atomic_int refs;
        uint64_t tick;
        struct buf body;
};

/* The exposition prepared for one series set (lib/snapshot.h). */
struct shared_expo {
        atomic_int refs;
        uint64_t generation;
        struct expo *expo;
};

struct scrape_cache {
        pthread_mutex_t lock;
        struct rendered *slot[2][2]; /* [accept_format][gzip] */
        struct shared_expo *expo;    /* for the newest series set scraped, or NULL */
};

static void shared_expo_unref(struct shared_expo *x) {
        if (x && atomic_fetch_sub(&x->refs, 1) == 1) {
                expo_free(x->expo);
                free(x);
        }
}

static void rendered_unref(struct rendered *r) {
        if (r && atomic_fetch_sub(&r->refs, 1) == 1) {
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
        shared_expo_unref(cache->expo);
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

/* A reference to the exposition of snap's series set, prepared now when
 * the set is newer than the cache's (runtimes started or exited). NULL when
 * out of memory. */
static struct shared_expo *cached_expo(struct scrape_cache *cache, const struct web_context *ctx,
                                       const struct series_set *set) {
        struct shared_expo *x, *old = NULL;

        pthread_mutex_lock(&cache->lock);
        x = cache->expo;
        if (x && x->generation == set->generation)
                atomic_fetch_add(&x->refs, 1);
        else
                x = NULL;
        pthread_mutex_unlock(&cache->lock);
        if (x)
                return x;

        x = calloc(1, sizeof(*x));
        if (!x)
                return NULL;
        atomic_init(&x->refs, 1);
        x->generation = set->generation;
        const struct expo_instance instance = { .inv = ctx->inv, .labels_on_every_series = ctx->instance_labels };
        if (expo_new_with(set->series, set->n, ctx->inv ? &instance : NULL, &x->expo) < 0) {
                free(x);
                return NULL;
        }
        pthread_mutex_lock(&cache->lock);
        if (!cache->expo || cache->expo->generation < x->generation) {
                old = cache->expo;
                atomic_fetch_add(&x->refs, 1);
                cache->expo = x;
        }
        pthread_mutex_unlock(&cache->lock);
        shared_expo_unref(old);
        return x;
}

/* A reference to the series half for snap, rendered now unless another
 * scrape of the same tick already did. NULL when out of memory. */
static struct rendered *cached_series(struct scrape_cache *cache, const struct expo *expo, const struct snapshot *snap,
                                      enum accept_format format, bool gzip) {
        struct rendered *r, *old = NULL;

        pthread_mutex_lock(&cache->lock);
        r = cache->slot[format][gzip];
        if (r && r->tick == snap->tick)
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
        expo_render_series(expo, snap, format, &r->body);
        if (gzip)
                compress(&r->body);
        if (r->body.failed) {
                rendered_unref(r);
                return NULL;
        }
        pthread_mutex_lock(&cache->lock);
        struct rendered **slot = &cache->slot[format][gzip];
        if (!*slot || (*slot)->tick < r->tick) {
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
        bool failed = !m;

        if (m && snap && snap->set) {
                struct shared_expo *x = cached_expo(req->scrape, ctx, snap->set);
                m->series = x ? cached_series(req->scrape, x->expo, snap, format, gzip) : NULL;
                shared_expo_unref(x);
                failed = !m->series;
        }
        if (m && !failed) {
                expo_render_self(snap, &ctx->self, format, &m->self);
                if (gzip)
                        compress(&m->self);
                failed = m->self.failed;
        }
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
