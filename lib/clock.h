/* The clocks, in the integer units neurond counts in. Thread safe. */
#pragma once

#include <stdint.h>
#include <time.h>

/* Nanoseconds of the given clock (CLOCK_REALTIME, CLOCK_MONOTONIC ...). */
int64_t clock_ns(clockid_t id);

/* Milliseconds since the Unix epoch (CLOCK_REALTIME). */
int64_t clock_wall_ms(void);

/* Milliseconds of CLOCK_MONOTONIC: for ages and timeouts. */
int64_t clock_monotonic_ms(void);
