#include "config.h"

#include <errno.h>
#include <sys/eventfd.h>
#include <time.h>
#include <unistd.h>

#include "lib/ticks.h"

int tick_control_init(struct tick_control *tc) {
        pthread_condattr_t attr;

        *tc = (struct tick_control){ .fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK) };
        if (tc->fd < 0)
                return -errno;
        pthread_mutex_init(&tc->lock, NULL);
        /* Waits are bounded on the monotonic clock: a step of the wall clock
         * neither cuts them short nor stretches them. */
        pthread_condattr_init(&attr);
        pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
        pthread_cond_init(&tc->ran_cond, &attr);
        pthread_condattr_destroy(&attr);
        return 0;
}

void tick_control_destroy(struct tick_control *tc) {
        if (tc->fd < 0)
                return;
        close(tc->fd);
        tc->fd = -1;
        pthread_cond_destroy(&tc->ran_cond);
        pthread_mutex_destroy(&tc->lock);
}

static void wake_loop(struct tick_control *tc) {
        uint64_t one = 1;
        /* Fails only when the counter is full, and then the loop wakes anyway. */
        (void) !write(tc->fd, &one, sizeof(one));
}

static void state_locked(const struct tick_control *tc, struct tick_state *out) {
        *out = (struct tick_state){
                .held = tc->held,
                .tick = tc->tick,
                .stamp_ms = tc->stamp_ms,
                .pending = tc->asked - tc->ran,
        };
}

void tick_control_get(struct tick_control *tc, struct tick_state *out) {
        pthread_mutex_lock(&tc->lock);
        state_locked(tc, out);
        pthread_mutex_unlock(&tc->lock);
}

/* Waits on ran_cond until done(tc) holds, the loop stops, or cancelled(cls)
 * says so (asked every 100 ms); called and returns with the lock held. */
static int wait_locked(struct tick_control *tc, bool (*done)(const struct tick_control *tc, uint64_t target),
                       uint64_t target, bool (*cancelled)(const void *cls), const void *cls) {
        while (!done(tc, target) && !tc->stopped) {
                if (cancelled && cancelled(cls))
                        return -ECANCELED;
                struct timespec until;
                clock_gettime(CLOCK_MONOTONIC, &until);
                until.tv_nsec += 100000000;
                if (until.tv_nsec >= 1000000000) {
                        until.tv_sec++;
                        until.tv_nsec -= 1000000000;
                }
                pthread_cond_timedwait(&tc->ran_cond, &tc->lock, &until);
        }
        return done(tc, target) ? 0 : -ESHUTDOWN;
}

static bool hold_seen(const struct tick_control *tc, uint64_t target) {
        return tc->holds_seen >= target;
}

static bool ticks_ran(const struct tick_control *tc, uint64_t target) {
        return tc->ran >= target;
}

int tick_control_hold(struct tick_control *tc, bool held, bool (*cancelled)(const void *cls), const void *cls) {
        int r = 0;

        pthread_mutex_lock(&tc->lock);
        tc->held = held;
        uint64_t target = held ? ++tc->holds : 0;
        wake_loop(tc);
        if (held)
                r = wait_locked(tc, hold_seen, target, cancelled, cls);
        pthread_mutex_unlock(&tc->lock);
        return r;
}

int tick_control_run(struct tick_control *tc, uint64_t n, bool (*cancelled)(const void *cls), const void *cls,
                     struct tick_state *out) {
        pthread_mutex_lock(&tc->lock);
        tc->held = true;
        tc->asked += n;
        wake_loop(tc);
        int r = wait_locked(tc, ticks_ran, tc->asked, cancelled, cls);
        state_locked(tc, out);
        pthread_mutex_unlock(&tc->lock);
        return r;
}

void tick_control_poll(struct tick_control *tc, bool *held, uint64_t *pending) {
        uint64_t count;

        /* Cleared before the state is read: a request made after this
         * wakes the loop again. */
        (void) !read(tc->fd, &count, sizeof(count));
        pthread_mutex_lock(&tc->lock);
        *held = tc->held;
        *pending = tc->asked - tc->ran;
        if (tc->holds_seen != tc->holds) {
                tc->holds_seen = tc->holds;
                pthread_cond_broadcast(&tc->ran_cond);
        }
        pthread_mutex_unlock(&tc->lock);
}

void tick_control_ran(struct tick_control *tc, uint64_t tick, int64_t stamp_ms) {
        pthread_mutex_lock(&tc->lock);
        tc->ran++;
        tc->tick = tick;
        tc->stamp_ms = stamp_ms;
        pthread_cond_broadcast(&tc->ran_cond);
        pthread_mutex_unlock(&tc->lock);
}

void tick_control_stop(struct tick_control *tc) {
        pthread_mutex_lock(&tc->lock);
        tc->stopped = true;
        pthread_cond_broadcast(&tc->ran_cond);
        pthread_mutex_unlock(&tc->lock);
}
