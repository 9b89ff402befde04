#include "config.h"

#include <dirent.h>
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <time.h>

#include "lib/clock.h"
#include "web/conns.h"

#define REAP_PERIOD_MS 500

struct conns {
        pthread_mutex_t lock;
        struct conn *oldest, *newest; /* the waiting list */
        unsigned n_open;              /* connections not shed */
        unsigned n_waiting;
        unsigned max_connections;
        unsigned hard_limit; /* max_connections, or less when descriptors are short */
        int fds_at_start;
        int64_t head_timeout_ms;
        void (*free_request)(void *request);

        pthread_t reaper;
        pthread_cond_t wake;
        bool stopping;
};

/* Descriptors open now; a guess when /proc is not mounted. */
static int count_open_fds(void) {
        DIR *d = opendir("/proc/self/fd");
        int n = -1; /* the directory's own descriptor */

        if (!d)
                return 32;
        while (readdir(d))
                n++;
        closedir(d);
        return n - 2; /* "." and ".." */
}

/* max_connections, or what RLIMIT_NOFILE leaves for connections. */
static unsigned hard_limit_now(const struct conns *cs) {
        struct rlimit rl;

        if (getrlimit(RLIMIT_NOFILE, &rl) < 0 || rl.rlim_cur == RLIM_INFINITY)
                return cs->max_connections;
        long long room = (long long) rl.rlim_cur - cs->fds_at_start - CONNS_FD_RESERVE;
        if (room <= 0)
                return 0;
        return room < cs->max_connections ? (unsigned) room : cs->max_connections;
}

/* Room kept for connections that are answering, or about to: a sixteenth
 * of the limit, at least 4. */
static unsigned soft_limit(unsigned hard) {
        unsigned headroom = hard / 16 > 4 ? hard / 16 : 4;
        return hard > headroom ? hard - headroom : 0;
}

static void unlist(struct conns *cs, struct conn *c) {
        if (!c->waiting)
                return;
        if (c->prev)
                c->prev->next = c->next;
        else
                cs->oldest = c->next;
        if (c->next)
                c->next->prev = c->prev;
        else
                cs->newest = c->prev;
        c->prev = c->next = NULL;
        c->waiting = false;
        cs->n_waiting--;
}

static void list_waiting(struct conns *cs, struct conn *c) {
        c->waiting = true;
        c->waiting_since_ms = clock_monotonic_ms();
        c->prev = cs->newest;
        c->next = NULL;
        if (cs->newest)
                cs->newest->next = c;
        else
                cs->oldest = c;
        cs->newest = c;
        cs->n_waiting++;
}

static void shed(struct conns *cs, struct conn *c) {
        unlist(cs, c);
        c->shed = true;
        cs->n_open--;
        shutdown(c->fd, SHUT_RDWR);
}

/* Sheds the longest-waiting connections while over a limit or past the
 * head deadline (now_ms 0: the deadline is not checked). Called locked. */
static void enforce(struct conns *cs, int64_t now_ms) {
        unsigned soft = soft_limit(cs->hard_limit);

        while (cs->oldest && (cs->n_waiting > soft || cs->n_open > cs->hard_limit ||
                              (now_ms && now_ms - cs->oldest->waiting_since_ms >= cs->head_timeout_ms)))
                shed(cs, cs->oldest);
}

static void *reap(void *arg) {
        struct conns *cs = arg;

        pthread_mutex_lock(&cs->lock);
        while (!cs->stopping) {
                struct timespec until;
                clock_gettime(CLOCK_MONOTONIC, &until);
                until.tv_nsec += REAP_PERIOD_MS * 1000000L;
                until.tv_sec += until.tv_nsec / 1000000000L;
                until.tv_nsec %= 1000000000L;
                pthread_cond_timedwait(&cs->wake, &cs->lock, &until);
                cs->hard_limit = hard_limit_now(cs);
                enforce(cs, clock_monotonic_ms());
        }
        pthread_mutex_unlock(&cs->lock);
        return NULL;
}

int conns_new(unsigned max_connections, int64_t head_timeout_ms, void (*free_request)(void *request),
              struct conns **ret) {
        struct conns *cs = calloc(1, sizeof(*cs));
        pthread_condattr_t attr;

        if (!cs)
                return -ENOMEM;
        pthread_mutex_init(&cs->lock, NULL);
        pthread_condattr_init(&attr);
        pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
        pthread_cond_init(&cs->wake, &attr);
        pthread_condattr_destroy(&attr);
        cs->max_connections = max_connections;
        cs->head_timeout_ms = head_timeout_ms;
        cs->free_request = free_request;
        cs->fds_at_start = count_open_fds();
        cs->hard_limit = hard_limit_now(cs);
        if (pthread_create(&cs->reaper, NULL, reap, cs) != 0) {
                pthread_cond_destroy(&cs->wake);
                pthread_mutex_destroy(&cs->lock);
                free(cs);
                return -EAGAIN;
        }
        *ret = cs;
        return 0;
}

void conns_free(struct conns *cs) {
        if (!cs)
                return;
        pthread_mutex_lock(&cs->lock);
        cs->stopping = true;
        pthread_cond_signal(&cs->wake);
        pthread_mutex_unlock(&cs->lock);
        pthread_join(cs->reaper, NULL);
        pthread_cond_destroy(&cs->wake);
        pthread_mutex_destroy(&cs->lock);
        free(cs);
}

unsigned conns_limit(const struct conns *cs) {
        return cs->hard_limit;
}

void conns_notify(void *cls, struct MHD_Connection *mhd_conn, void **socket_context,
                  enum MHD_ConnectionNotificationCode code) {
        struct conns *cs = cls;
        struct conn *c = *socket_context;

        if (code == MHD_CONNECTION_NOTIFY_STARTED) {
                const union MHD_ConnectionInfo *info =
                        MHD_get_connection_info(mhd_conn, MHD_CONNECTION_INFO_CONNECTION_FD);
                c = calloc(1, sizeof(*c));
                if (!c || !info) {
                        /* Untracked, it is neither shed nor timed out;
                         * libmicrohttpd's own limits still hold it. */
                        free(c);
                        return;
                }
                c->fd = info->connect_fd;
                *socket_context = c;
                pthread_mutex_lock(&cs->lock);
                cs->n_open++;
                list_waiting(cs, c);
                enforce(cs, 0);
                pthread_mutex_unlock(&cs->lock);
                return;
        }
        if (!c)
                return;
        pthread_mutex_lock(&cs->lock);
        unlist(cs, c);
        if (!c->shed)
                cs->n_open--;
        pthread_mutex_unlock(&cs->lock);
        *socket_context = NULL;
        if (c->request)
                cs->free_request(c->request);
        free(c);
}

struct conn *conns_get(struct MHD_Connection *mhd_conn) {
        const union MHD_ConnectionInfo *info = MHD_get_connection_info(mhd_conn, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
        return info ? info->socket_context : NULL;
}

void conns_head_arrived(struct conns *cs, struct conn *c) {
        pthread_mutex_lock(&cs->lock);
        unlist(cs, c);
        pthread_mutex_unlock(&cs->lock);
}

void conns_answered(struct conns *cs, struct conn *c) {
        pthread_mutex_lock(&cs->lock);
        if (!c->shed && !c->waiting) {
                list_waiting(cs, c);
                enforce(cs, 0);
        }
        pthread_mutex_unlock(&cs->lock);
}

void conns_count(struct conns *cs, unsigned *ret_open, unsigned *ret_waiting) {
        pthread_mutex_lock(&cs->lock);
        *ret_open = cs->n_open;
        *ret_waiting = cs->n_waiting;
        pthread_mutex_unlock(&cs->lock);
}
