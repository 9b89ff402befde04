/* The host collector: the machine's CPU and memory, as neuron-monitor names
 * them (system_vcpu_usage_ratio{usage_type}, system_memory_used_bytes,
 * system_memory_total_bytes).
 *
 * Options: the procfs root (default "/proc"); it reads <root>/stat and
 * <root>/meminfo. It is opened next to the accelerator backend by the daemon,
 * not chosen with --backend. The CPU ratios need two readings: the first
 * tick only takes a baseline and reports them absent.
 *
 * The parsers are pure functions over a buffer (fuzzed). */
#pragma once

#include <stddef.h>
#include <stdint.h>

#include "collectors/collector.h"

enum host_cpu_state {
        HOST_CPU_USER,
        HOST_CPU_NICE,
        HOST_CPU_SYSTEM,
        HOST_CPU_IDLE,
        HOST_CPU_IOWAIT,
        HOST_CPU_IRQ,
        HOST_CPU_SOFTIRQ,
        HOST_CPU_STEAL,
        HOST_CPU__COUNT,
};

/* usage_type label values, neuron-monitor's spelling. */
extern const char *const host_cpu_state_names[HOST_CPU__COUNT];

struct host_cpu_times {
        uint64_t ticks[HOST_CPU__COUNT]; /* USER_HZ ticks since boot, all CPUs */
};

/* Parses the aggregate "cpu " line of /proc/stat. Missing trailing fields
 * (old kernels) count as 0. Returns 0, -ENODATA without a "cpu " line,
 * -EINVAL when it is malformed. */
int host_parse_stat(const char *buf, size_t len, struct host_cpu_times *ret);

/* Share of each state between two readings (sums to 1). Returns 0,
 * -ERANGE when a counter went backwards, -ENODATA when no time elapsed. */
int host_cpu_ratios(const struct host_cpu_times *prev, const struct host_cpu_times *cur,
                    double ratios[HOST_CPU__COUNT]);

struct host_memory {
        uint64_t total_bytes;
        uint64_t available_bytes;
};

/* Parses MemTotal and MemAvailable ("kB") from /proc/meminfo. Returns 0,
 * -ENODATA when either is missing, -EINVAL when malformed, -ERANGE when
 * available exceeds total or a value overflows. */
int host_parse_meminfo(const char *buf, size_t len, struct host_memory *ret);

extern const struct collector_ops host_collector_ops;
