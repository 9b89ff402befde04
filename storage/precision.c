#include "config.h"

#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "storage/precision.h"

/* Whether v prints as a decimal of at most 6 places and reads back as
 * itself: then storing it as that decimal is exact and small. */
static bool short_decimal(double v) {
        double scaled = v * 1e6;
        if (!(fabs(scaled) < 9007199254740992.0))
                return false;
        double back = (double) llround(scaled) / 1e6;
        return memcmp(&back, &v, sizeof(v)) == 0;
}

double precision_round_bits(double v) {
        enum { DROP = 52 - 23 };
        const uint64_t mask = (UINT64_C(1) << DROP) - 1, exponent_all_ones = UINT64_C(0x7ff) << 52;
        uint64_t u;
        memcpy(&u, &v, sizeof(u));
        if ((u & exponent_all_ones) == exponent_all_ones)
                return v;
        /* Near the largest doubles this may round up to infinity; callers
         * that must keep every finite value check for whole numbers first. */
        u = (u + (mask >> 1) + ((u >> DROP) & 1)) & ~mask;
        memcpy(&v, &u, sizeof(v));
        return v;
}

/* Ratios such as utilization are measured far less finely than a double
 * holds, and their random low bits would cost 3-4 bytes a sample whatever
 * the encoding. Below 2^52 nothing rounds up into the infinities: those
 * are whole. */
double precision_round_gauge(double v) {
        if (v == floor(v) || short_decimal(v))
                return v;
        return precision_round_bits(v);
}
