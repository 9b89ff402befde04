/* Derived chunks: an hour of a series that follows from other series
 * (lib/metric.h's metric_derive: a logical core's utilization is the mean
 * of its physical cores', its busy-seconds counter the sum of that
 * utilization over each interval), coded as what the rule does not
 * predict from the sources' stored samples. Each prediction is an exact
 * computation on stored values, so a residual is mostly zero, and the
 * encoder decodes what it wrote and compares every bit before it is used.
 *
 * Layout (docs/storage.md): byte 0 DERIVE_FORMAT, byte 1 the rule, a
 * varint count of sources and each source's series id as a varint, then
 * an ordinary chunk (storage/chunk.h) of the timestamps and one column of
 * residuals, each a whole number:
 *   DERIVE_MEAN      the value's bits minus the prediction's bits, as
 *                    signed 64-bit integers; the prediction is the mean
 *                    of the sources at the same timestamp, rounded to
 *                    a stored gauge's 24 significant bits
 *                    (storage/precision.h), or 0 where a source has no
 *                    sample there;
 *   DERIVE_INTEGRAL  the counter in microseconds: its first value, then
 *                    each increase minus metric_busy_us() of the source
 *                    at that timestamp over the time since the previous
 *                    sample (0 where the source has no sample);
 *   DERIVE_EQUAL     as DERIVE_MEAN, the prediction the source's value.
 *
 * Pure functions over memory: safe from any thread. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "lib/metric.h"

#define DERIVE_SOURCES_MAX 8

/* The samples of one source series in the chunk's hour, ts ascending. */
struct derive_source {
        const int64_t *ts;
        const double *v;
        size_t n;
};

struct derive_header {
        enum metric_derive rule;
        size_t n_sources;
        int64_t sources[DERIVE_SOURCES_MAX]; /* series ids */
        size_t inner;                        /* offset of the residuals' chunk */
};

/* Whether data is a derived chunk (not an ordinary one). */
bool derive_is(const uint8_t *data, size_t size);

/* Reads a derived chunk's header. Returns 0 or -EBADMSG. */
int derive_header_read(const uint8_t *data, size_t size, struct derive_header *h);

/* Encodes n samples of a series (ts ascending) as a derived chunk of
 * `rule` over the sources (h's ids, sources[] their samples), into a new
 * malloc()ed buffer. Returns 0; -EDOM when the rule cannot code these
 * values exactly (a residual too large, a counter that is not whole
 * microseconds), and the caller stores an ordinary chunk; -EINVAL or
 * -ENOMEM. */
int derive_encode(enum metric_derive rule, const int64_t *source_ids, const struct derive_source *sources,
                  size_t n_sources, const int64_t *ts, const double *v, size_t n, uint8_t **ret_data, size_t *ret_size);

/* Decodes a derived chunk whose header is h, given its sources' samples
 * (in h's order), into ts[] and v[] (room for chunk_count() of the inner
 * chunk, derive_count()). Returns the number of samples or -EBADMSG. */
int derive_decode(const struct derive_header *h, const uint8_t *data, size_t size, const struct derive_source *sources,
                  int64_t *ts, double *v);

/* Number of samples in a derived chunk, or -EBADMSG. */
int derive_count(const struct derive_header *h, const uint8_t *data, size_t size);
