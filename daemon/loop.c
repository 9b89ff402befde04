#include "config.h"

#include <errno.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/signalfd.h>
#include <sys/timerfd.h>
#include <time.h>
#include <unistd.h>

#include "daemon/loop.h"
#include "daemon/notify.h"
#include "lib/clock.h"
#include "lib/log.h"

/* Builds l->series, l->offsets and the next series set from the
 * collectors' inventories as they are now. On failure the old ones stay. */
static int loop_build(struct loop *l) {
        const struct inventory *backend = &l->collectors[0]->inv;
        size_t n = 0;
        for (size_t i = 0; i < l->n_collectors; i++)
                n += l->collectors[i]->inv.n_series;
        size_t health_offset = n;
        n += (size_t) backend->n_devices * HEALTH__COUNT;
        size_t *offsets = calloc(l->n_collectors, sizeof(*offsets));
        struct series_desc *series = calloc(n ? n : 1, sizeof(*series));
        struct series_set *set = NULL;
        int r = offsets && series ? 0 : -ENOMEM;

        for (size_t i = 0, at = 0; r == 0 && i < l->n_collectors; i++) {
                const struct inventory *inv = &l->collectors[i]->inv;
                offsets[i] = at;
                /* A backend without devices has no series, and series NULL. */
                if (inv->n_series)
                        memcpy(series + at, inv->series, inv->n_series * sizeof(*series));
                at += inv->n_series;
        }
        /* One series per device and state, stored like any other. */
        for (unsigned d = 0; r == 0 && d < backend->n_devices; d++)
                for (int st = 0; st < HEALTH__COUNT; st++) {
                        struct series_desc *desc = &series[health_offset + d * HEALTH__COUNT + (unsigned) st];
                        desc->metric = METRIC_DEVICE_HEALTH;
                        snprintf(desc->label_values[0], sizeof(desc->label_values[0]), "%u", backend->devices[d].index);
                        snprintf(desc->label_values[1], sizeof(desc->label_values[1]), "%s", health_state_names[st]);
                }
        /* The first collector is the accelerator backend: its devices and
         * runtimes go with the set (the host collector has neither). */
        if (r == 0) {
                set = series_set_new(l->set ? l->set->generation + 1 : 1, series, n, &l->collectors[0]->inv);
                r = set ? 0 : -ENOMEM;
        }
        if (r < 0) {
                free(offsets);
                free(series);
                return r;
        }
        for (size_t i = 0; i < l->n_collectors; i++)
                log_collector(LOG_LEVEL_DEBUG, l->collectors[i]->ops->name,
                              "%zu series from series %zu (series list %llu)", l->collectors[i]->inv.n_series,
                              offsets[i], (unsigned long long) set->generation);
        free(l->offsets);
        free(l->series);
        series_set_unref(l->set);
        l->offsets = offsets;
        l->series = series;
        l->n_series = n;
        l->health_offset = health_offset;
        l->set = set;
        return 0;
}

int loop_init(struct loop *l, struct collector *const *collectors, size_t n_collectors, struct store *store,
              struct snapshot_slot *latest, int64_t interval_ms) {
        if (n_collectors == 0 || n_collectors > SNAPSHOT_COLLECTORS_MAX)
                return -EINVAL;
        *l = (struct loop){
                .collectors = collectors,
                .n_collectors = n_collectors,
                .store = store,
                .latest = latest,
                .interval_ms = interval_ms,
                /* The first collector is the accelerator backend: its clock rules. */
                .time_scale = collectors[0]->time_scale > 0 ? collectors[0]->time_scale : 1,
                .wall_start_ms = clock_ns(CLOCK_REALTIME) / 1000000,
                .mono_start_ns = clock_ns(CLOCK_MONOTONIC),
        };
        /* The lists as they are now, so that the store registers the series
         * the first ticks have; a refresh that fails is tried again then. */
        for (size_t i = 0; i < n_collectors; i++)
                if (collectors[i]->ops->refresh)
                        (void) collectors[i]->ops->refresh(collectors[i], l->wall_start_ms);
        int r = loop_build(l);
        if (r < 0) {
                loop_done(l);
                return r;
        }
        /* A file set aside at open was logged there. */
        if (store) {
                struct history_stats st;
                store_get_stats(store, &st);
                l->store_damaged = st.damaged_set_aside;
        }
        return 0;
}

void loop_done(struct loop *l) {
        snapshot_unref(l->prev);
        l->prev = NULL;
        free(l->offsets);
        free(l->series);
        series_set_unref(l->set);
        l->offsets = NULL;
        l->series = NULL;
        l->set = NULL;
}

/* wall_ms, or the nearest whole number of intervals after the previous
 * stamp when that is within the tolerance. */
static int64_t on_grid(const struct loop *l, int64_t wall_ms) {
        int64_t tolerance =
                l->interval_ms / 100 < LOOP_GRID_TOLERANCE_MS ? l->interval_ms / 100 : LOOP_GRID_TOLERANCE_MS;
        int64_t elapsed = wall_ms - l->last_stamp_ms;
        int64_t intervals = (elapsed + l->interval_ms / 2) / l->interval_ms;
        int64_t grid = l->last_stamp_ms + intervals * l->interval_ms;
        return intervals > 0 && llabs(wall_ms - grid) <= tolerance ? grid : wall_ms;
}

int64_t loop_stamp(struct loop *l, int64_t wall_ms, int64_t mono_ns) {
        int64_t stamp;

        if (l->time_scale != 1) {
                /* Simulated time runs off the monotonic clock alone, stamped
                 * at the start of the interval the tick belongs to: the
                 * timer's jitter, multiplied by the speed, would otherwise
                 * scatter stamps by hundreds of simulated milliseconds. */
                int64_t elapsed = (int64_t) ((double) (mono_ns - l->mono_start_ns) / 1e6 * l->time_scale);
                stamp = l->wall_start_ms + elapsed - elapsed % l->interval_ms;
                if (l->last_stamp_ms > 0 && stamp <= l->last_stamp_ms)
                        stamp = l->last_stamp_ms + l->interval_ms;
        } else if (l->last_stamp_ms == 0) {
                stamp = wall_ms;
        } else {
                /* Where the wall clock should be if nobody stepped it. */
                int64_t expected = l->last_stamp_ms + (mono_ns - l->last_stamp_mono_ns) / 1000000;
                int64_t drift = wall_ms - expected;
                if (drift > LOOP_CLOCK_STEP_MS) {
                        log_warning("wall clock jumped forward by %.3f s; stamping from it", (double) drift / 1000.0);
                        l->clock_held = false;
                        stamp = wall_ms;
                } else if (drift < (l->clock_held ? 0 : -LOOP_CLOCK_STEP_MS)) {
                        /* Stamping from the stepped clock would store ticks older
                         * than stored ones; continue the timeline instead. */
                        if (!l->clock_held)
                                log_warning("wall clock jumped back by %.3f s; stamping from the monotonic clock "
                                            "until the wall clock catches up",
                                            (double) -drift / 1000.0);
                        l->clock_held = true;
                        stamp = expected;
                } else {
                        if (l->clock_held)
                                log_info("wall clock caught up; stamping from it again");
                        l->clock_held = false;
                        stamp = on_grid(l, wall_ms);
                }
        }
        if (stamp <= l->last_stamp_ms)
                stamp = l->last_stamp_ms + 1;
        l->last_stamp_ms = stamp;
        l->last_stamp_mono_ns = mono_ns;
        return stamp;
}

/* Reads collector i into batch unless it is backing off; returns the read's
 * result (refresh_error when its refresh failed), or -EAGAIN when the read
 * was skipped. */
static int loop_read(struct loop *l, size_t i, int64_t stamp_ms, int refresh_error, struct sample_batch *batch) {
        struct collector *c = l->collectors[i];
        struct loop_collector_state *st = &l->state[i];

        if (l->tick < st->retry_tick)
                return -EAGAIN;
        c->reason[0] = '\0';
        int r = refresh_error < 0 ? refresh_error : c->ops->read(c, stamp_ms, batch);
        /* Some series unreadable this tick: why, for whoever runs with debug. */
        if (r > 0)
                log_collector(LOG_LEVEL_DEBUG, c->ops->name, "%d series unreadable this tick%s%s", r,
                              c->reason[0] ? "; first: " : "", c->reason);
        if (r >= 0) {
                if (st->failures > 0)
                        log_collector(LOG_LEVEL_INFO, c->ops->name, "reads work again after %llu failures",
                                      (unsigned long long) st->failures);
                st->failures = 0;
                st->error = 0;
                st->retry_tick = 0;
                return r;
        }
        /* A failed read leaves nothing half-valid behind. */
        memset(batch->valid, 0, batch->n);
        st->failures++;
        uint64_t delay = LOOP_BACKOFF_MAX;
        if (st->failures < 7 && (2ULL << (st->failures - 1)) < LOOP_BACKOFF_MAX)
                delay = 2ULL << (st->failures - 1);
        st->retry_tick = l->tick + delay;
        /* Bounded complaints: on a new error, then after 2, 4, 8 ... failures. */
        if (r != st->error || (st->failures & (st->failures - 1)) == 0)
                log_collector(LOG_LEVEL_WARNING, c->ops->name,
                              "read failed (%llu in a row): %s%s%s; next try in %llu intervals",
                              (unsigned long long) st->failures, strerror(-r), c->reason[0] ? "; " : "", c->reason,
                              (unsigned long long) delay);
        st->error = r;
        return r;
}

/* The backend's devices in the new set against those of the set before
 * (was): found, all gone, or none for another reason. Said once per
 * change, as a warning: without its devices the host reports nothing of
 * them. */
static void loop_log_devices(const struct loop *l, const struct inventory *was) {
        const struct inventory *now = &l->set->backend;
        const char *name = l->collectors[0]->ops->name;

        if (now->n_devices > 0 && was->n_devices == 0)
                log_collector(LOG_LEVEL_WARNING, name, "%u devices found%s%s%s; polling them", now->n_devices,
                              now->driver_version[0] ? " (Neuron driver " : "", now->driver_version,
                              now->driver_version[0] ? ")" : "");
        else if (now->n_devices == 0 && (was->n_devices > 0 || strcmp(now->backend_reason, was->backend_reason) != 0))
                log_collector(LOG_LEVEL_WARNING, name, "%s: %s; no device series until devices appear",
                              was->n_devices > 0 ? "every device is gone" : "no devices", now->backend_reason);
}

/* Lets each collector that is not backing off bring its inventory up to
 * date for stamp_ms; a failure counts as that collector's read failing.
 * Rebuilds the combined list when one changed. */
static void loop_refresh(struct loop *l, int64_t stamp_ms, int *errors) {
        for (size_t i = 0; i < l->n_collectors; i++) {
                struct collector *c = l->collectors[i];
                errors[i] = 0;
                if (!c->ops->refresh || l->tick < l->state[i].retry_tick)
                        continue;
                int r = c->ops->refresh(c, stamp_ms);
                if (r > 0)
                        l->rebuild_due = true;
                else if (r < 0)
                        errors[i] = r;
        }
        if (!l->rebuild_due)
                return;
        struct series_set *was = series_set_ref(l->set);
        int r = loop_build(l);
        if (r < 0) {
                log_error("tick %llu: rebuilding the series list failed: %s; retrying next tick",
                          (unsigned long long) l->tick, strerror(-r));
                series_set_unref(was);
                return;
        }
        l->rebuild_due = false;
        l->register_due = true;
        log_info("series list %llu: %zu series, %zu runtimes", (unsigned long long) l->set->generation, l->n_series,
                 l->set->n_runtimes);
        loop_log_devices(l, &was->backend);
        series_set_unref(was);
}

static int by_desc_cmp(const void *a, const void *b, void *series) {
        const struct series_desc *s = series;
        return series_desc_cmp(&s[*(const size_t *) a], &s[*(const size_t *) b]);
}

/* The first series the list holds more than once, or NULL (and NULL when
 * out of memory: the store's count still says how many). */
static const struct series_desc *first_duplicate(const struct series_desc *series, size_t n) {
        const struct series_desc *found = NULL;
        size_t *order = malloc((n ? n : 1) * sizeof(*order));
        if (!order)
                return NULL;
        for (size_t i = 0; i < n; i++)
                order[i] = i;
        qsort_r(order, n, sizeof(*order), by_desc_cmp, (void *) series);
        for (size_t i = 1; i < n && !found; i++)
                if (series_desc_cmp(&series[order[i - 1]], &series[order[i]]) == 0)
                        found = &series[order[i]];
        free(order);
        return found;
}

/* A list the store takes only in part: said when it starts, changes and
 * ends, not every tick. */
static void loop_log_unstored(struct loop *l) {
        struct history_stats st;
        store_get_stats(l->store, &st);
        size_t unstored = st.series_duplicated + st.series_over_limit;
        if (unstored == l->unstored)
                return;
        l->unstored = unstored;
        if (unstored == 0) {
                log_info("series list %llu: every series is stored", (unsigned long long) l->set->generation);
                return;
        }
        const struct series_desc *d = st.series_duplicated ? first_duplicate(l->series, l->n_series) : NULL;
        log_warning("series list %llu: %zu series are not stored: %zu listed more than once%s%s%s, %zu beyond the "
                    "series limit",
                    (unsigned long long) l->set->generation, unstored, st.series_duplicated, d ? " (first: " : "",
                    d ? metric_table[d->metric].name : "", d ? ")" : "", st.series_over_limit);
}

/* Hands the tick to the store, first registering a changed series list. */
static int loop_store(struct loop *l, const struct snapshot *snap) {
        int r = 0;
        if (l->register_due) {
                r = store_register_series(l->store, l->series, l->n_series);
                if (r == 0)
                        l->register_due = false;
        }
        /* Until the list could be rebuilt, the snapshot holds no values. */
        if (r == 0 && !l->rebuild_due)
                r = store_append(l->store, snap->timestamp_ms, snap->values, snap->valid, snap->n);
        return r;
}

/* The devices' health as of snap, into its health series; the events
 * go to the store with the tick. Without memory for a result the tick
 * has none: every state series is left out. */
static void loop_health(struct loop *l, struct snapshot *snap) {
        const struct inventory *backend = &l->collectors[0]->inv;
        struct health_result *prev = l->prev ? l->prev->health : NULL;
        struct health_result *h = health_evaluate(backend->devices, backend->n_devices, l->prev, snap, prev);

        snap->health = h;
        for (size_t d = 0; h && d < h->n_devices; d++)
                for (int st = 0; st < HEALTH__COUNT; st++) {
                        size_t i = l->health_offset + d * HEALTH__COUNT + (size_t) st;
                        snap->values[i] = h->devices[d].state == (enum health_state) st;
                        snap->valid[i] = 1;
                }
        if (h && h->n_events > 0 && l->store)
                store_add_events(l->store, h->events, h->n_events);
}
static int loop_tick_stamped(struct loop *l, int64_t stamp_ms, int64_t poll_start_ns);

int loop_tick(struct loop *l) {
        int64_t mono_ns = clock_ns(CLOCK_MONOTONIC);
        return loop_tick_at(l, clock_ns(CLOCK_REALTIME) / 1000000, mono_ns);
}

int loop_tick_at(struct loop *l, int64_t wall_ms, int64_t mono_ns) {
        /* What the tick costs is measured on the real clock whatever the seam says. */
        int64_t poll_start_ns = clock_ns(CLOCK_MONOTONIC);
        return loop_tick_stamped(l, loop_stamp(l, wall_ms, mono_ns), poll_start_ns);
}

/* The tick itself, stamped stamp_ms (the loop's last stamp already), begun
 * at poll_start_ns on the real monotonic clock. */
static int loop_tick_stamped(struct loop *l, int64_t stamp_ms, int64_t poll_start_ns) {
        int refresh_errors[SNAPSHOT_COLLECTORS_MAX];

        l->tick++;
        loop_refresh(l, stamp_ms, refresh_errors);
        struct snapshot *snap = snapshot_new(l->n_series);
        if (!snap)
                return -ENOMEM;
        snap->set = series_set_ref(l->set);
        snap->timestamp_ms = stamp_ms;
        snap->monotonic_ms = poll_start_ns / 1000000;
        snap->tick = l->tick;
        snap->overruns = l->overruns;
        for (size_t i = 0; i < l->n_collectors && !l->rebuild_due; i++) {
                struct sample_batch batch = {
                        .n = l->collectors[i]->inv.n_series,
                        .values = snap->values + l->offsets[i],
                        .valid = snap->valid + l->offsets[i],
                };
                snap->collector_up[i] = loop_read(l, i, snap->timestamp_ms, refresh_errors[i], &batch) >= 0;
        }
        snap->poll_seconds = (double) (clock_ns(CLOCK_MONOTONIC) - poll_start_ns) / 1e9;
        if (!l->rebuild_due)
                loop_health(l, snap);

        /* Compacting an hour is the slow part of a tick on a large host: say when. */
        bool rollup = store_rollup_due(l->store, snap->timestamp_ms);
        if (rollup)
                log_debug("tick %llu: rollup of an hour that ended started", (unsigned long long) snap->tick);
        int64_t store_ns = clock_ns(CLOCK_MONOTONIC);
        int r = loop_store(l, snap);
        if (rollup)
                log_debug("tick %llu: stored with its rollup in %.1f ms", (unsigned long long) snap->tick,
                          (double) (clock_ns(CLOCK_MONOTONIC) - store_ns) / 1e6);
        if (r < 0) {
                atomic_fetch_add_explicit(&l->store_errors, 1, memory_order_relaxed);
        } else {
                uint64_t stored = 0;
                for (size_t i = 0; i < snap->n; i++)
                        stored += snap->valid[i];
                atomic_fetch_add_explicit(&l->samples_stored, stored, memory_order_relaxed);
        }
        loop_log_unstored(l);
        struct history_stats st;
        store_get_stats(l->store, &st);
        if (st.damaged_set_aside != l->store_damaged)
                log_error("the database file was damaged: kept it as %s and started a new one with the ticks held "
                          "in memory",
                          store_set_aside_name(l->store));
        l->store_damaged = st.damaged_set_aside;
        if (r != l->store_error) {
                if (r == -EUCLEAN)
                        log_error("storing tick %llu failed: the database file is damaged; setting it aside",
                                  (unsigned long long) snap->tick);
                else if (r < 0)
                        log_error("storing tick %llu failed: %s%s", (unsigned long long) snap->tick, strerror(-r),
                                  st.unopened ? " (no database open yet)" : "");
                else if (l->store_unopened)
                        log_info("database opened; storing ticks");
                else
                        log_info("storing ticks works again");
                l->store_error = r;
                l->store_unopened = st.unopened;
        }
        /* Kept for the next tick's rates, as published. */
        snapshot_unref(l->prev);
        l->prev = snapshot_ref(snap);
        snapshot_slot_publish(l->latest, snap);
        if (l->after_tick)
                l->after_tick(l->after_tick_userdata);
        return r;
}

/* Arms the timer for the loop's interval, first tick after one period:
 * main() runs the start-up tick itself, before the server starts. */
static int loop_arm(const struct loop *l, int tfd) {
        int64_t period_ns = (int64_t) ((double) l->interval_ms * 1e6 / l->time_scale);

        if (period_ns < 1000000)
                period_ns = 1000000;
        struct itimerspec its = {
                .it_interval = { .tv_sec = period_ns / 1000000000, .tv_nsec = period_ns % 1000000000 },
                .it_value = { .tv_sec = period_ns / 1000000000, .tv_nsec = period_ns % 1000000000 },
        };
        return timerfd_settime(tfd, 0, &its, NULL) < 0 ? -errno : 0;
}

static int loop_disarm(int tfd) {
        struct itimerspec its = { 0 };
        return timerfd_settime(tfd, 0, &its, NULL) < 0 ? -errno : 0;
}

int loop_tick_driven(struct loop *l) {
        int64_t poll_start_ns = clock_ns(CLOCK_MONOTONIC);
        /* The next whole number of intervals since the epoch: one interval
         * after a driven tick, and from the timer's tick, whose stamp is
         * its start's wall clock, onto the grid that every daemon with that
         * interval shares. Both clocks move on by the time stamped, so that
         * the timer, once released, goes on from here (loop_release()). */
        int64_t stamp_ms = (l->last_stamp_ms / l->interval_ms + 1) * l->interval_ms;
        l->last_stamp_mono_ns += (int64_t) ((double) (stamp_ms - l->last_stamp_ms) * 1e6 / l->time_scale);
        l->last_stamp_ms = stamp_ms;
        return loop_tick_stamped(l, stamp_ms, poll_start_ns);
}

/* The timer takes over from driven ticks, which ran ahead of both clocks:
 * the monotonic timeline is moved so that the next tick is one interval
 * after the last driven one, and until the wall clock reaches the driven
 * stamps, stamps follow the monotonic clock, as after a step back. */
static int loop_release(struct loop *l, int tfd) {
        int64_t now_ns = clock_ns(CLOCK_MONOTONIC);
        int64_t shift_ns = now_ns - l->last_stamp_mono_ns;

        l->mono_start_ns += shift_ns;
        l->last_stamp_mono_ns = now_ns;
        if (l->time_scale == 1 && clock_ns(CLOCK_REALTIME) / 1000000 < l->last_stamp_ms)
                l->clock_held = true;
        log_info("tick %llu: the timer ticks again", (unsigned long long) l->tick);
        return loop_arm(l, tfd);
}

static void loop_status(const struct loop *l, char *out, size_t size) {
        size_t up = 0;
        struct snapshot *snap = snapshot_slot_get(l->latest);

        for (size_t i = 0; snap && i < l->n_collectors; i++)
                up += snap->collector_up[i];
        snprintf(out, size, "Polling every %lldms; tick %llu; %zu of %zu collectors up", (long long) l->interval_ms,
                 (unsigned long long) l->tick, up, l->n_collectors);
        snapshot_unref(snap);
}

/* SIGHUP: the reload hook validates and applies the new configuration; on
 * failure nothing changed. The timer is re-armed only when the interval did
 * change, so a reload neither skips nor doubles a tick otherwise. */
static int loop_reload(struct loop *l, int tfd, bool held) {
        int64_t old_interval = l->interval_ms;
        char status[160];
        int r;

        if (!l->reload) {
                log_info("received SIGHUP; nothing to reload");
                return 0;
        }
        notify_reloading();
        r = l->reload(l, l->reload_userdata);
        if (r >= 0 && l->interval_ms != old_interval && !held)
                r = loop_arm(l, tfd);
        loop_status(l, status, sizeof(status));
        notify_ready(status);
        return r;
}

int loop_run(struct loop *l, int signal_fd) {
        /* Non-blocking: a SIGHUP that changes the interval re-arms the timer
         * after poll() found it due, which takes back that expiration; a
         * blocking read would then wait out the new interval (an hour, say)
         * with SIGTERM unread. */
        int tfd = timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC | TFD_NONBLOCK);
        int64_t ping_ms = notify_watchdog_ping_ms();
        char status[160];
        bool held = false;
        int r = 0;

        if (tfd < 0)
                return -errno;
        r = loop_arm(l, tfd);
        if (r < 0)
                goto out;
        for (;;) {
                uint64_t driven = 0;
                if (l->ticks) {
                        bool hold;
                        tick_control_poll(l->ticks, &hold, &driven);
                        if (hold != held) {
                                r = hold ? loop_disarm(tfd) : loop_release(l, tfd);
                                if (r < 0)
                                        goto out;
                                if (hold)
                                        log_info("tick %llu: the timer is held", (unsigned long long) l->tick);
                                held = hold;
                        }
                }
                struct pollfd fds[3] = { { .fd = signal_fd, .events = POLLIN },
                                         { .fd = tfd, .events = POLLIN },
                                         { .fd = l->ticks ? l->ticks->fd : -1, .events = POLLIN } };
                /* With a watchdog, wake in time to ping even when the interval
                 * is longer; with driven ticks due, only look for signals. */
                int timeout = ping_ms > 0 ? (int) (ping_ms < INT_MAX ? ping_ms : INT_MAX) : -1;
                int n = poll(fds, 3, driven > 0 ? 0 : timeout);
                if (n < 0) {
                        if (errno == EINTR)
                                continue;
                        r = -errno;
                        goto out;
                }
                if (fds[0].revents & POLLIN) {
                        struct signalfd_siginfo si;
                        if (read(signal_fd, &si, sizeof(si)) == sizeof(si)) {
                                if (si.ssi_signo == SIGTERM || si.ssi_signo == SIGINT) {
                                        log_info("received %s, stopping",
                                                 si.ssi_signo == SIGTERM ? "SIGTERM" : "SIGINT");
                                        goto out;
                                }
                                if (si.ssi_signo == SIGHUP) {
                                        r = loop_reload(l, tfd, held);
                                        if (r < 0 && r != -EINVAL)
                                                goto out;
                                        r = 0;
                                }
                        }
                }
                if (fds[1].revents & POLLIN) {
                        uint64_t expirations = 0;
                        if (read(tfd, &expirations, sizeof(expirations)) != sizeof(expirations))
                                continue;
                        /* Missed expirations are skipped ticks: poll once, stay on the grid. */
                        if (expirations > 1) {
                                l->overruns += expirations - 1;
                                log_debug("tick overran: %llu intervals skipped",
                                          (unsigned long long) (expirations - 1));
                        }
                        if (!held)
                                loop_tick(l);
                }
                if (driven > 0) {
                        loop_tick_driven(l);
                        tick_control_ran(l->ticks, l->tick, l->last_stamp_ms);
                }
                /* Pinged from this thread only: a loop stuck in a collector gets
                 * no pings and systemd restarts the service. */
                loop_status(l, status, sizeof(status));
                notify_watchdog(status);
        }
out:
        if (l->ticks)
                tick_control_stop(l->ticks);
        close(tfd);
        return r;
}
