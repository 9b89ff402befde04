/* The server's connections, as libmicrohttpd reports them, and three
 * defences that need the whole set at once:
 *
 *   - Head deadline: a request head must have arrived within head_timeout
 *     of the connection opening, or of the answer before it on a kept-alive
 *     connection. libmicrohttpd's own timeout restarts with every byte, so a
 *     client trickling a head (slowloris) would never meet it.
 *   - Room for new clients: connections waiting for a head beyond the soft
 *     limit (the hard limit less a headroom), and any connection beyond the
 *     hard limit, shed the one that has waited longest. A new client, such
 *     as a scrape, always finds a place and sends its head at once, while
 *     idle and trickling connections make way.
 *   - Descriptors for the rest of the daemon: the hard limit is at most
 *     RLIMIT_NOFILE less the descriptors open at start (SQLite, signals,
 *     the listener) less CONNS_FD_RESERVE for what the collectors open during
 *     a tick. It follows RLIMIT_NOFILE when that changes at run time.
 *
 * Shedding is shutdown(2) on the connection's socket: libmicrohttpd then
 * reads the end of the stream and closes it. A connection is listed from
 * MHD_CONNECTION_NOTIFY_STARTED to MHD_CONNECTION_NOTIFY_CLOSED, which
 * libmicrohttpd sends before it closes the socket, so a listed socket is
 * always still this connection's. Thread safe. */
#pragma once

#include <microhttpd.h>
#include <stdbool.h>
#include <stdint.h>

#define CONNS_FD_RESERVE 128

struct conns;

/* What is kept per connection; the request part belongs to web/http.c. */
struct conn {
        int fd;
        struct conn *prev, *next; /* the waiting list, oldest first, while waiting */
        bool waiting;             /* for a request head */
        bool shed;
        int64_t waiting_since_ms; /* monotonic */
        void *request;            /* web/http.c's per-request state, or NULL */
};

/* max_connections: the hard limit wanted; head_timeout_ms > 0;
 * free_request frees a connection's request part when it closes. Starts a
 * thread that enforces the head deadline and RLIMIT_NOFILE twice a second.
 * Returns 0, -ENOMEM or -EAGAIN. */
int conns_new(unsigned max_connections, int64_t head_timeout_ms, void (*free_request)(void *request),
              struct conns **ret);
void conns_free(struct conns *cs); /* NULL-safe; after libmicrohttpd has stopped */

/* The hard limit in force: at most max_connections, and what the
 * descriptor limit leaves. */
unsigned conns_limit(const struct conns *cs);

/* libmicrohttpd's MHD_OPTION_NOTIFY_CONNECTION callback (cls: the conns). */
void conns_notify(void *cls, struct MHD_Connection *mhd_conn, void **socket_context,
                  enum MHD_ConnectionNotificationCode code);

/* The connection's entry, from libmicrohttpd's socket context; NULL for
 * a connection it did not report. */
struct conn *conns_get(struct MHD_Connection *mhd_conn);

/* A request head has arrived whole on c: it no longer waits. */
void conns_head_arrived(struct conns *cs, struct conn *c);
/* c's answer is done; kept alive, it waits for the next head from now. */
void conns_answered(struct conns *cs, struct conn *c);

/* Connections open and waiting for a head, for tests and logs. */
void conns_count(struct conns *cs, unsigned *ret_open, unsigned *ret_waiting);
