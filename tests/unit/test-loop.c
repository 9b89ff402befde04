#include "config.h"

#include <errno.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/signalfd.h>
#include <unistd.h>

#include <cmocka.h>

#include "lib/log.h"
#include "daemon/loop.h"
#include "tests/fakes/fake-collector.h"
#include "web/expo.h"

/* Each case: a fake collector, a real store in a temporary file, the loop,
 * and stderr captured in a file so that log lines can be counted. */
struct fixture {
        char dir[64];
        char db[96];
        char log[96];
        int saved_stderr;
        struct fake_collector *fake;
        struct collector *collectors[1];
        struct store *store;
        struct snapshot_slot latest;
        struct loop loop;
};

static int setup(void **state) {
        struct fixture *f = calloc(1, sizeof(*f));
        assert_non_null(f);
        snprintf(f->dir, sizeof(f->dir), "/tmp/test-loop.XXXXXX");
        assert_non_null(mkdtemp(f->dir));
        snprintf(f->db, sizeof(f->db), "%s/loop.db", f->dir);
        snprintf(f->log, sizeof(f->log), "%s/stderr", f->dir);
        FILE *log = fopen(f->log, "we");
        assert_non_null(log);
        f->saved_stderr = dup(STDERR_FILENO);
        assert_true(dup2(fileno(log), STDERR_FILENO) >= 0);
        fclose(log);
        unsetenv("JOURNAL_STREAM");
        unsetenv("WATCHDOG_USEC");
        log_init(LOG_LEVEL_INFO);

        assert_int_equal(fake_collector_new(&f->fake), 0);
        f->collectors[0] = &f->fake->base;
        assert_int_equal(store_open(f->db, &f->store), 0);
        snapshot_slot_init(&f->latest);
        assert_int_equal(loop_init(&f->loop, f->collectors, 1, f->store, &f->latest, 100), 0);
        assert_int_equal(store_register_series(f->store, f->loop.series, f->loop.n_series), 0);
        *state = f;
        return 0;
}

static int teardown(void **state) {
        struct fixture *f = *state;
        char path[128];
        dup2(f->saved_stderr, STDERR_FILENO);
        close(f->saved_stderr);
        loop_done(&f->loop);
        store_close(f->store);
        snapshot_slot_destroy(&f->latest);
        fake_collector_free(f->fake);
        unlink(f->db);
        static const char *const suffixes[] = { "-wal", "-shm", ".lock" };
        for (size_t i = 0; i < 3; i++) {
                snprintf(path, sizeof(path), "%s%s", f->db, suffixes[i]);
                unlink(path);
        }
        unlink(f->log);
        rmdir(f->dir);
        free(f);
        return 0;
}

/* Lines of the captured stderr that contain needle. */
static int count_log(const struct fixture *f, const char *needle) {
        char line[1200];
        int n = 0;
        FILE *log = fopen(f->log, "re");
        assert_non_null(log);
        while (fgets(line, sizeof(line), log))
                n += strstr(line, needle) != NULL;
        fclose(log);
        return n;
}

#define BASE_MS INT64_C(1800000000000)
#define SECOND_NS INT64_C(1000000000)

static void loop_stamp__steady_clock__wall_time(void **state) {
        struct fixture *f = *state;
        for (int64_t i = 0; i < 5; i++)
                assert_int_equal(loop_stamp(&f->loop, BASE_MS + i * 1000, i * SECOND_NS), BASE_MS + i * 1000);
        assert_int_equal(count_log(f, "wall clock"), 0);
}

static void loop_stamp__timer_jitter__stamped_on_grid(void **state) {
        struct fixture *f = *state;
        static const struct {
                int64_t wall, stamp;
        } ticks[] = {
                { 0, 0 },       { 1003, 1000 }, { 1998, 2000 }, /* within 5 ms: on the grid */
                { 3006, 3006 },                 /* too far: the wall clock, and the grid moves with it */
                { 4004, 4006 }, { 6008, 6006 }, /* a skipped tick: two intervals later */
        };
        f->loop.interval_ms = 1000;
        for (size_t i = 0; i < sizeof(ticks) / sizeof(ticks[0]); i++)
                assert_int_equal(loop_stamp(&f->loop, BASE_MS + ticks[i].wall, ticks[i].wall * 1000000),
                                 BASE_MS + ticks[i].stamp);
}

static void loop_stamp__back_an_hour__monotonic_until_caught_up_logged_once(void **state) {
        struct fixture *f = *state;
        int64_t mono = 0, wall = BASE_MS, last = 0;

        for (int i = 0; i < 3; i++, mono += SECOND_NS, wall += 1000)
                last = loop_stamp(&f->loop, wall, mono);
        wall -= 3600 * 1000;
        /* Ten ticks with the clock an hour behind: one second apart, after the last. */
        for (int i = 0; i < 10; i++, mono += SECOND_NS, wall += 1000) {
                int64_t stamp = loop_stamp(&f->loop, wall, mono);
                assert_int_equal(stamp, last + 1000);
                last = stamp;
        }
        assert_true(f->loop.clock_held);
        assert_int_equal(count_log(f, "wall clock jumped back by 3600.000 s"), 1);
        /* The clock is set right again: stamps follow it, without a gap. */
        wall = last + 1000;
        assert_int_equal(loop_stamp(&f->loop, wall, mono), wall);
        assert_false(f->loop.clock_held);
        assert_int_equal(count_log(f, "wall clock caught up"), 1);
        assert_int_equal(count_log(f, "jumped forward"), 0);
}

static void loop_stamp__forward_a_day__followed_logged_once(void **state) {
        struct fixture *f = *state;
        int64_t mono = 0, wall = BASE_MS;

        for (int i = 0; i < 3; i++, mono += SECOND_NS, wall += 1000)
                loop_stamp(&f->loop, wall, mono);
        wall += 86400 * 1000;
        for (int i = 0; i < 5; i++, mono += SECOND_NS, wall += 1000)
                assert_int_equal(loop_stamp(&f->loop, wall, mono), wall);
        assert_int_equal(count_log(f, "wall clock jumped forward by 86400.000 s"), 1);
        assert_int_equal(count_log(f, "jumped back"), 0);
}

static void loop_stamp__back_then_forward__never_repeats(void **state) {
        struct fixture *f = *state;
        int64_t mono = 0, wall = BASE_MS, last = 0;
        /* Small steps both ways, within and beyond the threshold, every tick. */
        static const int64_t steps[] = { 0, -500, -5000, 300, -1, 70000, -2000, -86400000, 86400000 * 2, 0 };

        for (size_t i = 0; i < sizeof(steps) / sizeof(steps[0]); i++) {
                wall += steps[i];
                for (int k = 0; k < 3; k++, mono += SECOND_NS / 10, wall += 100) {
                        int64_t stamp = loop_stamp(&f->loop, wall, mono);
                        assert_true(stamp > last);
                        last = stamp;
                }
        }
}

static void loop_stamp__sped_up__wall_clock_ignored(void **state) {
        struct fixture *f = *state;
        f->loop.time_scale = 100;
        f->loop.wall_start_ms = BASE_MS;
        f->loop.mono_start_ns = 0;
        assert_int_equal(loop_stamp(&f->loop, 0, SECOND_NS), BASE_MS + 100000);
        assert_int_equal(loop_stamp(&f->loop, BASE_MS * 2, 2 * SECOND_NS), BASE_MS + 200000);
        assert_int_equal(count_log(f, "wall clock"), 0);
}

static void loop_stamp__sped_up_with_timer_jitter__on_the_interval_grid(void **state) {
        struct fixture *f = *state;
        /* Speed 600, 100 ms interval: a tick every 1/6000 s of wall time,
         * each late by 0-150 microseconds, which is 0-90 simulated ms. */
        static const int64_t late_us[] = { 0, 150, 3, 80, 149, 0, 20, 100 };
        int64_t period_ns = SECOND_NS / 6000;
        f->loop.time_scale = 600;
        f->loop.wall_start_ms = BASE_MS;
        f->loop.mono_start_ns = 0;
        for (int64_t k = 0; k < 8; k++)
                assert_int_equal(loop_stamp(&f->loop, 0, k * period_ns + late_us[k] * 1000), BASE_MS + k * 100);
        /* Two intervals missed: the stamp skips them and stays on the grid. */
        assert_int_equal(loop_stamp(&f->loop, 0, 10 * period_ns + 1000), BASE_MS + 1000);
}

static void loop_tick__failing_collector__backed_off_and_restored(void **state) {
        struct fixture *f = *state;
        uint64_t read_at[16] = { 0 };
        size_t n_reads = 0;

        f->fake->fail_with = -EIO;
        for (uint64_t t = 1; t <= 200; t++) {
                uint64_t before = f->fake->reads;
                loop_tick(&f->loop);
                if (f->fake->reads != before && n_reads < 16)
                        read_at[n_reads++] = t;
                struct snapshot *snap = snapshot_slot_get(&f->latest);
                assert_false(snap->collector_up[0]);
                assert_false(snap->valid[0]);
                snapshot_unref(snap);
        }
        /* Retried after 2, 4, 8, 16, 32, 64, 64 intervals. */
        static const uint64_t expected[] = { 1, 3, 7, 15, 31, 63, 127, 191 };
        assert_int_equal(n_reads, 8);
        for (size_t i = 0; i < 8; i++)
                assert_int_equal(read_at[i], expected[i]);
        /* Logged after 1, 2, 4 and 8 failures only. */
        assert_int_equal(count_log(f, "read failed"), 4);

        f->fake->fail_with = 0;
        while (f->fake->reads == 8)
                loop_tick(&f->loop);
        assert_int_equal(f->loop.tick, 255);
        for (int i = 0; i < 5; i++) {
                uint64_t before = f->fake->reads;
                loop_tick(&f->loop);
                assert_int_equal(f->fake->reads, before + 1);
        }
        struct snapshot *snap = snapshot_slot_get(&f->latest);
        assert_true(snap->collector_up[0]);
        assert_true(snap->valid[0]);
        snapshot_unref(snap);
        assert_int_equal(count_log(f, "reads work again after 8 failures"), 1);
}

static void loop_tick__error_changes__logged_again(void **state) {
        struct fixture *f = *state;

        f->fake->fail_with = -EIO;
        loop_tick(&f->loop);
        f->loop.tick = f->loop.state[0].retry_tick - 1;
        f->fake->fail_with = -ENODEV;
        loop_tick(&f->loop);
        assert_int_equal(count_log(f, "Input/output error"), 1);
        assert_int_equal(count_log(f, "No such device"), 1);
}

static void loop_run__collector_slower_than_interval__skips_and_counts(void **state) {
        struct fixture *f = *state;
        sigset_t mask;

        sigemptyset(&mask);
        sigaddset(&mask, SIGTERM);
        assert_int_equal(sigprocmask(SIG_BLOCK, &mask, NULL), 0);
        int sfd = signalfd(-1, &mask, SFD_CLOEXEC);
        assert_true(sfd >= 0);

        /* 250 ms reads on a 100 ms interval: at least two intervals pass
         * during each read, however slow the machine. */
        f->fake->sleep_ms = 250;
        f->fake->stop_after = 3;
        assert_int_equal(loop_run(&f->loop, sfd), 0);
        close(sfd);
        assert_int_equal(f->fake->reads, 3);
        assert_int_equal(f->loop.tick, 3);
        assert_true(f->loop.overruns >= 2);

        struct snapshot *snap = snapshot_slot_get(&f->latest);
        assert_true(snap->overruns >= 1);
        struct expo *e = NULL;
        struct buf out = { 0 };
        char line[64];
        static const char *const names[] = { "fake" };
        struct expo_self self = { .version = "t", .backend = "fake", .n_collectors = 1, .collector_names = names };
        assert_int_equal(expo_new(f->loop.series, f->loop.n_series, &e), 0);
        expo_render(e, snap, &self, ACCEPT_TEXT, &out);
        buf_append(&out, "", 1);
        snprintf(line, sizeof(line), "\nneurond_tick_overruns_total %llu\n", (unsigned long long) snap->overruns);
        assert_non_null(strstr(out.data, "# TYPE neurond_tick_overruns_total counter\n"));
        assert_non_null(strstr(out.data, line));
        buf_free(&out);
        expo_free(e);
        snapshot_unref(snap);
}

/* After the first tick (which took longer than the interval, so that the
 * timer is due again): a SIGHUP, for the loop to find beside the timer. */
static void hup_after_first_tick(void *userdata) {
        struct loop *l = userdata;
        if (l->tick == 1)
                kill(getpid(), SIGHUP);
}

/* The reload lengthens the interval to 2 s, and SIGTERM comes right after. */
static int reload_longer_then_stop(struct loop *l, void *userdata) {
        (void) userdata;
        l->interval_ms = 2000;
        kill(getpid(), SIGTERM);
        return 0;
}

static void loop_run__reload_changes_interval_while_tick_due__sigterm_read_at_once(void **state) {
        struct fixture *f = *state;
        sigset_t mask;

        sigemptyset(&mask);
        sigaddset(&mask, SIGHUP);
        sigaddset(&mask, SIGTERM);
        assert_int_equal(sigprocmask(SIG_BLOCK, &mask, NULL), 0);
        int sfd = signalfd(-1, &mask, SFD_CLOEXEC);
        assert_true(sfd >= 0);

        /* The reload re-arms the timer after poll() found it due, which
         * takes that expiration back: the loop must not wait for the new
         * interval's first one (a tick 2 s later) before it reads SIGTERM. */
        f->fake->sleep_ms = 250;
        f->loop.after_tick = hup_after_first_tick;
        f->loop.after_tick_userdata = &f->loop;
        f->loop.reload = reload_longer_then_stop;
        assert_int_equal(loop_run(&f->loop, sfd), 0);
        close(sfd);
        assert_int_equal(f->loop.interval_ms, 2000);
        assert_int_equal(f->loop.tick, 1);
        assert_int_equal(f->fake->reads, 1);
}

/* The series of each tick's snapshot. */
static struct snapshot *tick_and_get(struct fixture *f) {
        assert_int_equal(loop_tick(&f->loop), 0);
        struct snapshot *snap = snapshot_slot_get(&f->latest);
        assert_non_null(snap);
        assert_non_null(snap->set);
        assert_int_equal(snap->n, snap->set->n);
        return snap;
}

/* Points stored from from to to, in buckets of step_ms. */
static size_t stored_points_step(struct fixture *f, enum metric_id metric, const char *label, const char *value,
                                 int64_t from, int64_t to, int64_t step_ms) {
        struct history_query q = {
                .metric = metric, .start_ms = from, .end_ms = to, .step_ms = step_ms, .n_matchers = 1
        };
        struct history_result *res = NULL;
        snprintf(q.matchers[0].name, sizeof(q.matchers[0].name), "%s", label);
        snprintf(q.matchers[0].value, sizeof(q.matchers[0].value), "%s", value);
        assert_int_equal(store_query_range(f->store, &q, &res), 0);
        size_t n = 0;
        for (size_t i = 0; i < res->n_series; i++)
                n += res->series[i].n_points;
        history_result_free(res);
        return n;
}

static size_t stored_points(struct fixture *f, enum metric_id metric, const char *label, const char *value,
                            int64_t from, int64_t to) {
        return stored_points_step(f, metric, label, value, from, to, 1);
}

/* Runtimes start and exit: each change is a new series set, published with
 * the snapshots and registered with the store; series that stay keep their
 * identity, and the history of a runtime that exited stays queryable. */
static void loop_tick__runtimes_come_and_go__series_sets_follow(void **state) {
        struct fixture *f = *state;

        struct snapshot *first = tick_and_get(f);
        assert_int_equal(first->set->generation, 1);
        assert_int_equal(first->n, 2);

        f->fake->runtimes = 2;
        struct snapshot *two = tick_and_get(f);
        assert_int_equal(two->set->generation, 2);
        assert_int_equal(two->n, 4);
        assert_int_equal(two->set->n_runtimes, 2);
        assert_string_equal(two->set->runtimes[1].tag, "rt1");
        assert_int_equal(two->set->series[3].metric, METRIC_RUNTIME_INFO);
        assert_true(two->valid[3]);
        /* The older snapshot keeps its own set: readers never see a mix. */
        assert_int_equal(first->set->n, 2);

        struct snapshot *same = tick_and_get(f);
        assert_ptr_equal(same->set, two->set);

        f->fake->runtimes = 1;
        struct snapshot *one = tick_and_get(f);
        assert_int_equal(one->set->generation, 3);
        assert_int_equal(one->n, 3);
        assert_string_equal(one->set->series[2].label_values[0], "rt0");

        /* A refresh that fails: that collector's read fails, the list stays. */
        f->fake->refresh_fail_with = -EIO;
        f->fake->runtimes = 0;
        struct snapshot *failed = tick_and_get(f);
        assert_ptr_equal(failed->set, one->set);
        assert_false(failed->collector_up[0]);
        for (size_t i = 0; i < failed->n; i++)
                assert_false(failed->valid[i]);

        /* rt1 lived for two ticks, rt0 for three; the device series all along. */
        int64_t from = first->timestamp_ms, to = failed->timestamp_ms;
        assert_int_equal(stored_points(f, METRIC_RUNTIME_INFO, "runtime_tag", "rt1", from, to), 2);
        assert_int_equal(stored_points(f, METRIC_RUNTIME_INFO, "runtime_tag", "rt0", from, to), 3);
        assert_int_equal(stored_points(f, METRIC_DEVICE_MEMORY_USED, "neuron_device", "0", from, to), 4);
        snapshot_unref(first);
        snapshot_unref(two);
        snapshot_unref(same);
        snapshot_unref(one);
        snapshot_unref(failed);
}

/* The backend's devices appear and go: each change is a new set with the
 * devices, and a warning said once; ticks between say nothing more. */
static void loop_tick__devices_come_and_go__new_set_and_one_warning_each(void **state) {
        struct fixture *f = *state;

        struct snapshot *none = tick_and_get(f);
        assert_int_equal(none->set->backend.n_devices, 0);

        f->fake->devices = 2;
        struct snapshot *found = tick_and_get(f);
        assert_int_equal(found->set->generation, 2);
        assert_int_equal(found->set->backend.n_devices, 2);
        assert_int_equal(found->set->backend.devices[1].index, 1);
        snapshot_unref(tick_and_get(f));
        assert_int_equal(count_log(f, "collector fake: 2 devices found; polling them"), 1);

        f->fake->devices = 0;
        struct snapshot *gone = tick_and_get(f);
        assert_int_equal(gone->set->generation, 3);
        assert_int_equal(gone->set->backend.n_devices, 0);
        assert_string_equal(gone->set->backend.backend_reason, "no fake devices");
        snapshot_unref(tick_and_get(f));
        assert_int_equal(count_log(f, "collector fake: every device is gone: no fake devices; no device series until "
                                      "devices appear"),
                         1);
        assert_int_equal(count_log(f, "devices found"), 1);
        /* The older snapshots keep the devices they were taken with. */
        assert_int_equal(found->set->backend.n_devices, 2);
        snapshot_unref(none);
        snapshot_unref(found);
        snapshot_unref(gone);
}

struct runner {
        struct loop *loop;
        int sfd;
        int result;
};

static void *run_loop(void *arg) {
        struct runner *rn = arg;
        rn->result = loop_run(rn->loop, rn->sfd);
        return NULL;
}

/* Driven ticks (the admin endpoint's): the timer held, the first tick
 * stamped on the interval's grid and each later one an interval after the
 * last, the request answered once the last is stored and published; after
 * the loop stops, requests are refused. */
static void loop_run__driven_ticks__one_interval_apart_answered_once_stored(void **state) {
        struct fixture *f = *state;
        const int64_t hour_ms = 3600 * 1000;
        struct tick_control tc;
        struct tick_state st;
        sigset_t mask;

        sigemptyset(&mask);
        sigaddset(&mask, SIGTERM);
        assert_int_equal(sigprocmask(SIG_BLOCK, &mask, NULL), 0);
        struct runner rn = { .loop = &f->loop, .sfd = signalfd(-1, &mask, SFD_CLOEXEC) };
        assert_true(rn.sfd >= 0);
        assert_int_equal(tick_control_init(&tc), 0);
        f->loop.ticks = &tc;
        /* An interval the timer cannot reach within the test: every tick is
         * a driven one, however slow the machine. */
        f->loop.interval_ms = hour_ms;
        assert_int_equal(loop_tick(&f->loop), 0);
        int64_t first = f->loop.last_stamp_ms;
        /* The whole hour after the timer's tick, stamped with the wall clock. */
        int64_t grid = (first / hour_ms + 1) * hour_ms;

        pthread_t thread;
        assert_int_equal(pthread_create(&thread, NULL, run_loop, &rn), 0);
        assert_int_equal(tick_control_run(&tc, 5, NULL, NULL, &st), 0);
        assert_true(st.held);
        assert_int_equal(st.pending, 0);
        assert_int_equal(st.tick, 6);
        assert_int_equal(st.stamp_ms, grid + 4 * hour_ms);
        struct snapshot *snap = snapshot_slot_get(&f->latest);
        assert_int_equal(snap->tick, 6);
        assert_int_equal(snap->timestamp_ms, grid + 4 * hour_ms);
        snapshot_unref(snap);
        /* A step of seconds reads the raw tier: every tick in the window. */
        assert_int_equal(
                stored_points_step(f, METRIC_DEVICE_MEMORY_USED, "neuron_device", "0", first, grid + 4 * hour_ms, 1000),
                6);

        assert_int_equal(tick_control_run(&tc, 2, NULL, NULL, &st), 0);
        assert_int_equal(st.tick, 8);
        assert_int_equal(st.stamp_ms, grid + 6 * hour_ms);
        assert_int_equal(kill(getpid(), SIGTERM), 0);
        assert_int_equal(pthread_join(thread, NULL), 0);
        assert_int_equal(rn.result, 0);
        assert_int_equal(f->loop.tick, 8);
        assert_int_equal(tick_control_run(&tc, 1, NULL, NULL, &st), -ESHUTDOWN);
        close(rn.sfd);
        tick_control_destroy(&tc);
}

/* Two daemons with one interval, started at different times, one of them
 * sped up (model speed=): the timer stamps each one's first tick from its
 * own clock, off the grid; driven ticks then land on the interval's grid,
 * so that after the same driven ticks from one stamp on both stamp alike. */
static void loop_tick_driven__daemons_started_apart__stamp_alike(void **state) {
        struct fixture *f = *state;
        const int64_t interval = 10000;
        struct snapshot_slot latest;
        struct store *store;
        struct loop other;
        char db[128], path[160];

        snprintf(db, sizeof(db), "%s/other.db", f->dir);
        assert_int_equal(store_open(db, &store), 0);
        snapshot_slot_init(&latest);
        assert_int_equal(loop_init(&other, f->collectors, 1, store, &latest, interval), 0);
        assert_int_equal(store_register_series(store, other.series, other.n_series), 0);
        f->loop.interval_ms = interval;
        other.time_scale = 5;
        other.wall_start_ms = BASE_MS + 7777;
        other.mono_start_ns = 0;

        assert_int_equal(loop_tick_at(&f->loop, BASE_MS + 1234, 0), 0);
        assert_int_equal(f->loop.last_stamp_ms, BASE_MS + 1234);
        /* 3 s of its monotonic clock are 15 simulated seconds. */
        assert_int_equal(loop_tick_at(&other, BASE_MS + 3000, 3 * SECOND_NS), 0);
        assert_int_equal(other.last_stamp_ms, BASE_MS + 17777);

        assert_int_equal(loop_tick_driven(&f->loop), 0);
        assert_int_equal(f->loop.last_stamp_ms, BASE_MS + interval);
        assert_int_equal(loop_tick_driven(&other), 0);
        assert_int_equal(other.last_stamp_ms, BASE_MS + 2 * interval);
        /* The one behind catches up by a tick, then both go on alike. */
        assert_int_equal(loop_tick_driven(&f->loop), 0);
        for (int64_t i = 3; i < 6; i++) {
                assert_int_equal(loop_tick_driven(&f->loop), 0);
                assert_int_equal(loop_tick_driven(&other), 0);
                assert_int_equal(f->loop.last_stamp_ms, BASE_MS + i * interval);
                assert_int_equal(other.last_stamp_ms, BASE_MS + i * interval);
        }
        struct snapshot *a = snapshot_slot_get(&f->latest), *b = snapshot_slot_get(&latest);
        assert_int_equal(a->timestamp_ms, b->timestamp_ms);
        snapshot_unref(a);
        snapshot_unref(b);

        /* Its monotonic clock moved on by the simulated time stamped over
         * the speed: the timer, once released, goes on from there. */
        assert_int_equal(other.last_stamp_mono_ns,
                         3 * SECOND_NS + (BASE_MS + 5 * interval - (BASE_MS + 17777)) * 1000000 / 5);

        loop_done(&other);
        store_close(store);
        snapshot_slot_destroy(&latest);
        static const char *const suffixes[] = { "", "-wal", "-shm", ".lock" };
        for (size_t i = 0; i < 4; i++) {
                snprintf(path, sizeof(path), "%s%s", db, suffixes[i]);
                unlink(path);
        }
}

/* A hold is answered once the loop has seen it: the tick of the timer in
 * progress when it was asked for is published before the answer, and no
 * tick follows it, so that two reads after a hold see one tick. */
static void loop_run__hold__answered_after_the_tick_in_progress(void **state) {
        struct fixture *f = *state;
        struct tick_control tc;
        sigset_t mask;

        sigemptyset(&mask);
        sigaddset(&mask, SIGTERM);
        assert_int_equal(sigprocmask(SIG_BLOCK, &mask, NULL), 0);
        struct runner rn = { .loop = &f->loop, .sfd = signalfd(-1, &mask, SFD_CLOEXEC) };
        assert_true(rn.sfd >= 0);
        assert_int_equal(tick_control_init(&tc), 0);
        f->loop.ticks = &tc;
        /* Each read takes three intervals: a hold asked for during one
         * comes while a tick is in progress. */
        f->fake->sleep_ms = 300;

        pthread_t thread;
        assert_int_equal(pthread_create(&thread, NULL, run_loop, &rn), 0);
        while (__atomic_load_n(&f->fake->reads, __ATOMIC_SEQ_CST) < 2)
                usleep(1000);
        uint64_t in_progress = __atomic_load_n(&f->fake->reads, __ATOMIC_SEQ_CST);
        assert_int_equal(tick_control_hold(&tc, true, NULL, NULL), 0);
        struct snapshot *snap = snapshot_slot_get(&f->latest);
        assert_int_equal(snap->tick, in_progress);
        snapshot_unref(snap);
        usleep(500000);
        snap = snapshot_slot_get(&f->latest);
        assert_int_equal(snap->tick, in_progress);
        snapshot_unref(snap);
        assert_int_equal(__atomic_load_n(&f->fake->reads, __ATOMIC_SEQ_CST), in_progress);

        assert_int_equal(kill(getpid(), SIGTERM), 0);
        assert_int_equal(pthread_join(thread, NULL), 0);
        assert_int_equal(rn.result, 0);
        /* Once the loop stopped, a hold is not waited for. */
        assert_int_equal(tick_control_hold(&tc, true, NULL, NULL), -ESHUTDOWN);
        close(rn.sfd);
        tick_control_destroy(&tc);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test_setup_teardown(loop_stamp__steady_clock__wall_time, setup, teardown),
                cmocka_unit_test_setup_teardown(loop_stamp__timer_jitter__stamped_on_grid, setup, teardown),
                cmocka_unit_test_setup_teardown(loop_stamp__back_an_hour__monotonic_until_caught_up_logged_once, setup,
                                                teardown),
                cmocka_unit_test_setup_teardown(loop_stamp__forward_a_day__followed_logged_once, setup, teardown),
                cmocka_unit_test_setup_teardown(loop_stamp__back_then_forward__never_repeats, setup, teardown),
                cmocka_unit_test_setup_teardown(loop_stamp__sped_up__wall_clock_ignored, setup, teardown),
                cmocka_unit_test_setup_teardown(loop_stamp__sped_up_with_timer_jitter__on_the_interval_grid, setup,
                                                teardown),
                cmocka_unit_test_setup_teardown(loop_tick__failing_collector__backed_off_and_restored, setup, teardown),
                cmocka_unit_test_setup_teardown(loop_tick__error_changes__logged_again, setup, teardown),
                cmocka_unit_test_setup_teardown(loop_run__collector_slower_than_interval__skips_and_counts, setup,
                                                teardown),
                cmocka_unit_test_setup_teardown(loop_run__reload_changes_interval_while_tick_due__sigterm_read_at_once,
                                                setup, teardown),
                cmocka_unit_test_setup_teardown(loop_tick__runtimes_come_and_go__series_sets_follow, setup, teardown),
                cmocka_unit_test_setup_teardown(loop_tick__devices_come_and_go__new_set_and_one_warning_each, setup,
                                                teardown),
                cmocka_unit_test_setup_teardown(loop_tick_driven__daemons_started_apart__stamp_alike, setup, teardown),
                cmocka_unit_test_setup_teardown(loop_run__hold__answered_after_the_tick_in_progress, setup, teardown),
                cmocka_unit_test_setup_teardown(loop_run__driven_ticks__one_interval_apart_answered_once_stored, setup,
                                                teardown),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
