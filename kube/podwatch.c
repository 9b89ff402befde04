#include "config.h"

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "kube/podres.h"
#include "kube/podwatch.h"
#include "lib/clock.h"

struct podwatch {
        struct podwatch_options o;
        uint64_t generation; /* of the series set the cores come from */
        struct pod_core *cores;
        size_t n_cores;
        pthread_t thread;
        pthread_mutex_t lock;
        pthread_cond_t wake;
        atomic_bool stop;
};

/* Waits until CLOCK_MONOTONIC reaches until_ms or the watch is stopped.
 * Returns true when stopped. */
static bool wait_until(struct podwatch *w, int64_t until_ms) {
        struct timespec until = { .tv_sec = (time_t) (until_ms / 1000), .tv_nsec = (long) (until_ms % 1000) * 1000000 };

        pthread_mutex_lock(&w->lock);
        while (!atomic_load(&w->stop) && pthread_cond_timedwait(&w->wake, &w->lock, &until) != ETIMEDOUT)
                ;
        pthread_mutex_unlock(&w->lock);
        return atomic_load(&w->stop);
}

/* Takes the cores of the latest snapshot's series set when it is newer
 * than the one they come from. Out of memory, the cores stay as they were. */
static void update_cores(struct podwatch *w) {
        struct snapshot *snap = snapshot_slot_get(w->o.latest);
        struct pod_core *cores;
        size_t n;

        if (snap && snap->set && snap->set->generation > w->generation &&
            pod_cores_from_series(snap->set->series, snap->set->n, &cores, &n) >= 0) {
                free(w->cores);
                w->cores = cores;
                w->n_cores = n;
                w->generation = snap->set->generation;
        }
        snapshot_unref(snap);
}

/* One refresh: a new map with the kubelet's answer, or with the error and
 * the previous answer's grants while they are recent. NULL when out of
 * memory. */
static struct pod_map *refresh(struct podwatch *w, const struct pod_map *previous) {
        int64_t timeout_ms = w->o.interval_ms < PODWATCH_TIMEOUT_MAX_MS ? w->o.interval_ms : PODWATCH_TIMEOUT_MAX_MS;
        struct pod_map *m = pod_map_new();

        if (!m)
                return NULL;
        m->asked_ms = clock_wall_ms();
        int r = podres_list(w->o.socket_path, timeout_ms, &w->stop, m, m->error_text, sizeof(m->error_text));
        if (r >= 0) {
                m->answered_ms = m->asked_ms;
        } else {
                m->error = r;
                if (previous && previous->answered_ms > 0 &&
                    m->asked_ms - previous->answered_ms < PODWATCH_KEEP_INTERVALS * w->o.interval_ms &&
                    pod_map_copy_grants(m, previous) < 0) {
                        pod_map_unref(m);
                        return NULL;
                }
        }
        update_cores(w);
        if (pod_map_index(m, w->cores, w->n_cores) < 0) {
                pod_map_unref(m);
                return NULL;
        }
        return m;
}

static void *run(void *arg) {
        struct podwatch *w = arg;
        struct pod_map *previous = NULL;
        int64_t next_ms = clock_monotonic_ms();

        while (!atomic_load(&w->stop)) {
                struct pod_map *m = refresh(w, previous);
                /* Out of memory: the published map stays as it was. */
                if (m && !atomic_load(&w->stop)) {
                        pod_slot_publish(w->o.slot, pod_map_ref(m));
                        if (w->o.refreshed)
                                w->o.refreshed(previous, m, w->o.userdata);
                        pod_map_unref(previous);
                        previous = m;
                } else {
                        pod_map_unref(m);
                }
                /* On a grid of intervals; a refresh that ran late skips the
                 * starts it missed. */
                int64_t now_ms = clock_monotonic_ms();
                next_ms += w->o.interval_ms;
                if (next_ms <= now_ms)
                        next_ms = now_ms + w->o.interval_ms - (now_ms - next_ms) % w->o.interval_ms;
                if (wait_until(w, next_ms))
                        break;
        }
        pod_map_unref(previous);
        podres_shutdown();
        return NULL;
}

int podwatch_start(const struct podwatch_options *options, struct podwatch **ret) {
        pthread_condattr_t attr;
        sigset_t all, old;

        struct podwatch *w = calloc(1, sizeof(*w));
        if (!w)
                return -ENOMEM;
        w->o = *options;
        w->o.set = NULL; /* read here only */
        w->generation = options->set->generation;
        if (pod_cores_from_series(options->set->series, options->set->n, &w->cores, &w->n_cores) < 0) {
                free(w);
                return -ENOMEM;
        }
        atomic_init(&w->stop, false);
        pthread_mutex_init(&w->lock, NULL);
        pthread_condattr_init(&attr);
        pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
        pthread_cond_init(&w->wake, &attr);
        pthread_condattr_destroy(&attr);
        /* The thread, and gRPC's threads it starts, take no signal: they
         * stay with the daemon's signalfd. Threads inherit the mask. */
        sigfillset(&all);
        pthread_sigmask(SIG_SETMASK, &all, &old);
        int r = -pthread_create(&w->thread, NULL, run, w);
        pthread_sigmask(SIG_SETMASK, &old, NULL);
        if (r < 0) {
                pthread_cond_destroy(&w->wake);
                pthread_mutex_destroy(&w->lock);
                free(w->cores);
                free(w);
                return r;
        }
        *ret = w;
        return 0;
}

void podwatch_stop(struct podwatch *w) {
        if (!w)
                return;
        pthread_mutex_lock(&w->lock);
        atomic_store(&w->stop, true);
        pthread_cond_signal(&w->wake);
        pthread_mutex_unlock(&w->lock);
        pthread_join(w->thread, NULL);
        pthread_cond_destroy(&w->wake);
        pthread_mutex_destroy(&w->lock);
        free(w->cores);
        free(w);
}
