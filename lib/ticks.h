/* Ticks driven from outside the loop's timer, for tests: the admin
 * endpoint /api/v1/admin/ticks holds the timer, and asks for N ticks, each
 * stamped one interval after the last, and is answered once the last is
 * stored and published. A test then counts ticks, not seconds, whatever
 * instrument (a sanitizer, valgrind, a loaded machine) slows the daemon.
 *
 * The web side asks from a query worker thread and waits; the loop's
 * thread runs the ticks between its other work, woken through fd, one per
 * pass so that signals are still read in between. Thread safe. */
#pragma once

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

struct tick_control {
        pthread_mutex_t lock;
        pthread_cond_t ran_cond; /* signalled after each driven tick, a hold seen, and at stop */
        int fd;                  /* eventfd the loop polls: written on every request */
        bool held;               /* the timer does not tick */
        bool stopped;            /* the loop has stopped: requests fail */
        uint64_t holds;          /* requests to hold since start */
        uint64_t holds_seen;     /* of those, the ones the loop has seen */
        uint64_t asked;          /* driven ticks asked for since start */
        uint64_t ran;            /* of those, ticks run */
        uint64_t tick;           /* the number and stamp of the last driven tick */
        int64_t stamp_ms;
};

/* What a request is answered with. */
struct tick_state {
        bool held;
        uint64_t tick;    /* the last driven tick (0: none yet) */
        int64_t stamp_ms; /* its stamp */
        uint64_t pending; /* driven ticks asked for and not run yet */
};

/* Returns 0 or -errno (the eventfd). */
int tick_control_init(struct tick_control *tc);
void tick_control_destroy(struct tick_control *tc);

/* The web side. */
void tick_control_get(struct tick_control *tc, struct tick_state *out);
/* Holds the timer (held) or lets it tick again. A hold waits until the
 * loop has seen it: no tick of the timer is published after it returns (a
 * tick the timer had begun is published first), so that a test comparing
 * two reads after it sees one tick. Gives up as tick_control_run() does,
 * with -ECANCELED or -ESHUTDOWN; the timer is held all the same. A release
 * returns at once with 0. */
int tick_control_hold(struct tick_control *tc, bool held, bool (*cancelled)(const void *cls), const void *cls);
/* Holds the timer, asks for n more ticks and waits until they ran. Gives
 * up when cancelled(cls) says so (asked every 100 ms; NULL: never), with
 * -ECANCELED; -ESHUTDOWN when the loop stopped first. The ticks asked for
 * run even when the asker gave up. */
int tick_control_run(struct tick_control *tc, uint64_t n, bool (*cancelled)(const void *cls), const void *cls,
                     struct tick_state *out);

/* The loop side. Clears fd's readiness and says whether the timer is held
 * and how many driven ticks are due; the holds asked for so far count as
 * seen: the loop starts no tick of the timer once it has read held. */
void tick_control_poll(struct tick_control *tc, bool *held, uint64_t *pending);
/* One driven tick ran, numbered tick and stamped stamp_ms. */
void tick_control_ran(struct tick_control *tc, uint64_t tick, int64_t stamp_ms);
/* The loop stops: waiters and later requests get -ESHUTDOWN. */
void tick_control_stop(struct tick_control *tc);
