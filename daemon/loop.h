/* The tick loop: one poll of every collector per interval, one timestamp
 * per tick, the snapshot published whole, the samples handed to the store.
 *
 * Scheduling uses CLOCK_MONOTONIC; the stamp comes from CLOCK_REALTIME,
 * scaled by the backend's time_scale for the model's speed= option.
 * Stamps never go backwards and never repeat: when the wall clock steps
 * back, stamps continue from the monotonic clock until it catches up
 * (see loop_stamp()).
 *
 * Before reading, each collector brings its inventory up to date
 * (collector_ops.refresh: runtimes that started or exited). When a series
 * list changed, the loop builds the combined list anew, publishes it as the
 * next series set (lib/snapshot.h) with the snapshots that follow, and
 * registers it with the store; series that stay keep their identity.
 *
 * After the collectors, each tick evaluates the devices' health from the
 * snapshot and the one before (lib/health.h): the result goes with the
 * snapshot, its states into the neuron_device_health series the loop adds
 * after the collectors' (4 per device of the backend), its events to the
 * store.
 *
 * A tick that runs past the next one skips the missed intervals (counted in
 * overruns) and the loop stays on its grid. A collector whose read fails is
 * retried after 2, 4, 8 ... up to LOOP_BACKOFF_MAX intervals, and at every
 * interval again after its first success; its failures are logged when
 * they start, when the error changes, after 2^k consecutive failures and
 * when reads work again. */
#pragma once

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "collectors/collector.h"
#include "lib/snapshot.h"
#include "lib/ticks.h"
#include "storage/store.h"

/* A failing collector is retried at most this many intervals apart. */
#define LOOP_BACKOFF_MAX 64
/* A difference between the wall clock and the monotonic clock larger than
 * this, from one tick to the next, is a clock step rather than a slew. */
#define LOOP_CLOCK_STEP_MS 1000
/* A tick this close to a whole number of intervals after the previous stamp
 * is stamped on that grid (at most a hundredth of the interval). */
#define LOOP_GRID_TOLERANCE_MS 5

struct loop_collector_state {
        int error;           /* last read result, 0 after a success */
        uint64_t failures;   /* consecutive failed reads */
        uint64_t retry_tick; /* the collector is not read before this tick */
};

struct loop {
        struct collector *const *collectors;
        size_t n_collectors;
        size_t *offsets;            /* first series of each collector */
        struct series_desc *series; /* every collector's series, in order */
        size_t n_series;
        struct series_set *set; /* the same, as the snapshots carry it */
        size_t health_offset;   /* first neuron_device_health series: after the collectors' */
        struct snapshot *prev;  /* the previous tick, for the health rules' rates */
        bool rebuild_due;       /* a collector's series changed and the list could not be rebuilt yet */
        bool register_due;      /* the list changed and the store has not taken it yet */
        struct store *store;
        struct snapshot_slot *latest;
        int64_t interval_ms; /* simulated time between ticks */
        double time_scale;
        uint64_t tick;
        int64_t last_stamp_ms;
        int64_t wall_start_ms;
        int64_t mono_start_ns;
        int64_t last_stamp_mono_ns; /* CLOCK_MONOTONIC at the last stamp */
        bool clock_held;            /* the wall clock stepped back; stamping from the monotonic clock */
        uint64_t overruns;          /* intervals skipped because a tick ran late */
        int store_error;            /* last store_append() result, logged on change */
        bool store_unopened;        /* the store had no database at that result */
        unsigned store_damaged;     /* damaged files the store has set aside, as last logged */
        size_t unstored;            /* series of the list the store leaves out, as last logged */
        struct loop_collector_state state[SNAPSHOT_COLLECTORS_MAX];
        /* Called on SIGHUP from the loop's thread. It re-reads the
         * configuration and applies what can change at run time (it may set
         * interval_ms); it returns -EINVAL and changes nothing when the new
         * configuration is bad. NULL: SIGHUP is only logged. */
        int (*reload)(struct loop *l, void *userdata);
        void *reload_userdata;
        /* Called from the loop's thread after each tick was handed to the
         * store (stored or not); it must return at once. NULL: none. */
        void (*after_tick)(void *userdata);
        void *after_tick_userdata;
        /* Driven ticks and the held timer (the admin endpoint); NULL: the
         * timer alone ticks. */
        struct tick_control *ticks;
        /* For /metrics, read by HTTP threads: valid samples handed to the
         * store successfully, and ticks the store refused. */
        atomic_uint_fast64_t samples_stored;
        atomic_uint_fast64_t store_errors;
};

/* Lets the collectors refresh their lists for the present and builds the
 * combined series list (series set generation 1). The loop borrows
 * everything it is given; the caller registers l->series with the store
 * before the first tick. */
int loop_init(struct loop *l, struct collector *const *collectors, size_t n_collectors, struct store *store,
              struct snapshot_slot *latest, int64_t interval_ms);
void loop_done(struct loop *l);

/* Runs one tick now. Returns 0, or the store's error (the tick is still
 * published for readers). */
int loop_tick(struct loop *l);

/* loop_tick() as if CLOCK_REALTIME read wall_ms and CLOCK_MONOTONIC
 * mono_ns: the seam through which tests set the time. */
int loop_tick_at(struct loop *l, int64_t wall_ms, int64_t mono_ns);

/* The stamp for a tick taken at wall_ms (CLOCK_REALTIME, milliseconds)
 * and mono_ns (CLOCK_MONOTONIC). Strictly greater than the previous stamp.
 * With a time scale of 1 it is wall_ms, except when the wall clock stepped
 * back by more than LOOP_CLOCK_STEP_MS: then the stamp is the previous one
 * plus the monotonic time elapsed, until the wall clock reaches it again.
 * A step forward is followed at once. Each step is logged once. A wall_ms
 * within LOOP_GRID_TOLERANCE_MS of a whole number of intervals after the
 * previous stamp is moved onto it, as Prometheus does with scrape times:
 * a timer's jitter of a few milliseconds would otherwise cost every stored
 * sample bits of timestamp. With another time scale the stamp is the
 * start of the simulated interval the tick falls in, counted from the
 * loop's start, so that every stamp is on the interval's grid. */
int64_t loop_stamp(struct loop *l, int64_t wall_ms, int64_t mono_ns);

/* One driven tick (the admin endpoint's, lib/ticks.h), stamped on the
 * interval's grid: the next whole number of intervals since the epoch
 * after the last stamp. That is exactly one interval after a driven tick;
 * after a tick of the timer, whose stamp is the wall clock (or the
 * simulated clock of the model's speed=) at its own start, it is the next
 * point of the grid, so that daemons with one interval, started at
 * different times and driven alike, stamp their ticks alike. Both clocks
 * move on by the time stamped. */
int loop_tick_driven(struct loop *l);

/* Ticks every interval until SIGTERM or SIGINT arrives on signal_fd
 * (a signalfd); SIGHUP calls the reload hook. With l->ticks, the timer
 * stops while held and driven ticks run as they are asked for, one per
 * pass between reading signals; once released, stamps go on from the last
 * driven one (from the monotonic clock until the wall clock reaches it). Sends WATCHDOG=1 with a
 * STATUS= line after every tick, and often enough for WatchdogSec= when
 * the interval is longer. Returns 0 on such a stop, <0 on a fatal error. */
int loop_run(struct loop *l, int signal_fd);
