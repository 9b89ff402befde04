/* Number, duration and size parsers for every text neurond reads: flags,
 * the config file, query parameters, sysfs and procfs files, fault specs.
 * Digits only, no sign, no spaces, no locale, overflow refused: "nan",
 * "inf", hex and "+1" never get through. Pure functions. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* len decimal digits at text (the whole span). Returns 0, -EINVAL for an
 * empty span or a non-digit, -ERANGE when the value exceeds UINT64_MAX. */
int parse_u64(const char *text, size_t len, uint64_t *ret);

/* A NUL-terminated decimal from min to max. Returns 0, -EINVAL or -ERANGE. */
int parse_uint_range(const char *text, uint64_t min, uint64_t max, uint64_t *ret);

/* "SECONDS[.FRACTION]" (up to 15 integer and 9 fraction digits) to
 * milliseconds, rounded down. Returns 0 or -EINVAL. */
int parse_seconds_ms(const char *text, int64_t *ret_ms);

/* "500ms", "10s", "1m30s", "1h", "2d", "1w": integers with units, combinable,
 * into milliseconds. Returns 0, or -EINVAL for anything else (empty, no
 * unit, overflow). */
int parse_duration_ms(const char *text, int64_t *ret_ms);

/* "1073741824", "512K", "64M", "1G", "1T" (powers of 1024) into bytes.
 * Returns 0 or -EINVAL. */
int parse_size_bytes(const char *text, uint64_t *ret);

/* "true", "yes", "on", "1" and "false", "no", "off", "0". Returns 0 or
 * -EINVAL. */
int parse_bool(const char *text, bool *ret);
