/* neurond's own process as Prometheus client libraries describe theirs
 * (process_cpu_seconds_total, process_open_fds, process_max_fds,
 * process_virtual_memory_bytes, process_resident_memory_bytes,
 * process_start_time_seconds): the names AWS's Python exporter serves for
 * itself, which Datadog's aws_neuron check maps. Read from /proc/self on
 * each request; the parser is a pure function. */
#pragma once

#include <stdint.h>
#include <stddef.h>

struct process_stats {
        double cpu_seconds; /* user + system time */
        double start_time;  /* Unix seconds */
        uint64_t virtual_bytes;
        uint64_t resident_bytes;
        uint64_t open_fds;
        uint64_t max_fds; /* the soft limit */
};

/* Parses /proc/self/stat (the fields after the command name's closing
 * parenthesis): utime, stime (ticks), starttime (ticks after boot), vsize
 * (bytes) and rss (pages). Returns 0, -EINVAL when malformed. */
struct process_stat_fields {
        uint64_t utime, stime, starttime, vsize, rss;
};
int process_parse_stat(const char *buf, size_t len, struct process_stat_fields *ret);

/* Reads the process' figures now. Returns 0 or a negative errno. */
int process_stats_read(struct process_stats *ret);
