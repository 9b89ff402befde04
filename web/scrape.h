/* /metrics: the latest tick in the format the client prefers. The whole
 * page, neurond's own metrics included (as of the tick), is rendered once
 * per tick, pod map (who holds the cores and devices) and format,
 * compressed once into one gzip stream for clients that accept it, and
 * every scrape of those is sent the same libmicrohttpd response, without
 * copying; the exposition is prepared once per series set (a new one when
 * runtimes start or exit). Thread safe: scrapes run on any of the server's
 * threads at once. */
#pragma once

#include "web/reply.h"
#include "web/request.h"

struct scrape_cache;

int scrape_cache_new(struct scrape_cache **ret);    /* 0 or -ENOMEM */
void scrape_cache_free(struct scrape_cache *cache); /* NULL-safe; after the last scrape */

/* The route handler, with req->scrape the server's cache. The reply holds
 * the shared response (web_reply.release). */
void scrape_serve(const struct web_context *ctx, const struct web_request *req, struct web_reply *reply);
