#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "collectors/nmon.h"
#include "collectors/sysfs.h"
#include "lib/log.h"

#define RESTART_MIN_MS 1000
#define RESTART_MAX_MS 60000
/* What the reader parses in a second: a child flooding the pipe with junk
 * lines (millions a second) or with huge documents must not take more than
 * half a core. neuron-monitor writes one document a period (a second at
 * least), of up to about half a megabyte on a large host, which takes tens
 * of milliseconds to parse (a few times that under a sanitizer); the rest
 * are skipped, and counted. */
#define LINES_PER_SECOND 64
#define PARSE_NS_PER_SECOND (500 * 1000000LL)
#define CHUNK 65536
/* A monitor-fifo= that is not a FIFO ends at each read: looked at again
 * after this. */
#define EOF_PAUSE_MS 100

enum source_kind {
        FROM_SYSFS,
        CORE_UTIL,
        CORE_MEM, /* which: the kind */
        CORE_FLOPS,
        RT_STATUS, /* which: the status */
        RT_ERRORS, /* which: the error type */
        RT_INFO,
        RT_LATENCY, /* which: the percentile */
        RT_DEVICE_LATENCY,
        RT_MEMORY, /* which: 0 host, 1 neuron_device */
        RT_HOST_MEMORY,
        RT_VCPU, /* which: 0 user, 1 system */
};

struct source {
        enum source_kind kind;
        size_t index; /* FROM_SYSFS: the sysfs series; RT_INFO: the process in report; else the runtime in tags */
        size_t core;  /* CORE_*: the core's position in the runtime's cores */
        unsigned which;
};

/* Counters of a tag since it first appeared: parallel to tags.runtimes,
 * flops parallel to its cores. */
struct totals {
        double status[EXEC_STATUS__COUNT];
        double errors[EXEC_ERROR__COUNT];
        double *flops;
};

/* A document as the series read it. Never changed once made: the reader
 * carries its counters into the next one while the tick reads it. */
struct doc {
        int refs;                  /* under the lock */
        struct nmon_report report; /* a runtime per process */
        struct nmon_report tags;   /* the same, a runtime per tag: the series' */
        struct totals *totals;
};

/* The monitor's output is read by a thread of its own as it arrives,
 * whatever the tick's interval: a document of hundreds of KB that waited
 * for ticks took longer than the silence rule allows. The tick takes the
 * latest document. */
struct nmon {
        struct collector base;
        struct collector *sysfs;
        struct sample_batch scratch; /* sysfs's values, before picking */
        struct source *sources;      /* parallel to base.inv.series */
        char *command;               /* monitor=, or NULL */
        char *fifo;                  /* monitor-fifo=, or NULL */

        /* The reader's own. */
        pthread_t thread;
        bool running;
        int stop[2]; /* written to stop the reader */
        int fd;
        pid_t child; /* and its process group */
        int64_t next_start_ns, backoff_ms, last_byte_ns;
        char *line; /* the partial line read so far */
        size_t len;
        bool discarding;                    /* inside a line over NMON_LINE_MAX */
        int64_t window_ns, window_parse_ns; /* this second's parsing */
        unsigned window_lines;
        uint64_t chunk_lines, chunk_skipped; /* of the chunk being read */
        struct doc *last;                    /* the latest document, for its counters */

        /* Shared, under the lock. */
        pthread_mutex_t lock;
        struct doc *pending;                                 /* the latest document, until the tick takes it */
        uint64_t skipped;                                    /* lines, since the tick last looked */
        uint64_t lines;                                      /* since open: nmon_lines_read() */
        char said[sizeof(((struct collector *) 0)->reason)]; /* the reader's first problem since */

        /* The tick's own. */
        struct doc *cur;
        int64_t report_ms; /* when the tick took cur */
        bool flooded;      /* lines are being skipped */
        int64_t skip_ns;   /* when a tick last saw lines skipped */
        bool resync;       /* the last refresh failed: build the series anew */
        char problem[sizeof(((struct collector *) 0)->reason)];
};

bool nmon_options_have_monitor(const char *options) {
        return options && (strstr(options, ",monitor=") || strstr(options, ",monitor-fifo="));
}

static int64_t clock_ns(clockid_t clock) {
        struct timespec ts;
        clock_gettime(clock, &ts);
        return (int64_t) ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static int64_t monotonic_ns(void) {
        return clock_ns(CLOCK_MONOTONIC);
}

/* Notes what went wrong, in out; the first problem since the last
 * read() stays (a monitor's end before the documents it left in the
 * pipe). */
__attribute__((format(printf, 3, 4))) static void note(char *out, size_t size, const char *fmt, ...) {
        va_list ap;
        if (out[0])
                return;
        va_start(ap, fmt);
        vsnprintf(out, size, fmt, ap);
        va_end(ap);
}

/* The reader's problems, for the next tick to say. */
#define say(m, ...)                                                                                                    \
        do {                                                                                                           \
                pthread_mutex_lock(&(m)->lock);                                                                        \
                note((m)->said, sizeof((m)->said), __VA_ARGS__);                                                       \
                pthread_mutex_unlock(&(m)->lock);                                                                      \
        } while (0)

/* ---- documents ------------------------------------------------------- */

static void free_totals(struct totals *t, size_t n) {
        for (size_t i = 0; t && i < n; i++)
                free(t[i].flops);
        free(t);
}

/* Drops a reference (under the lock, once the document is published);
 * frees the last. */
static void doc_unref(struct doc *d) {
        if (!d || --d->refs > 0)
                return;
        free_totals(d->totals, d->tags.n_runtimes);
        nmon_report_free(&d->report);
        nmon_report_free(&d->tags);
        free(d);
}

/* Makes d the latest document, for the tick and for the reader's next. */
static void publish(struct nmon *m, struct doc *d) {
        pthread_mutex_lock(&m->lock);
        doc_unref(m->pending);
        d->refs++;
        m->pending = d;
        doc_unref(m->last);
        m->last = d;
        pthread_mutex_unlock(&m->lock);
}

/* Makes a document of a report: a tag's counters carry on when it was in
 * the last one (whichever processes it has now), start at 0 for a new tag,
 * and add this period. Takes rep. */
static int make_doc(const struct doc *last, struct nmon_report *rep, struct doc **ret) {
        struct doc *d = calloc(1, sizeof(*d));
        int r = d ? nmon_merge_tags(rep, &d->tags) : -ENOMEM;
        if (r < 0) {
                free(d);
                return r;
        }
        d->refs = 1;
        d->report = *rep;
        *rep = (struct nmon_report){ 0 };
        d->totals = calloc(d->tags.n_runtimes ? d->tags.n_runtimes : 1, sizeof(*d->totals));
        for (size_t i = 0; d->totals && i < d->tags.n_runtimes; i++) {
                const struct nmon_runtime *rt = &d->tags.runtimes[i];
                struct totals *t = &d->totals[i];
                t->flops = calloc(rt->n_cores ? rt->n_cores : 1, sizeof(double));
                if (!t->flops) {
                        doc_unref(d);
                        return -ENOMEM;
                }
                for (size_t k = 0; last && k < last->tags.n_runtimes; k++) {
                        const struct nmon_runtime *old = &last->tags.runtimes[k];
                        if (strcmp(old->tag, rt->tag) != 0)
                                continue;
                        memcpy(t->status, last->totals[k].status, sizeof(t->status));
                        memcpy(t->errors, last->totals[k].errors, sizeof(t->errors));
                        /* Both core lists are ascending. */
                        for (size_t c = 0, o = 0; c < rt->n_cores && o < old->n_cores;) {
                                if (old->cores[o].index < rt->cores[c].index)
                                        o++;
                                else if (old->cores[o].index > rt->cores[c].index)
                                        c++;
                                else
                                        t->flops[c++] = last->totals[k].flops[o++];
                        }
                }
                for (int s = 0; s < EXEC_STATUS__COUNT && rt->has_exec; s++)
                        t->status[s] += rt->status[s];
                for (int e = 0; e < EXEC_ERROR__COUNT && rt->has_exec; e++)
                        t->errors[e] += rt->errors[e];
                for (size_t c = 0; c < rt->n_cores; c++)
                        t->flops[c] += rt->cores[c].has_flops ? rt->cores[c].flops : 0;
        }
        if (!d->totals) {
                doc_unref(d);
                return -ENOMEM;
        }
        *ret = d;
        return 0;
}

/* The monitor is gone: its runtimes' series go with it, and their counters
 * start from 0 should they come back. */
static void publish_none(struct nmon *m) {
        struct nmon_report none = { 0 };
        struct doc *d;
        if (make_doc(NULL, &none, &d) < 0) {
                say(m, "neuron-monitor: out of memory");
                return;
        }
        publish(m, d);
        pthread_mutex_lock(&m->lock);
        doc_unref(d); /* the reader's: nothing to carry */
        m->last = NULL;
        pthread_mutex_unlock(&m->lock);
}

/* Parses a complete line within this second's budget and publishes its
 * document. */
static void take_line(struct nmon *m, const char *text, size_t len) {
        struct nmon_report rep;
        struct doc *d;
        char err[128];
        int64_t now = monotonic_ns();
        if (len == 0)
                return;
        if (now - m->window_ns >= 1000000000) {
                m->window_ns = now;
                m->window_lines = 0;
                m->window_parse_ns = 0;
        }
        if (m->window_lines >= LINES_PER_SECOND || m->window_parse_ns >= PARSE_NS_PER_SECOND) {
                m->chunk_skipped++;
                return;
        }
        m->window_lines++;
        /* The thread's own time: on a busy host the wall clock would count
         * other programs' too. */
        int64_t start = clock_ns(CLOCK_THREAD_CPUTIME_ID);
        int r = nmon_parse(text, len, &rep, err, sizeof(err));
        if (r == 0) {
                r = make_doc(m->last, &rep, &d);
                nmon_report_free(&rep);
        }
        m->window_parse_ns += clock_ns(CLOCK_THREAD_CPUTIME_ID) - start;
        if (r == -ENOMEM) {
                say(m, "neuron-monitor: out of memory: a line skipped");
                return;
        }
        if (r < 0) {
                say(m, "neuron-monitor: a line skipped: %s", err);
                return;
        }
        for (size_t i = 0; i < d->tags.n_runtimes; i++)
                if (d->tags.runtimes[i].error[0])
                        say(m, "runtime %s: %s", d->tags.runtimes[i].tag, d->tags.runtimes[i].error);
        publish(m, d);
        m->backoff_ms = RESTART_MIN_MS;
}

/* Splits what was read into lines and takes each. */
static void take_bytes(struct nmon *m, const char *chunk, size_t n) {
        m->chunk_lines = m->chunk_skipped = 0;
        for (const char *p = chunk, *end = chunk + n; p < end;) {
                const char *nl = memchr(p, '\n', (size_t) (end - p));
                size_t part = (size_t) ((nl ? nl : end) - p);
                if (!m->discarding && m->len + part > NMON_LINE_MAX) {
                        say(m, "neuron-monitor: a line over %u bytes skipped", NMON_LINE_MAX);
                        m->discarding = true;
                }
                if (!m->discarding) {
                        memcpy(m->line + m->len, p, part);
                        m->len += part;
                }
                p += part;
                if (!nl)
                        break;
                p++;
                m->chunk_lines++;
                if (!m->discarding)
                        take_line(m, m->line, m->len);
                m->len = 0;
                m->discarding = false;
        }
        pthread_mutex_lock(&m->lock);
        m->lines += m->chunk_lines;
        m->skipped += m->chunk_skipped;
        pthread_mutex_unlock(&m->lock);
}

/* ---- the child and the pipe ------------------------------------------ */

/* Waits ms, or less when asked to stop: then returns false. */
static bool pause_ms(struct nmon *m, int64_t ms) {
        struct pollfd p = { .fd = m->stop[0], .events = POLLIN };
        int r = poll(&p, 1, ms < 0 ? 0 : ms > 60000 ? 60000 : (int) ms);
        return !(r > 0);
}

static int start_child(struct nmon *m) {
        int p[2];
        if (pipe2(p, O_CLOEXEC | O_NONBLOCK) < 0)
                return -errno;
        pid_t pid = fork();
        if (pid < 0) {
                int r = -errno;
                close(p[0]);
                close(p[1]);
                return r;
        }
        if (pid == 0) {
                /* Only async-signal-safe calls until exec. Its own process
                 * group, so that stopping it stops what the shell started. */
                sigset_t none;
                sigemptyset(&none);
                sigprocmask(SIG_SETMASK, &none, NULL);
                signal(SIGPIPE, SIG_DFL);
                setpgid(0, 0);
                int in = open("/dev/null", O_RDONLY);
                if (in < 0 || dup2(in, STDIN_FILENO) < 0 || dup2(p[1], STDOUT_FILENO) < 0)
                        _exit(127);
                int flags = fcntl(STDOUT_FILENO, F_GETFL);
                fcntl(STDOUT_FILENO, F_SETFL, flags & ~O_NONBLOCK);
                execl("/bin/sh", "sh", "-c", m->command, (char *) NULL);
                _exit(127);
        }
        close(p[1]);
        m->fd = p[0];
        m->child = pid;
        m->len = 0;
        m->discarding = false;
        return 0;
}

/* Whether the child has exited, leaving it to be reaped: until then its
 * pid is its group's, and no other process can take it. */
static bool child_exited(const struct nmon *m) {
        siginfo_t si = { 0 };
        return waitid(P_PID, (id_t) m->child, &si, WEXITED | WNOHANG | WNOWAIT) == 0 && si.si_pid == m->child;
}

/* Ends the child: its output ended (it is given a second to exit by
 * itself, for its status) or it fell silent. Kills what it started (its
 * process group) and says how it ended; its runtimes go. */
static void end_child(struct nmon *m, bool wait) {
        int status = 0;
        for (int i = 0; wait && i < 100 && !child_exited(m); i++)
                if (!pause_ms(m, 10))
                        break;
        kill(-m->child, SIGKILL);
        kill(m->child, SIGKILL); /* should it not have made its group yet */
        (void) waitpid(m->child, &status, 0);
        if (WIFEXITED(status))
                say(m, "neuron-monitor exited with status %d", WEXITSTATUS(status));
        else
                say(m, "neuron-monitor was killed by signal %d", WIFSIGNALED(status) ? WTERMSIG(status) : 0);
        m->child = 0;
        close(m->fd);
        m->fd = -1;
        publish_none(m);
}

/* Starts the child when its back-off is over: counted from its last
 * start, doubling while it keeps failing. Returns false when asked to
 * stop. */
static bool start_when_due(struct nmon *m) {
        if (!pause_ms(m, (m->next_start_ns - monotonic_ns()) / 1000000))
                return false;
        int64_t now = monotonic_ns();
        int r = start_child(m);
        m->next_start_ns = now + m->backoff_ms * 1000000;
        m->backoff_ms = m->backoff_ms * 2 < RESTART_MAX_MS ? m->backoff_ms * 2 : RESTART_MAX_MS;
        m->last_byte_ns = now;
        if (r < 0)
                say(m, "neuron-monitor: cannot start it: %s", strerror(-r));
        return true;
}

/* The reader: keeps the child going and takes its lines as they come. A
 * child that ends, or writes nothing for NMON_STALE_MS, is stopped and
 * started again; a FIFO is read whatever writes to it. */
static void *reader_main(void *arg) {
        struct nmon *m = arg;
        char *chunk = malloc(CHUNK);
        if (!chunk)
                say(m, "neuron-monitor: out of memory: not read");
        for (bool go = chunk != NULL; go;) {
                if (m->fd < 0) {
                        go = start_when_due(m);
                        continue;
                }
                struct pollfd p[2] = { { .fd = m->fd, .events = POLLIN }, { .fd = m->stop[0], .events = POLLIN } };
                int64_t left = m->last_byte_ns + (int64_t) NMON_STALE_MS * 1000000 - monotonic_ns();
                int r = poll(p, 2, m->command ? (int) (left > 0 ? left / 1000000 + 1 : 0) : -1);
                if (r < 0 && errno != EINTR) {
                        say(m, "neuron-monitor: waiting for its output: %s", strerror(errno));
                        go = pause_ms(m, EOF_PAUSE_MS);
                        continue;
                }
                if (p[1].revents) {
                        go = false;
                        continue;
                }
                if (r == 0) {
                        say(m, "neuron-monitor: no output for %d s; restarting it", NMON_STALE_MS / 1000);
                        end_child(m, false);
                        continue;
                }
                ssize_t n = r > 0 ? read(m->fd, chunk, CHUNK) : -1;
                if (n < 0 && (r < 0 || errno == EINTR || errno == EAGAIN))
                        continue;
                if (n > 0) {
                        m->last_byte_ns = monotonic_ns();
                        take_bytes(m, chunk, (size_t) n);
                        continue;
                }
                if (n < 0)
                        say(m, "neuron-monitor: reading its output: %s", strerror(errno));
                if (m->command) {
                        end_child(m, n == 0);
                        continue;
                }
                /* A FIFO whose writer left (or another file at its end):
                 * a line it left unfinished is no document. */
                m->len = 0;
                m->discarding = false;
                go = pause_ms(m, EOF_PAUSE_MS);
        }
        if (m->child > 0)
                end_child(m, false);
        free(chunk);
        return NULL;
}

/* What the reader did since the last tick: the latest document, its
 * problems and skipped lines. */
static void take_news(struct nmon *m, int64_t now_ms) {
        uint64_t skipped;
        pthread_mutex_lock(&m->lock);
        if (m->pending) {
                doc_unref(m->cur);
                m->cur = m->pending;
                m->pending = NULL;
                m->report_ms = now_ms;
        }
        skipped = m->skipped;
        m->skipped = 0;
        note(m->problem, sizeof(m->problem), "%s", m->said);
        m->said[0] = '\0';
        pthread_mutex_unlock(&m->lock);
        /* Said when it starts and ends (a second without a line
         * skipped: the reader's budget is a second's); meanwhile each
         * tick's reason counts. */
        int64_t now_ns = monotonic_ns();
        if (skipped > 0 && !m->flooded)
                log_collector(LOG_LEVEL_WARNING, "neuron-monitor",
                              "more lines than it parses (%d a second, or %lld ms of parsing a second): lines skipped",
                              LINES_PER_SECOND, PARSE_NS_PER_SECOND / 1000000);
        if (skipped == 0 && m->flooded && now_ns - m->skip_ns >= 1000000000)
                log_collector(LOG_LEVEL_INFO, "neuron-monitor", "every line read again");
        if (skipped > 0)
                m->skip_ns = now_ns;
        m->flooded = skipped > 0 || (m->flooded && now_ns - m->skip_ns < 1000000000);
        if (skipped > 0) {
                /* Said first: a flood is why the lines' own problems stop being read. */
                char first[sizeof(m->problem)];
                snprintf(first, sizeof(first), "%s", m->problem);
                m->problem[0] = '\0';
                note(m->problem, sizeof(m->problem),
                     "neuron-monitor: %llu lines skipped since the last tick, past %d lines or %lld ms of parsing a "
                     "second%s%s",
                     (unsigned long long) skipped, LINES_PER_SECOND, PARSE_NS_PER_SECOND / 1000000,
                     first[0] ? "; first: " : "", first);
        }
}

uint64_t nmon_lines_read(struct collector *c) {
        struct nmon *m = (struct nmon *) c;
        pthread_mutex_lock(&m->lock);
        uint64_t n = m->lines;
        pthread_mutex_unlock(&m->lock);
        return n;
}

/* ---- the series ------------------------------------------------------ */

/* The device of logical core `core` in the sysfs inventory, or -1. */
static int core_device(const struct inventory *inv, unsigned core) {
        for (unsigned d = 0; d < inv->n_devices; d++)
                if (core >= inv->devices[d].first_core &&
                    core < inv->devices[d].first_core + inv->devices[d].core_count)
                        return (int) inv->devices[d].index;
        return -1;
}

/* Whether the series are built for the latest report's runtimes: not
 * when it is too old. */
static bool report_live(const struct nmon *m, int64_t now_ms) {
        return m->cur && now_ms - m->report_ms <= NMON_STALE_MS;
}

/* Whether a runtime in the report holds logical core `core`. */
static bool core_held(const struct nmon *m, unsigned core) {
        for (size_t i = 0; i < m->cur->tags.n_runtimes; i++)
                for (size_t c = 0; c < m->cur->tags.runtimes[i].n_cores; c++)
                        if (m->cur->tags.runtimes[i].cores[c].index == core)
                                return true;
        return false;
}

static int add(struct nmon *m, struct source src, enum metric_id metric, const char *const *labels) {
        struct inventory *inv = &m->base.inv;
        size_t n = inv->n_series;
        if ((n & (n - 1)) == 0) {
                struct source *grown = realloc(m->sources, (n ? 2 * n : 1) * sizeof(*grown));
                if (!grown)
                        return -ENOMEM;
                m->sources = grown;
        }
        m->sources[n] = src;
        return inventory_add_series(inv, metric, labels);
}

/* Per held core: the tag's figures. */
static int add_cores(struct nmon *m, size_t i) {
        const struct nmon_runtime *rt = &m->cur->tags.runtimes[i];
        const struct inventory *sysfs = &m->sysfs->inv;
        char dev[16], core[16];
        int r = 0;
        for (size_t c = 0; c < rt->n_cores && r == 0; c++) {
                int d = core_device(sysfs, rt->cores[c].index);
                /* A core sysfs does not know of has no device to name. */
                if (d < 0)
                        continue;
                snprintf(dev, sizeof(dev), "%d", d);
                snprintf(core, sizeof(core), "%u", rt->cores[c].index);
                const char *const labels[] = { dev, core, rt->tag };
                r = add(m, (struct source){ CORE_UTIL, i, c, 0 }, METRIC_CORE_UTILIZATION, labels);
                for (unsigned k = 0; k < METRIC_CORE_MEMORY_KINDS && r == 0; k++)
                        r = add(m, (struct source){ CORE_MEM, i, c, k }, METRIC_CORE_MEMORY_CONSTANTS + k, labels);
                if (r == 0)
                        r = add(m, (struct source){ CORE_FLOPS, i, c, 0 }, METRIC_CORE_FLOPS, labels);
        }
        return r;
}

/* The tag's own series; its processes are in neuron_runtime_info. */
static int add_runtime(struct nmon *m, size_t i) {
        static const char *const locations[] = { "host", "neuron_device" };
        static const char *const usage[] = { "user", "system" };
        const char *tag = m->cur->tags.runtimes[i].tag;
        int r = 0;
        for (unsigned k = 0; k < EXEC_STATUS__COUNT && r == 0; k++)
                r = add(m, (struct source){ RT_STATUS, i, 0, k }, METRIC_CORE_EXECUTION_STATUS,
                        (const char *const[]){ NULL, NULL, tag, metric_exec_status_names[k] });
        for (unsigned k = 0; k < EXEC_ERROR__COUNT && r == 0; k++)
                r = add(m, (struct source){ RT_ERRORS, i, 0, k }, METRIC_CORE_EXECUTION_ERRORS,
                        (const char *const[]){ NULL, NULL, tag, metric_exec_error_names[k] });
        for (unsigned k = 0; k < METRIC_PERCENTILES && r == 0; k++)
                r = add(m, (struct source){ RT_LATENCY, i, 0, k }, METRIC_RUNTIME_LATENCY,
                        (const char *const[]){ tag, metric_percentile_names[k] });
        for (unsigned k = 0; k < METRIC_PERCENTILES && r == 0; k++)
                r = add(m, (struct source){ RT_DEVICE_LATENCY, i, 0, k }, METRIC_RUNTIME_DEVICE_LATENCY,
                        (const char *const[]){ tag, metric_percentile_names[k] });
        for (unsigned k = 0; k < 2 && r == 0; k++)
                r = add(m, (struct source){ RT_MEMORY, i, 0, k }, METRIC_RUNTIME_MEMORY_USED,
                        (const char *const[]){ tag, locations[k] });
        for (unsigned k = 0; k < HOST_MEM__COUNT && r == 0; k++)
                r = add(m, (struct source){ RT_HOST_MEMORY, i, 0, k }, METRIC_RUNTIME_HOST_MEMORY,
                        (const char *const[]){ tag, metric_host_memory_names[k] });
        for (unsigned k = 0; k < 2 && r == 0; k++)
                r = add(m, (struct source){ RT_VCPU, i, 0, k }, METRIC_RUNTIME_VCPU_USAGE,
                        (const char *const[]){ tag, usage[k] });
        return r;
}

/* A process: its neuron_runtime_info and its entry in the inventory, with
 * the cores sysfs knows of. */
static int add_process(struct nmon *m, size_t i) {
        const struct nmon_runtime *rt = &m->cur->report.runtimes[i];
        unsigned *cores = calloc(rt->n_cores ? rt->n_cores : 1, sizeof(*cores)), listed = 0;
        char pid[16];
        if (!cores)
                return -ENOMEM;
        for (size_t c = 0; c < rt->n_cores; c++)
                if (core_device(&m->sysfs->inv, rt->cores[c].index) >= 0)
                        cores[listed++] = rt->cores[c].index;
        snprintf(pid, sizeof(pid), "%u", rt->pid);
        int r = add(m, (struct source){ RT_INFO, i, 0, 0 }, METRIC_RUNTIME_INFO, (const char *const[]){ rt->tag, pid });
        if (r == 0)
                r = inventory_add_runtime(&m->base.inv, rt->pid, rt->tag, cores, listed);
        free(cores);
        return r;
}

/* sysfs's series but those the runtimes replace, then the runtimes': per
 * tag, and the processes. */
static int build_series(struct nmon *m, bool live) {
        struct inventory *inv = &m->base.inv;
        const struct inventory *sysfs = &m->sysfs->inv;
        int r = 0;

        inventory_clear_series(inv);
        inventory_clear_runtimes(inv);
        for (size_t i = 0; i < sysfs->n_series && r == 0; i++) {
                const struct series_desc *s = &sysfs->series[i];
                unsigned core = 0;
                bool per_core = s->metric == METRIC_CORE_UTILIZATION ||
                                (s->metric >= METRIC_CORE_MEMORY_CONSTANTS && s->metric <= METRIC_CORE_MEMORY_TENSORS);
                if (s->metric == METRIC_CORE_EXECUTION_STATUS || s->metric == METRIC_CORE_EXECUTION_ERRORS)
                        continue;
                if (per_core && live && sscanf(s->label_values[1], "%u", &core) == 1 && core_held(m, core))
                        continue;
                const char *labels[METRIC_LABELS_MAX];
                for (int k = 0; k < METRIC_LABELS_MAX; k++)
                        labels[k] = s->label_values[k];
                r = add(m, (struct source){ FROM_SYSFS, i, 0, 0 }, s->metric, labels);
        }
        for (size_t i = 0; live && i < m->cur->tags.n_runtimes && r == 0; i++) {
                r = add_cores(m, i);
                if (r == 0)
                        r = add_runtime(m, i);
        }
        for (size_t i = 0; live && i < m->cur->report.n_runtimes && r == 0; i++)
                r = add_process(m, i);
        return r;
}

/* Whether the runtimes (pid, tag, cores) differ from the inventory's. */
static bool runtimes_changed(const struct nmon *m, bool live) {
        const struct inventory *inv = &m->base.inv;
        size_t n_runtimes = live ? m->cur->report.n_runtimes : 0;
        if (inv->n_runtimes != n_runtimes)
                return true;
        for (size_t i = 0; i < n_runtimes; i++) {
                const struct nmon_runtime *rt = &m->cur->report.runtimes[i];
                const struct runtime_info *ri = &inv->runtimes[i];
                size_t known = 0;
                for (size_t c = 0; c < rt->n_cores; c++)
                        if (core_device(&m->sysfs->inv, rt->cores[c].index) >= 0) {
                                if (known >= ri->n_cores || ri->cores[known] != rt->cores[c].index)
                                        return true;
                                known++;
                        }
                if (ri->pid != rt->pid || strcmp(ri->tag, rt->tag) != 0 || known != ri->n_cores)
                        return true;
        }
        return false;
}

/* Takes sysfs's devices and what it says of the host, keeping this
 * inventory's series, runtimes, backend and identity (the daemon's, from
 * the instance metadata), and sizes the scratch batch to sysfs's series. */
static int copy_inventory(struct nmon *m) {
        struct inventory *inv = &m->base.inv, hw;
        size_t n = m->sysfs->inv.n_series;
        double *values = calloc(n ? n : 1, sizeof(double));
        uint8_t *valid = calloc(n ? n : 1, 1);
        int r = values && valid ? inventory_copy_hardware(&hw, &m->sysfs->inv) : -ENOMEM;
        if (r < 0) {
                free(values);
                free(valid);
                return r;
        }
        free(m->scratch.values);
        free(m->scratch.valid);
        m->scratch = (struct sample_batch){ .n = n, .values = values, .valid = valid };
        memcpy(hw.backend, inv->backend, sizeof(hw.backend));
        hw.identity = inv->identity;
        hw.series = inv->series;
        hw.n_series = inv->n_series;
        hw.runtimes = inv->runtimes;
        hw.n_runtimes = inv->n_runtimes;
        /* What remains of the old one is its devices. */
        inv->series = NULL;
        inv->n_series = 0;
        inv->runtimes = NULL;
        inv->n_runtimes = 0;
        inventory_free(inv);
        *inv = hw;
        return 0;
}

static int nmon_refresh(struct collector *c, int64_t now_ms) {
        struct nmon *m = (struct nmon *) c;
        int r;
        take_news(m, now_ms);
        /* The driver's devices may have come or gone: sysfs's series are new. */
        int devices = m->sysfs->ops->refresh(m->sysfs, now_ms);
        if (devices < 0)
                return devices;
        bool live = report_live(m, now_ms);
        if (!devices && !m->resync && !runtimes_changed(m, live))
                return 0;
        r = devices || m->resync ? copy_inventory(m) : 0;
        if (r == 0)
                r = build_series(m, live);
        /* A list half-built is never read (the loop reads no collector
         * whose refresh failed), and the next refresh builds it whole. */
        m->resync = r < 0;
        return r < 0 ? r : 1;
}

/* ---- values ---------------------------------------------------------- */

/* The value of a runtime's series; false when the report has none. */
static bool runtime_value(const struct nmon *m, const struct source *src, double *ret) {
        if (src->kind == RT_INFO) {
                *ret = 1; /* its index is the process's, not a tag's */
                return true;
        }
        const struct nmon_runtime *rt = &m->cur->tags.runtimes[src->index];
        const struct totals *t = &m->cur->totals[src->index];
        const struct nmon_core *core = src->kind <= CORE_FLOPS ? &rt->cores[src->core] : NULL;
        switch (src->kind) {
        case CORE_UTIL:
                *ret = core->util;
                return core->has_util;
        case CORE_MEM:
                *ret = core->mem[src->which];
                return core->has_mem;
        case CORE_FLOPS:
                *ret = t->flops[src->core];
                return true;
        case RT_STATUS:
                *ret = t->status[src->which];
                return true;
        case RT_ERRORS:
                *ret = t->errors[src->which];
                return true;
        case RT_LATENCY:
                *ret = rt->latency[src->which];
                return rt->has_latency;
        case RT_DEVICE_LATENCY:
                *ret = rt->device_latency[src->which];
                return rt->has_device_latency;
        case RT_MEMORY:
                *ret = src->which ? rt->memory_device : rt->memory_host;
                return rt->has_memory;
        case RT_HOST_MEMORY:
                *ret = rt->host_memory[src->which];
                return rt->has_host_breakdown;
        case RT_VCPU:
                *ret = src->which ? rt->vcpu_system : rt->vcpu_user;
                return rt->has_vcpu;
        default:
                return false;
        }
}

static int nmon_read(struct collector *c, int64_t now_ms, struct sample_batch *out) {
        struct nmon *m = (struct nmon *) c;
        memset(m->scratch.valid, 0, m->scratch.n);
        int r = m->sysfs->ops->read(m->sysfs, now_ms, &m->scratch);
        if (r < 0) {
                snprintf(c->reason, sizeof(c->reason), "%s", m->sysfs->reason);
                return r;
        }
        for (size_t i = 0; i < out->n; i++) {
                const struct source *src = &m->sources[i];
                if (src->kind == FROM_SYSFS) {
                        out->values[i] = m->scratch.values[src->index];
                        out->valid[i] = m->scratch.valid[src->index];
                        continue;
                }
                out->valid[i] = runtime_value(m, src, &out->values[i]);
        }
        /* A problem of the monitor counts as one series lost, so that the
         * daemon says why; it is said before sysfs's. */
        snprintf(c->reason, sizeof(c->reason), "%s", m->problem[0] ? m->problem : m->sysfs->reason);
        r += m->problem[0] != '\0';
        m->problem[0] = '\0';
        return r;
}

/* ---- lifetime -------------------------------------------------------- */

static void nmon_close(struct collector *c) {
        struct nmon *m = (struct nmon *) c;
        if (!m)
                return;
        if (m->running) {
                /* The reader stops its child on its way out. */
                (void) !write(m->stop[1], "", 1);
                pthread_join(m->thread, NULL);
        }
        for (int i = 0; i < 2; i++)
                if (m->stop[i] >= 0)
                        close(m->stop[i]);
        if (m->fd >= 0)
                close(m->fd);
        /* sysfs's own close: collector_close() is the registry's, which
         * names this backend. */
        if (m->sysfs)
                m->sysfs->ops->close(m->sysfs);
        free(m->scratch.values);
        free(m->scratch.valid);
        free(m->sources);
        free(m->command);
        free(m->fifo);
        free(m->line);
        doc_unref(m->pending);
        doc_unref(m->last);
        doc_unref(m->cur);
        pthread_mutex_destroy(&m->lock);
        inventory_free(&m->base.inv);
        free(m);
}

static int nmon_open(const struct collector_args *args, struct collector **ret) {
        const char *o = args->options ? args->options : "";
        const char *cmd = strstr(o, ",monitor="), *fifo = strstr(o, ",monitor-fifo=");
        const char *at = cmd && (!fifo || cmd < fifo) ? cmd : fifo;
        int r;

        if (!at) {
                snprintf(args->err, args->errlen, "sysfs: no monitor= or monitor-fifo= option");
                return -EINVAL;
        }
        const char *value = at + strlen(at == cmd ? ",monitor=" : ",monitor-fifo=");
        if (!value[0]) {
                snprintf(args->err, args->errlen, "sysfs: %s needs a value", at == cmd ? "monitor=" : "monitor-fifo=");
                return -EINVAL;
        }
        struct nmon *m = calloc(1, sizeof(*m));
        if (!m)
                return -ENOMEM;
        m->base.ops = &nmon_collector_ops;
        m->base.time_scale = 1;
        m->fd = m->stop[0] = m->stop[1] = -1;
        m->backoff_ms = RESTART_MIN_MS;
        pthread_mutex_init(&m->lock, NULL);
        char *sysfs_options = strndup(o, (size_t) (at - o));
        if (at == cmd)
                m->command = strdup(value);
        else
                m->fifo = strdup(value);
        if (!sysfs_options || (!m->command && !m->fifo)) {
                free(sysfs_options);
                nmon_close(&m->base);
                return -ENOMEM;
        }
        const struct collector_args sysfs_args = { .options = sysfs_options, .err = args->err, .errlen = args->errlen };
        r = sysfs_collector_ops.open(&sysfs_args, &m->sysfs);
        free(sysfs_options);
        if (r < 0)
                goto fail;
        snprintf(m->base.inv.backend, sizeof(m->base.inv.backend), "%.*s+monitor",
                 (int) sizeof(m->base.inv.backend) - 9, m->sysfs->inv.backend);
        r = copy_inventory(m);
        if (r == 0)
                r = build_series(m, false);
        if (r == 0 && m->fifo) {
                /* Opening for reading without a writer does not wait. */
                m->fd = open(m->fifo, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
                if (m->fd < 0) {
                        r = -errno;
                        snprintf(args->err, args->errlen, "sysfs: monitor-fifo=%s: %s", m->fifo, strerror(-r));
                        r = -EINVAL;
                }
        }
        if (r == 0) {
                m->line = malloc(NMON_LINE_MAX);
                r = m->line && pipe2(m->stop, O_CLOEXEC) == 0 ? 0 : -ENOMEM;
        }
        if (r == 0) {
                /* The reader takes no signal: they stay with the daemon's
                 * signalfd. Threads inherit the mask. */
                sigset_t all, old;
                sigfillset(&all);
                pthread_sigmask(SIG_SETMASK, &all, &old);
                r = -pthread_create(&m->thread, NULL, reader_main, m);
                pthread_sigmask(SIG_SETMASK, &old, NULL);
                m->running = r == 0;
        }
        if (r < 0)
                goto fail;
        *ret = &m->base;
        return 0;
fail:
        nmon_close(&m->base);
        return r;
}

static int nmon_probe(const struct collector_args *args) {
        (void) args;
        return -ENODEV; /* never probed: it runs a command */
}

const struct collector_ops nmon_collector_ops = {
        .name = "neuron-monitor",
        .probe = nmon_probe,
        .open = nmon_open,
        .refresh = nmon_refresh,
        .read = nmon_read,
        .close = nmon_close,
};
