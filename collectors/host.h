/* The host collector: the machine's CPU and memory, as AWS's exporter
 * names them (system_vcpu_count, system_vcpu_usage_ratio{usage_type} with
 * user = user + nice and system = system + io_wait + irq + soft_irq,
 * system_memory_{used,total}_bytes, system_swap_{used,total}_bytes), and
 * the time per mode as a counter (system_vcpu_seconds_total{mode}).
 *
 * Options: the procfs root (default "/proc"); it reads <root>/stat and
 * <root>/meminfo. It is opened next to the accelerator backend by the daemon,
 * not chosen with --backend. The CPU ratios need two readings: the first
 * tick only takes a baseline and reports them absent.
 *
 * The parsers are pure functions over a buffer (fuzzed). */
#pragma once

#include <stdbool.h>
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

/* The mode label values of system_vcpu_seconds_total, neuron-monitor's
 * spelling of /proc/stat's states. */
extern const char *const host_cpu_state_names[HOST_CPU__COUNT];

struct host_cpu_times {
        uint64_t ticks[HOST_CPU__COUNT]; /* USER_HZ ticks since boot, all CPUs */
        unsigned vcpus;                  /* "cpuN" lines: the vCPUs online */
};

/* Parses the aggregate "cpu " line of /proc/stat and counts the "cpuN"
 * lines after it (in buf: a head of the file is enough when it holds them
 * all). Missing trailing fields (old kernels) count as 0. Returns 0,
 * -ENODATA without a "cpu " line, -EINVAL when it is malformed. */
int host_parse_stat(const char *buf, size_t len, struct host_cpu_times *ret);

/* The exporter's two usage types between two readings, as shares of all
 * the time that passed (idle and steal included): user (user, nice) and
 * system (system, io_wait, irq, soft_irq). */
struct host_cpu_usage {
        double user, system;
};

/* Returns 0, -ERANGE when a counter went backwards, -ENODATA when no time
 * elapsed. */
int host_cpu_usage(const struct host_cpu_times *prev, const struct host_cpu_times *cur, struct host_cpu_usage *ret);

struct host_memory {
        uint64_t total_bytes;
        uint64_t available_bytes;
        bool has_swap;             /* SwapTotal and SwapFree were there */
        uint64_t swap_total_bytes; /* 0 without swap space */
        uint64_t swap_free_bytes;
};

/* Parses MemTotal and MemAvailable, and SwapTotal and SwapFree when there
 * ("kB"), from /proc/meminfo. Returns 0, -ENODATA when MemTotal or
 * MemAvailable is missing, -EINVAL when malformed, -ERANGE when what is
 * free exceeds the total or a value overflows. */
int host_parse_meminfo(const char *buf, size_t len, struct host_memory *ret);

extern const struct collector_ops host_collector_ops;
