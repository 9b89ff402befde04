/* A double's bits as an integer and back, as chunks store values. */
#pragma once

#include <stdint.h>
#include <string.h>

static inline uint64_t double_bits(double v) {
        uint64_t u;
        memcpy(&u, &v, sizeof(u));
        return u;
}

static inline double bits_double(uint64_t u) {
        double v;
        memcpy(&v, &u, sizeof(v));
        return v;
}
