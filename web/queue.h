/* Work kept off the server's polling threads. A request whose work is slow
 * (a range query, a bcrypt verification) is handed to a queue: its
 * connection is suspended, a worker thread runs the job, which fills the
 * request's reply, and resumes the connection; libmicrohttpd then calls the
 * request handler again, which sends the reply. The polling threads go on
 * serving scrapes and health checks meanwhile.
 *
 * Admission: at most max_running jobs hold a place at once; with
 * hold_until_answered, a job keeps its place after it ran until its answer
 * has been sent (queue_release), so that answers waiting for slow readers
 * count too. Up to max_waiting more jobs wait, in order, each for at most
 * max_wait_ms, after which it runs with QUEUE_TIMED_OUT; more than that is
 * refused at once. Thread safe. */
#pragma once

#include <microhttpd.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

struct queue;

enum queue_verdict {
        QUEUE_RUN,         /* do the work */
        QUEUE_TIMED_OUT,   /* waited max_wait_ms without a place: answer 503 */
        QUEUE_STOPPING,    /* the server is stopping: answer 503 */
        QUEUE_CLIENT_GONE, /* the client closed its connection while the job waited */
};

struct queue_job {
        /* Set by the submitter. run fills the request's reply; it is called
         * once, on a worker thread, and must not touch the connection after
         * it returns (the worker resumes it). */
        void (*run)(struct queue_job *job, enum queue_verdict verdict);
        struct MHD_Connection *conn;

        /* The queue's own. */
        struct queue *queue;
        struct queue_job *next;
        int fd;
        int64_t deadline_ms;
        bool holds_place; /* ran with a place that queue_release() gives back */
};

/* name: for the threads ("neurond-query"). Returns 0, -ENOMEM or -EAGAIN. */
int queue_new(const char *name, unsigned threads, unsigned max_running, unsigned max_waiting, int64_t max_wait_ms,
              bool hold_until_answered, struct queue **ret);

/* Suspends job->conn and queues the job; false (nothing suspended) when the
 * queue is full or stopping. Called from the request handler, which then
 * returns MHD_YES. */
bool queue_submit(struct queue *q, struct queue_job *job);

/* For a job that held its place until answered: the answer is done (sent,
 * or its connection closed). */
void queue_release(struct queue_job *job);

/* For the work a running job does: whether to give up, because the server
 * is stopping or the client has closed its connection. Cheap enough to ask
 * between two series of a query. */
bool queue_job_cancelled(const struct queue_job *job);

/* Answers every waiting job QUEUE_STOPPING, tells running ones to give up,
 * and waits for the workers: afterwards no connection is suspended. Call
 * before MHD_stop_daemon(), which must not find a suspended connection. */
void queue_stop(struct queue *q);
void queue_free(struct queue *q); /* NULL-safe; after the server has stopped */
