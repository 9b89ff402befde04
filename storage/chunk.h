/* Compressed chunks of one series' samples (timestamp, value), as stored in
 * the raw tier: Gorilla-style delta-of-delta timestamps and either
 * delta-of-delta integers (when every value of the chunk is an integer that a
 * double holds exactly, as counters and byte gauges are) or XOR-encoded
 * doubles otherwise. Decoding gives back every bit of every value, NaN
 * payloads and the sign of zero included.
 *
 * Pure functions over memory: safe from any thread. */
#pragma once

#include <stddef.h>
#include <stdint.h>

/* Encodes n >= 1 samples with strictly increasing timestamps into a new
 * malloc()ed buffer. Returns 0, -EINVAL (n == 0, n too big, timestamps
 * not increasing) or -ENOMEM. */
int chunk_encode(const int64_t *ts, const double *values, size_t n, uint8_t **ret_data, size_t *ret_size);

/* Number of samples in an encoded chunk, or -EBADMSG when it is malformed. */
int chunk_count(const uint8_t *data, size_t size);

/* Decodes into ts[] and values[], which hold at least chunk_count()
 * entries. Returns the number of samples or -EBADMSG. */
int chunk_decode(const uint8_t *data, size_t size, int64_t *ts, double *values);
