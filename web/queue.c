#include "config.h"

#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "lib/clock.h"
#include "web/queue.h"

#define QUEUE_THREADS_MAX 4

struct queue {
        pthread_mutex_t lock;
        pthread_cond_t wake; /* a job arrived, a place came free, or stop */
        struct queue_job *first, *last;
        unsigned n_waiting; /* queued, or being queued by queue_submit */
        unsigned n_places;  /* taken */
        unsigned max_running, max_waiting;
        int64_t max_wait_ms;
        bool hold_until_answered;
        atomic_bool stopping;

        pthread_t threads[QUEUE_THREADS_MAX];
        unsigned n_threads;
};

/* The peer has shut its side down (or the socket failed); a request that
 * is merely followed by another is not gone. */
static bool client_gone(int fd) {
        struct pollfd p = { .fd = fd, .events = POLLRDHUP };
        return fd >= 0 && poll(&p, 1, 0) > 0 && (p.revents & (POLLRDHUP | POLLHUP | POLLERR | POLLNVAL));
}

bool queue_job_cancelled(const struct queue_job *job) {
        return atomic_load_explicit(&job->queue->stopping, memory_order_relaxed) || client_gone(job->fd);
}

/* Runs job outside the lock and hands its connection back to the server.
 * Called locked; returns locked. */
static void run_job(struct queue *q, struct queue_job *job, enum queue_verdict verdict) {
        bool place = verdict == QUEUE_RUN;
        struct MHD_Connection *conn = job->conn;

        if (place)
                q->n_places++;
        pthread_mutex_unlock(&q->lock);
        job->holds_place = place && q->hold_until_answered;
        job->run(job, verdict);
        bool keep = job->holds_place;
        /* From here on the connection, and the job with it, may go. */
        MHD_resume_connection(conn);
        pthread_mutex_lock(&q->lock);
        if (place && !keep) {
                q->n_places--;
                pthread_cond_broadcast(&q->wake);
        }
}

static struct queue_job *take_first(struct queue *q) {
        struct queue_job *job = q->first;
        q->first = job->next;
        if (!q->first)
                q->last = NULL;
        q->n_waiting--;
        return job;
}

static void *work(void *arg) {
        struct queue *q = arg;

        pthread_mutex_lock(&q->lock);
        for (;;) {
                bool stopping = atomic_load(&q->stopping);
                struct queue_job *job = q->first;
                if (job && stopping) {
                        run_job(q, take_first(q), QUEUE_STOPPING);
                } else if (job && client_gone(job->fd)) {
                        run_job(q, take_first(q), QUEUE_CLIENT_GONE);
                } else if (job && clock_monotonic_ms() >= job->deadline_ms) {
                        run_job(q, take_first(q), QUEUE_TIMED_OUT);
                } else if (job && q->n_places < q->max_running) {
                        run_job(q, take_first(q), QUEUE_RUN);
                } else if (stopping && q->n_waiting == 0) {
                        break;
                } else if (job) {
                        struct timespec until = { .tv_sec = job->deadline_ms / 1000,
                                                  .tv_nsec = (job->deadline_ms % 1000) * 1000000L };
                        pthread_cond_timedwait(&q->wake, &q->lock, &until);
                } else {
                        pthread_cond_wait(&q->wake, &q->lock);
                }
        }
        pthread_mutex_unlock(&q->lock);
        return NULL;
}

int queue_new(const char *name, unsigned threads, unsigned max_running, unsigned max_waiting, int64_t max_wait_ms,
              bool hold_until_answered, struct queue **ret) {
        struct queue *q = calloc(1, sizeof(*q));
        pthread_condattr_t attr;
        int r = 0;

        if (!q)
                return -ENOMEM;
        pthread_mutex_init(&q->lock, NULL);
        pthread_condattr_init(&attr);
        pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
        pthread_cond_init(&q->wake, &attr);
        pthread_condattr_destroy(&attr);
        q->max_running = max_running;
        q->max_waiting = max_waiting;
        q->max_wait_ms = max_wait_ms;
        q->hold_until_answered = hold_until_answered;
        atomic_init(&q->stopping, false);
        for (; q->n_threads < threads && q->n_threads < QUEUE_THREADS_MAX; q->n_threads++) {
                if (pthread_create(&q->threads[q->n_threads], NULL, work, q) != 0) {
                        r = -EAGAIN;
                        break;
                }
                pthread_setname_np(q->threads[q->n_threads], name);
        }
        if (r < 0) {
                queue_stop(q);
                queue_free(q);
                return r;
        }
        *ret = q;
        return 0;
}

bool queue_submit(struct queue *q, struct queue_job *job) {
        const union MHD_ConnectionInfo *info = MHD_get_connection_info(job->conn, MHD_CONNECTION_INFO_CONNECTION_FD);

        pthread_mutex_lock(&q->lock);
        bool room = !atomic_load(&q->stopping) && q->n_waiting < q->max_waiting;
        if (room)
                q->n_waiting++;
        pthread_mutex_unlock(&q->lock);
        if (!room)
                return false;
        job->queue = q;
        job->next = NULL;
        job->fd = info ? info->connect_fd : -1;
        job->deadline_ms = clock_monotonic_ms() + q->max_wait_ms;
        job->holds_place = false;
        /* Suspended before a worker can see it, since a worker resumes it;
         * and outside the lock, which libmicrohttpd's own locks must not
         * nest in (queue_release runs on its threads). */
        MHD_suspend_connection(job->conn);
        pthread_mutex_lock(&q->lock);
        if (q->last)
                q->last->next = job;
        else
                q->first = job;
        q->last = job;
        pthread_cond_signal(&q->wake);
        pthread_mutex_unlock(&q->lock);
        return true;
}

void queue_release(struct queue_job *job) {
        struct queue *q = job->queue;

        if (!job->holds_place)
                return;
        job->holds_place = false;
        pthread_mutex_lock(&q->lock);
        q->n_places--;
        pthread_cond_broadcast(&q->wake);
        pthread_mutex_unlock(&q->lock);
}

void queue_stop(struct queue *q) {
        if (!q || atomic_exchange(&q->stopping, true))
                return;
        pthread_mutex_lock(&q->lock);
        pthread_cond_broadcast(&q->wake);
        pthread_mutex_unlock(&q->lock);
        for (unsigned i = 0; i < q->n_threads; i++)
                pthread_join(q->threads[i], NULL);
}

void queue_free(struct queue *q) {
        if (!q)
                return;
        pthread_cond_destroy(&q->wake);
        pthread_mutex_destroy(&q->lock);
        free(q);
}
