/* cmocka's assert_float_equal() converts its arguments to float, so it
 * cannot tell doubles apart beyond 24 bits; this compares them as doubles
 * and prints both values in full on failure. */
#pragma once

#include <math.h>

#define assert_double_near(a, b, epsilon) assert_double_near_at((a), (b), (epsilon), __FILE__, __LINE__)

static inline void assert_double_near_at(double a, double b, double epsilon, const char *file, int line) {
        if (a == b || fabs(a - b) <= epsilon)
                return;
        print_error("%.17g != %.17g (epsilon %g)\n", a, b, epsilon);
        _fail(file, line);
}
