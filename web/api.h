/* The REST API and /healthz handlers, and the table that routes paths to
 * them. Every handler reads only the web_context and the request's path
 * and parameters, and fills a web_reply. */
#pragma once

#include <stdbool.h>

#include "web/context.h"
#include "web/reply.h"
#include "web/request.h"

typedef void (*api_handler)(const struct web_context *ctx, const struct web_request *req, struct web_reply *reply);

/* The handler for an API path, or NULL when the path is not an API path
 * (then it is a static file or a 404). /metrics is served by web/scrape.c,
 * which negotiates its format. Routes ending in '/' take one more path
 * segment, which the handler reads from req->path. */
api_handler api_route(const char *path);
