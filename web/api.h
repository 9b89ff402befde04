/* The REST API and /metrics handlers, and the table that routes paths to
 * them. Every handler reads only the web_context and fills a web_reply. */
#pragma once

#include <stdbool.h>

#include "web/http.h"
#include "web/params.h"

typedef void (*api_handler)(const struct web_context *ctx, const struct param *params, size_t n_params,
                            struct web_reply *reply);

/* The handler for an API path, or NULL when the path is not an API path
 * (then it is a static file or a 404). /metrics is served by http.c, which
 * negotiates its format. Routes ending in '/' take one more path segment,
 * which the handler reads from reply->path. */
api_handler api_route(const char *path);
