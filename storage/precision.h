/* What the store keeps of a value (docs/storage.md, "Value precision"):
 * counters and whole numbers exactly; gauges that are not whole numbers
 * exactly when they are decimals of at most 6 places (instruments and the
 * model report such), else to 24 significant bits, a float's precision.
 * Pure functions. */
#pragma once

/* v as the store keeps a gauge: unchanged when whole, infinite, NaN or a
 * decimal of at most 6 places, else rounded to 24 significant bits (ties
 * to even; relative error below 6e-8). */
double precision_round_gauge(double v);

/* v rounded to 24 significant bits as precision_round_gauge() rounds,
 * whatever it is: a cheaper guess of what the store keeps. */
double precision_round_bits(double v);
