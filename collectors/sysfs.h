/* The sysfs collector: reads what the Neuron kernel driver exposes.
 *
 * Spec options: "sysfs[:<root>][,lnc=1|2]". <root> is the directory mounted
 * as /sys (default "/sys"; a root with a comma cannot be named); the
 * collector reads
 *   <root>/devices/virtual/neuron_device/neuron<N>/...   one per device
 *   <root>/module/neuron/version                         the driver version
 *   <root>/class/neuron_device/{server_id_N,node_id_N,ultraserver_mode}
 *                                                        the UltraServer, at open
 * so a test or a container passes the directory that holds "devices/" and
 * "module/". The layout is the driver's (aws-neuron-driver,
 * neuron_sysfs_metrics.c).
 *
 * Only what the driver exposes is reported: per-core HBM in use and its
 * categories, per-core busy ratio (pe_cntrs, v2 and later) and busy time
 * (that ratio times each interval: sysfs has no clock rate to turn the
 * cycle counts into seconds), execution status
 * counters (the six outcomes and two error types that are neuron-monitor's,
 * and all 24 under the driver's names), ECC counters and power utilization.
 * DMA, NeuronLink and HBM bandwidth have no series at all for this backend,
 * and no runtime is known: the driver does not say who holds a core
 * (",monitor=" adds them from neuron-monitor: collectors/nmon.h).
 *
 * Cores are the logical NeuronCores the AWS tools number: lnc physical
 * core directories each (lnc= of the spec; by default 2 on Trainium2 and
 * Trainium3, else 1), their values added and busy ratios averaged, with
 * each physical core's busy ratio as a breakdown when lnc is 2.
 *
 * Without devices (no driver loaded yet, a driver that lists none, a DKMS
 * build that failed) the collector opens all the same, with no device and
 * no series, and inventory.backend_reason says why; only a root that is
 * not a directory is an error. refresh() lists the driver's devices each
 * tick: when devices appear it takes them in, when every one is gone it
 * forgets them, and either way returns 1. In between the devices are
 * fixed: a series exists when its file existed when its device was taken
 * in. read() never fails for one bad file: the affected series are left
 * invalid for this tick (a missing, empty or garbled file, a counter that
 * went backwards, a device directory that vanished; neuron_device_up says
 * 0 for the latter) and the next tick reads them afresh. It returns how
 * many series it could not read (>= 0, the first reason in c->reason),
 * -EIO when it could read none, or -ENODEV when every device is gone
 * since the last refresh() (the driver was unloaded).
 *
 * The parsers below are pure functions over a buffer: they never read
 * files, allocate or log, and they accept any bytes (they are fuzzed). */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "collectors/collector.h"

/* Where the driver's devices live, relative to the root. */
#define SYSFS_DEVICE_DIR "devices/virtual/neuron_device"
#define SYSFS_VERSION_FILE "module/neuron/version"

/* Parses one unsigned decimal integer as sysfs prints it ("%llu\n"): an
 * optional trailing newline, nothing else. Returns 0, -ENODATA on an empty
 * buffer, -EINVAL on anything but digits, -ERANGE on overflow. */
int sysfs_parse_u64(const char *buf, size_t len, uint64_t *ret);

#define SYSFS_STRING_MAX 256

/* Copies a one-line string attribute ("Trainium1\n") without its trailing
 * newline into out (size > 0), each byte that is not UTF-8 replaced by
 * U+FFFD. Returns 0, -ENODATA when empty (the driver prints "\n" for an
 * unreadable serial number), -EINVAL on control bytes or a second line,
 * -ERANGE when it does not fit (or is SYSFS_STRING_MAX bytes or more). */
int sysfs_parse_string(const char *buf, size_t len, char *out, size_t size);

enum sysfs_power_status {
        SYSFS_POWER_VALID,
        SYSFS_POWER_NO_DATA,
        SYSFS_POWER_INVALID,
};

struct sysfs_power {
        enum sysfs_power_status status;
        uint64_t epoch_seconds;
        double min, max, avg; /* percent of maximum power */
};

/* Parses stats/power/utilization: "STATUS,epoch,min,max,avg\n". Returns 0
 * whatever the status (the caller uses only SYSFS_POWER_VALID), -EINVAL on
 * an unknown status or malformed numbers, -ENODATA when empty. */
int sysfs_parse_power(const char *buf, size_t len, struct sysfs_power *ret);

/* The sums over row groups of tensor_engine/pe_cntrs, in cycles. */
struct sysfs_pe_counters {
        uint64_t mm_active, wl_active, idle;
};

/* Parses pe_cntrs: the header "xrow_grp,mm_active,wl_active,idle" then one
 * "G,mm,wl,idle" line per row group. Returns 0, -ENODATA when empty or
 * without rows, -EINVAL when malformed, -ERANGE when a sum overflows. */
int sysfs_parse_pe_counters(const char *buf, size_t len, struct sysfs_pe_counters *ret);

/* The busy ratio between two readings: delta mm_active over the delta of
 * all three. Returns 0, -ERANGE when a counter went backwards (cleared or
 * wrapped) and -ENODATA when no cycles elapsed. */
int sysfs_busy_ratio(const struct sysfs_pe_counters *prev, const struct sysfs_pe_counters *cur, double *ret);

/* Parses a device directory name "neuron<N>". Returns 0 or -EINVAL. */
int sysfs_parse_device_name(const char *name, unsigned *ret);

/* The UltraServer files of the driver's class directory,
 * <root>/class/neuron_device/ (aws-neuron-driver neuron_cdev.c,
 * ncdev_class_attrs; contents from v3/neuron_pelect.c and, for drivers of
 * chips without UltraServers, v2/neuron_dhal_v2.c):
 *   node_id_2, node_id_4      "%d\n": this host's node in a 2- or 4-node
 *                             UltraServer, -1 when it is in none
 *   server_id_2, server_id_4  "%016llx\n": the UltraServer's serial, all
 *                             zeros when none
 *   ultraserver_mode          the modes the hardware supports, "1,2,3,4\n"
 *                             (1 X4, 2 X2H, 3 X2V, 4 X1; neuron_driver_shared.h)
 *                             or "\n"
 * Each says "busy\n" while the driver elects the UltraServer's nodes. */
#define SYSFS_CLASS_DIR "class/neuron_device"

/* Parses node_id_N. Returns 0 (-1 for none), -EBUSY for "busy", -ENODATA
 * when empty, -EINVAL otherwise ("invalid", garbage, below -1). */
int sysfs_parse_node_id(const char *buf, size_t len, int *ret);

/* Parses server_id_N into 16 lower-case hex digits and a NUL (out has 17
 * bytes or more). Returns 0, -EBUSY, -ENODATA when empty, -EINVAL
 * otherwise. All zeros is a valid answer: no UltraServer. */
int sysfs_parse_server_id(const char *buf, size_t len, char *out, size_t size);

/* Parses ultraserver_mode into a bit mask, bit m for mode m (1-4).
 * Returns 0 (mask 0 for "\n"), -EBUSY, -EINVAL otherwise. */
int sysfs_parse_ultraserver_modes(const char *buf, size_t len, unsigned *ret_mask);

/* HBM capacity of a chip by its sysfs device_name, from the chip
 * catalog. Returns 0 or -ENOENT when the chip is not in the catalog. */
int sysfs_capacity_for(const char *device_name, uint64_t *ret);

extern const struct collector_ops sysfs_collector_ops;
