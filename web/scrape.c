#include "config.h"

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>

#include "web/accept.h"
#include "web/gzip.h"
#include "web/scrape.h"

/* One tick's /metrics for one pod map in one format and encoding: the body and the
 * libmicrohttpd response that sends it, headers and all. libmicrohttpd
 * sends the body from this buffer (no copy) and counts the connections
 * it is queued on; the body is freed when the last of them is done and
 * the cache has let go of the response. */
struct rendered {
        atomic_int refs; /* the cache's and the scrapes' between lookup and queueing */
        uint64_t tick;
        struct pod_map *pods; /* a reference, so that no other map takes its address */
        struct buf body;
        struct MHD_Response *response;
};

/* The exposition prepared for one series set (lib/snapshot.h). */
struct shared_expo {
        atomic_int refs;
        uint64_t generation;
        struct expo *expo;
};

#define FORMATS 2 /* enum accept_format */

struct scrape_cache {
        pthread_mutex_t lock;              /* guards slot and expo */
        pthread_mutex_t render[FORMATS];   /* one rendering of a format at a time */
        struct rendered *slot[FORMATS][2]; /* [format][gzip] */
        struct shared_expo *expo;          /* for the newest series set scraped, or NULL */
};

static void shared_expo_unref(struct shared_expo *x) {
        if (x && atomic_fetch_sub(&x->refs, 1) == 1) {
                expo_free(x->expo);
                free(x);
        }
}

static void rendered_unref(struct rendered *r) {
        if (r && atomic_fetch_sub(&r->refs, 1) == 1) {
                pod_map_unref(r->pods);
                if (r->response)
                        MHD_destroy_response(r->response); /* the body goes with its last connection */
                else
                        buf_free(&r->body);
                free(r);
        }
}

/* libmicrohttpd's call when the last connection sending a body is done. */
static void body_free(void *data) {
        free(data);
}

int scrape_cache_new(struct scrape_cache **ret) {
        struct scrape_cache *cache = calloc(1, sizeof(*cache));
        if (!cache)
                return -ENOMEM;
        pthread_mutex_init(&cache->lock, NULL);
        for (int f = 0; f < FORMATS; f++)
                pthread_mutex_init(&cache->render[f], NULL);
        *ret = cache;
        return 0;
}

void scrape_cache_free(struct scrape_cache *cache) {
        if (!cache)
                return;
        for (int f = 0; f < FORMATS; f++) {
                for (int z = 0; z < 2; z++)
                        rendered_unref(cache->slot[f][z]);
                pthread_mutex_destroy(&cache->render[f]);
        }
        shared_expo_unref(cache->expo);
        pthread_mutex_destroy(&cache->lock);
        free(cache);
}

/* A reference to the cached rendering of tick and pods for (format, gzip),
 * or NULL. */
static struct rendered *cache_get(struct scrape_cache *cache, uint64_t tick, const struct pod_map *pods,
                                  enum accept_format format, bool gzip) {
        pthread_mutex_lock(&cache->lock);
        struct rendered *r = cache->slot[format][gzip];
        if (r && r->tick == tick && r->pods == pods)
                atomic_fetch_add(&r->refs, 1);
        else
                r = NULL;
        pthread_mutex_unlock(&cache->lock);
        return r;
}

/* Makes r the cached rendering of its slot (unless a newer tick's is; at
 * the same tick, a new pod map), keeping the caller's reference. */
static void cache_put(struct scrape_cache *cache, struct rendered *r, enum accept_format format, bool gzip) {
        struct rendered *old = NULL;
        pthread_mutex_lock(&cache->lock);
        struct rendered **slot = &cache->slot[format][gzip];
        if (!*slot || (*slot)->tick <= r->tick) {
                old = *slot;
                atomic_fetch_add(&r->refs, 1);
                *slot = r;
        }
        pthread_mutex_unlock(&cache->lock);
        rendered_unref(old);
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
        const struct expo_instance instance = { .inv = &set->backend, .labels_on_every_series = ctx->instance_labels };
        if (expo_new_with(set->series, set->n, &instance, &x->expo) < 0) {
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

/* The response for body, with every header a /metrics answer carries. */
static struct rendered *finish(const struct web_context *ctx, uint64_t tick, struct pod_map *pods, struct buf *body,
                               enum accept_format format, bool gzip) {
        struct rendered *r = calloc(1, sizeof(*r));
        if (!r || body->failed) {
                buf_free(body);
                free(r);
                return NULL;
        }
        atomic_init(&r->refs, 1);
        r->tick = tick;
        r->pods = pod_map_ref(pods);
        r->body = *body;
        *body = (struct buf){ 0 };
        r->response = MHD_create_response_from_buffer_with_free_callback_cls(r->body.len, r->body.data, body_free,
                                                                             r->body.data);
        if (!r->response) {
                rendered_unref(r);
                return NULL;
        }
        if (gzip)
                MHD_add_response_header(r->response, MHD_HTTP_HEADER_CONTENT_ENCODING, "gzip");
        MHD_add_response_header(r->response, MHD_HTTP_HEADER_VARY, "Accept, Accept-Encoding");
        MHD_add_response_header(r->response, MHD_HTTP_HEADER_CACHE_CONTROL, "no-store");
        reply_common_headers(r->response, ctx,
                             format == ACCEPT_OPENMETRICS ? EXPO_OPENMETRICS_CONTENT_TYPE : EXPO_CONTENT_TYPE);
        return r;
}

/* The rendering of snap and pods for (format, gzip): cached, or made now. Scrapes
 * of one format wait for the one rendering it; the compressed body is the
 * plain one compressed, in one gzip stream. NULL when out of memory. */
static struct rendered *rendering(struct scrape_cache *cache, const struct web_context *ctx,
                                  const struct snapshot *snap, struct pod_map *pods, enum accept_format format,
                                  bool gzip) {
        uint64_t tick = snap ? snap->tick : 0; /* before the first tick: neurond's own metrics only */
        struct rendered *r = cache_get(cache, tick, pods, format, gzip), *plain = NULL;
        if (r)
                return r;
        pthread_mutex_lock(&cache->render[format]);
        r = cache_get(cache, tick, pods, format, gzip);
        if (!r)
                plain = cache_get(cache, tick, pods, format, false);
        if (!r && !plain) {
                struct buf body = { 0 };
                struct shared_expo *x = snap && snap->set ? cached_expo(cache, ctx, snap->set) : NULL;
                if (snap && snap->set && !x)
                        body.failed = true;
                else
                        expo_render_with_pods(x ? x->expo : NULL, snap, pods, &ctx->self, format, &body);
                shared_expo_unref(x);
                plain = finish(ctx, tick, pods, &body, format, false);
                if (plain)
                        cache_put(cache, plain, format, false);
        }
        if (!r && plain && gzip) {
                struct buf z = { 0 };
                if (gzip_encode(&plain->body, &z) < 0)
                        z.failed = true;
                r = finish(ctx, tick, pods, &z, format, true);
                if (r)
                        cache_put(cache, r, format, true);
                rendered_unref(plain);
        } else if (!r) {
                r = plain;
        }
        pthread_mutex_unlock(&cache->render[format]);
        return r;
}

static void release(void *cls) {
        rendered_unref(cls);
}

void scrape_serve(const struct web_context *ctx, const struct web_request *req, struct web_reply *reply) {
        enum accept_format format =
                accept_format(MHD_lookup_connection_value(req->conn, MHD_HEADER_KIND, MHD_HTTP_HEADER_ACCEPT));
        bool gzip =
                accept_gzip(MHD_lookup_connection_value(req->conn, MHD_HEADER_KIND, MHD_HTTP_HEADER_ACCEPT_ENCODING));
        struct snapshot *snap = snapshot_slot_get(ctx->latest);
        struct pod_map *pods = pod_slot_get(ctx->pods);
        struct rendered *r = rendering(req->scrape, ctx, snap, pods, format, gzip);

        pod_map_unref(pods);
        snapshot_unref(snap);
        if (!r) {
                reply_error(reply, 500, "internal", "out of memory");
                return;
        }
        reply->status = 200;
        reply->response = r->response;
        reply->release = release;
        reply->release_cls = r;
}
