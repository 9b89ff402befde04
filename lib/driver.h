/* The Neuron driver's vocabulary, as its sysfs files spell it
 * (aws-neuron-driver, neuron_sysfs_metrics.c): device-memory categories,
 * execution status names and ECC counters. The model reports the same
 * names as the driver so that both backends' series look alike.
 * Constant data: safe from any thread. */
#pragma once

#include <stddef.h>

/* stats/memory_usage/device_mem/<category>/, in the driver's order. */
#define DRIVER_MEMORY_CATEGORIES 11
extern const char *const driver_memory_categories[DRIVER_MEMORY_CATEGORIES];

/* stats/status/<name>/, in the driver's order; "success" first. */
#define DRIVER_STATUS_NAMES 24
extern const char *const driver_status_names[DRIVER_STATUS_NAMES];

/* stats/hardware/<name>: the ECC counters (v2 and later). */
enum driver_ecc {
        DRIVER_ECC_MEM_UNCORRECTED,
        DRIVER_ECC_MEM_REPAIRABLE_UNCORRECTED,
        DRIVER_ECC_SRAM_UNCORRECTED,
        DRIVER_ECC__COUNT,
};
extern const char *const driver_ecc_names[DRIVER_ECC__COUNT];
