/* The tick loop: one poll of every collector per interval, one timestamp
 * per tick, the snapshot published whole, the samples handed to the store.
 *
 * Scheduling uses CLOCK_MONOTONIC; the stamp comes from CLOCK_REALTIME,
 * scaled by the backend's time_scale for the model's speed= option. */
#pragma once

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "collectors/collector.h"
#include "daemon/snapshot.h"
#include "storage/store.h"

struct loop {
        struct collector *const *collectors;
        size_t n_collectors;
        size_t *offsets;             /* first series of each collector */
        struct series_desc *series;  /* every collector's series, in order */
        size_t n_series;
        struct store *store;
        struct snapshot_slot *latest;
        int64_t interval_ms;         /* simulated time between ticks */
        double time_scale;
        uint64_t tick;
        int64_t last_stamp_ms;
        int64_t wall_start_ms;
        int64_t mono_start_ns;
        int store_error;             /* last store_append() result, logged on change */
        int read_error[SNAPSHOT_COLLECTORS_MAX]; /* each collector's last read result, logged on change */
        /* Called on SIGHUP from the loop's thread. It re-reads the
         * configuration and applies what can change at run time (it may set
         * interval_ms); it returns -EINVAL and changes nothing when the new
         * configuration is bad. NULL: SIGHUP is only logged. */
        int (*reload)(struct loop *l, void *userdata);
        void *reload_userdata;
        /* For /metrics, read by HTTP threads: valid samples handed to the
         * store successfully, and ticks the store refused. */
        atomic_uint_fast64_t samples_stored;
        atomic_uint_fast64_t store_errors;
};

/* Builds the combined series list. The loop borrows everything it is given. */
int loop_init(struct loop *l, struct collector *const *collectors, size_t n_collectors, struct store *store,
              struct snapshot_slot *latest, int64_t interval_ms);
void loop_done(struct loop *l);

/* Runs one tick now. Returns 0, or the store's error (the tick is still
 * published for readers). */
int loop_tick(struct loop *l);

/* Ticks every interval until SIGTERM or SIGINT arrives on signal_fd
 * (a signalfd); SIGHUP calls the reload hook. Sends WATCHDOG=1 with a
 * STATUS= line after every tick, and often enough for WatchdogSec= when
 * the interval is longer. Returns 0 on such a stop, <0 on a fatal error. */
int loop_run(struct loop *l, int signal_fd);
