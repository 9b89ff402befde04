/* Content negotiation for /metrics: which exposition format the Accept
 * header prefers, and whether Accept-Encoding allows gzip. Pure functions
 * over the header text, fuzzed in tests/fuzz/fuzz-accept.c. */
#pragma once

#include <stdbool.h>

enum accept_format {
        ACCEPT_TEXT,        /* text/plain; version=0.0.4 */
        ACCEPT_OPENMETRICS, /* application/openmetrics-text; version=1.0.0 */
};

/* The format with the highest q-value among the media ranges we can serve
 * (openmetrics-text 1.0.0 or unversioned, text/plain 0.0.4 or unversioned,
 * text/ and wildcards). Ties go to the range listed first, as Prometheus
 * lists its preference first. NULL, empty, malformed or nothing acceptable
 * gives ACCEPT_TEXT: an exporter answers rather than sending 406. */
enum accept_format accept_format(const char *accept);

/* True when Accept-Encoding lists gzip, x-gzip or * with a q-value above 0
 * and gzip is not refused explicitly. */
bool accept_gzip(const char *accept_encoding);
