/* Compressed chunks: the samples of one series over a span of time, as
 * stored in every tier. A chunk holds n timestamps and one to
 * CHUNK_COLUMNS_MAX columns of values (the raw tier has one, a rollup chunk
 * five: min, max, sum, count, last). Every stream (the timestamps, each
 * column) is encoded on its own, in whichever of these codings is smallest
 * for it, and can be decoded without the others:
 *
 *   - constant: one value for every sample;
 *   - integers: values that are whole numbers, or decimal numbers with at
 *     most 9 places, or binary fractions, as integers (v - base) / step,
 *     coded as they are, as differences, or as differences of differences,
 *     with runs of zeros counted and the rest in a fixed or a per-value
 *     width (timestamps always take this coding);
 *   - XOR with the previous value (Facebook's Gorilla);
 *   - split: sign and exponent when they change, then the mantissa bits
 *     that are not zero in every value;
 *   - bands: the high bits of each value's bits in a prefix code made
 *     from the chunk's own counts, then the low bits as they are;
 *   - same: a column bit for bit equal to an earlier one, as its index.
 *
 * Decoding gives back every value bit for bit: NaN payloads, infinities,
 * signed zeros, subnormals. docs/storage.md describes the layout.
 *
 * Pure functions over memory: safe from any thread. */
#pragma once

#include <stddef.h>
#include <stdint.h>

#define CHUNK_COLUMNS_MAX 5
#define CHUNK_SAMPLES_MAX (1u << 24)

/* Encodes n >= 1 samples into a new malloc()ed buffer: ts[] strictly
 * increasing, spanning less than 2^53 ms, and columns[c][i] the value of
 * column c (< n_columns) at ts[i]. Returns 0, -EINVAL (bad n, n_columns or
 * timestamps) or -ENOMEM. */
int chunk_encode(const int64_t *ts, const double *const *columns, size_t n_columns, size_t n, uint8_t **ret_data,
                 size_t *ret_size);

/* Number of samples in an encoded chunk, or -EBADMSG when it is not one;
 * ret_columns (may be NULL) receives the number of columns. */
int chunk_count(const uint8_t *data, size_t size, size_t *ret_columns);

/* Decodes the samples whose timestamps are at most until: their
 * timestamps into ts[] and, for each column c whose bit is set in mask,
 * their values into columns[c][] (each with room for chunk_count()
 * entries). Returns the number of samples decoded or -EBADMSG, also for
 * timestamps chunk_encode() refuses. */
int chunk_decode(const uint8_t *data, size_t size, int64_t until, int64_t *ts, double *const *columns, unsigned mask);
