/* The neuron-monitor collector: what the Neuron runtimes report of
 * themselves, read from neuron-monitor's JSON, merged with the sysfs
 * collector's figures of the driver.
 *
 * Spec: "sysfs[:<root>][,lnc=1|2],monitor=<command>" runs <command> through
 * /bin/sh (e.g. "monitor=neuron-monitor -c /etc/neuron-monitor.json") and
 * reads its stdout; "...,monitor-fifo=<path>" reads the named pipe <path>
 * that a neuron-monitor started elsewhere writes to. The monitor option is
 * the last one: everything after "monitor=" is the command, commas
 * included. The child's stderr is the daemon's (the journal under systemd).
 *
 * neuron-monitor writes one JSON document per line, one per period; the
 * layout is its user guide's (aws-neuron-sdk,
 * tools/neuron-sys-tools/neuron-monitor-user-guide.rst: neuron_runtime_data
 * with pid, neuron_runtime_tag, error and report with the groups
 * neuroncore_counters, execution_stats, memory_used and
 * neuron_runtime_vcpu_usage; neuron_hardware_info). The system groups
 * (system_data), instance_info and the hardware counters are not read: the
 * host collector, the instance metadata and sysfs give the same figures.
 *
 * A thread of the collector reads the output as it comes, whatever the
 * poll interval (a document of a large host is hundreds of KB), and
 * parses each complete line: at most 64 a second, or 500 ms of its CPU
 * time parsing a second (the rest are skipped and counted: a flood of
 * lines must not take more than half a core). Each tick takes the latest document. A runtime's series exist
 * while the latest document lists it; they go when it leaves the document,
 * when the child exits, and when the ticks saw no new document for
 * NMON_STALE_MS. A child that writes nothing for NMON_STALE_MS is stopped
 * and started again. The devices are sysfs's, and come and go with its
 * refresh (collectors/sysfs.h). Values mean what AWS's
 * neuron-monitor-prometheus.py exporter makes of them: percentages / 100
 * for ratios, the per-period counts (and flops/s * period) added up into
 * counters that start at 0 with the runtime. A core a runtime holds gets
 * its utilization and memory kinds from the runtime (with its runtime_tag),
 * other cores keep sysfs's; execution_status_total and
 * execution_errors_total are the runtimes' only (per runtime, no core), so
 * that sums do not count an execution twice. Processes that share a tag
 * are one runtime in the series (nmon_merge_tags), so that no series is
 * listed twice; neuron_runtime_info and the inventory's runtimes list each
 * process.
 *
 * The parser below is a pure function over a buffer (it is fuzzed):
 * bounded in line length, nesting, runtimes and cores; numbers are checked
 * for range and strings cleaned of control and non-ASCII bytes. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "collectors/collector.h"
#include "lib/metric.h"

/* A longer line is dropped whole: a trn2.48xlarge document is ~100 KiB. */
#define NMON_LINE_MAX (4u << 20)
#define NMON_DEPTH_MAX 16
#define NMON_RUNTIMES_MAX 256
#define NMON_CORE_INDEX_MAX 4096 /* core indexes are below this */
#define NMON_CORES_MAX 512       /* per runtime */
#define NMON_STALE_MS 30000
#define NMON_ERROR_MAX 128

/* One NeuronCore a runtime uses: "neuroncores_in_use" and
 * "neuroncore_memory_usage" entries under the same index. */
struct nmon_core {
        unsigned index;
        bool has_util, has_flops, has_mem;
        double util;  /* 0-1 */
        double flops; /* operations in the period: flops/s * period */
        double mem[METRIC_CORE_MEMORY_KINDS];
};

struct nmon_runtime {
        uint32_t pid;
        char tag[SERIES_LABEL_VALUE_MAX]; /* neuron_runtime_tag, or the pid when empty */
        char error[NMON_ERROR_MAX];       /* the runtime's or a group's error, "" when none */
        bool has_exec;                    /* execution_stats present without error */
        double status[EXEC_STATUS__COUNT];
        double errors[EXEC_ERROR__COUNT];
        bool has_latency, has_device_latency; /* null while no model ran */
        double latency[METRIC_PERCENTILES], device_latency[METRIC_PERCENTILES];
        bool has_memory, has_host_breakdown;
        double memory_host, memory_device;
        double host_memory[HOST_MEM__COUNT];
        bool has_vcpu;
        double vcpu_user, vcpu_system; /* 0-1 */
        size_t n_cores;
        struct nmon_core *cores; /* ascending by index */
};

struct nmon_report {
        unsigned lnc;               /* neuron_hardware_info's logical_neuroncore_config, 0 when absent */
        unsigned cores_per_device;  /* neuroncore_per_device_count, 0 when absent */
        char error[NMON_ERROR_MAX]; /* neuron_hardware_info's error */
        size_t n_runtimes;
        struct nmon_runtime *runtimes;
};

/* Parses one line of neuron-monitor's output (without its newline).
 * Returns 0 with the report, -EINVAL when it is not a JSON object or its
 * neuron_runtime_data is malformed (a reason in err), -E2BIG over the
 * bounds, -ENOMEM. Groups that are absent, null or carry an error leave
 * their has_* false; values out of range are refused with the line. */
int nmon_parse(const char *text, size_t len, struct nmon_report *ret, char *err, size_t errlen);

void nmon_report_free(struct nmon_report *r); /* NULL-safe; leaves r empty */

/* One runtime per tag: workers started with one NEURON_PROCESS_TAG are
 * distinct processes under one tag, and the series carry the tag alone,
 * as AWS's exporter labels them. Runtimes that share a tag become the
 * first one's entry (its pid), in the order of first appearance: counts,
 * bytes and ratios add up (ratios capped at 1) and stand when every
 * runtime that has the figure's place (the runtime, or the core for a
 * core's) has it; the execution and flops counts add what each has;
 * latency percentiles are the highest of those that have them; the error
 * is the first. Cores are the union, ascending. Returns 0 with ret, or
 * -ENOMEM. */
int nmon_merge_tags(const struct nmon_report *in, struct nmon_report *ret);

/* The backend: options are the sysfs options followed by the monitor
 * option (collector_args.options of a "sysfs" spec that has one). */
extern const struct collector_ops nmon_collector_ops;

/* Whether sysfs options name a monitor: collector_open_spec sends such a
 * spec here. */
bool nmon_options_have_monitor(const char *options);

/* The lines of the monitor's output the collector has read since it
 * opened (taken, refused or skipped; their documents are then the latest),
 * for tests: a line a test wrote has been read once this counts it. */
uint64_t nmon_lines_read(struct collector *c);
