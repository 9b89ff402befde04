/* Parsing of REST query parameters: pure functions over strings, so they
 * can be unit tested and fuzzed without a server. Errors come back as a
 * one-line message naming the parameter, for a 400 response. */
#pragma once

#include <stddef.h>
#include <stdint.h>

#include "lib/history.h"

#define PARAMS_MAX_POINTS 11000
#define PARAMS_VALUE_MAX 256 /* longer values get 400 before any handler runs */
#define PARAMS_KEY_MAX 64

struct param {
        const char *key;
        const char *value;
};

/* Parses a time as Unix seconds ("1700000000", "1700000000.250") or
 * RFC 3339 ("2026-11-21T05:00:00Z", "...T05:00:00.5+01:00"). */
int params_parse_time(const char *text, int64_t *ret_ms);

/* params_parse_time(), or "now" (now_ms), or a duration before it
 * ("-1h", "-90s", "-15m"). */
int params_parse_time_at(const char *text, int64_t now_ms, int64_t *ret_ms);

/* Parses a step as a duration ("15s", "1m") or seconds ("15", "0.5"). */
int params_parse_step(const char *text, int64_t *ret_ms);

/* Fills q from query_range parameters: metric (required), start, end, step,
 * agg, rate (0 or 1; counters only), and any of the metric's label names as
 * equality filters.
 * Defaults: end = now_ms, start = end - 1h, step = the smallest whole second
 * that gives at most 250 points. Returns 0 or -EINVAL with err filled. */
int params_parse_query_range(const struct param *params, size_t n, int64_t now_ms, struct history_query *q, char *err,
                             size_t errlen);
