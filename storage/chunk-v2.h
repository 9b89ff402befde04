/* Schema 2's chunk format (5-minute raw chunks), read only to migrate
 * such databases: Gorilla-style delta-of-delta timestamps and values as
 * delta-of-delta integers, XOR-coded or split doubles. Pure functions. */
#pragma once

#include <stddef.h>
#include <stdint.h>

/* Number of samples in a schema 2 chunk, or -EBADMSG. */
int chunk_v2_count(const uint8_t *data, size_t size);

/* Decodes into ts[] and values[], which hold at least chunk_v2_count()
 * entries. Returns the number of samples or -EBADMSG. */
int chunk_v2_decode(const uint8_t *data, size_t size, int64_t *ts, double *values);
