/* /metrics: the latest tick in the format the client prefers. The series
 * half of the answer is rendered once per tick, pod map (who holds the
 * cores and devices), format and encoding, and shared by every scrape of
 * those; neurond's own metrics are rendered for each request. Thread safe: scrapes run on any of the server's
 * threads at once. */
#pragma once

#include "web/reply.h"
#include "web/request.h"

struct scrape_cache;

int scrape_cache_new(struct scrape_cache **ret);    /* 0 or -ENOMEM */
void scrape_cache_free(struct scrape_cache *cache); /* NULL-safe; after the last scrape */

/* The route handler, with req->scrape the server's cache. Compressed, the
 * two halves are two gzip members, which RFC 1952 allows and every client
 * library reads as one stream. */
void scrape_serve(const struct web_context *ctx, const struct web_request *req, struct web_reply *reply);
