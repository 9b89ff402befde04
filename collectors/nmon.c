#include "config.h"

#include <errno.h>
#include <fcntl.h>
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
/* Read at most this much per tick, so that a flood cannot hold the tick. */
#define DRAIN_MAX (4 * NMON_LINE_MAX)
/* What one tick spends on the lines it drained: a child flooding the pipe
 * with junk lines (millions of them in DRAIN_MAX) must not hold the tick.
 * neuron-monitor writes one document per period, so a tick normally has
 * one or two lines; the rest are skipped, and counted. */
#define LINES_PER_TICK 64
#define PARSE_BUDGET_NS (100 * 1000000LL)
#define CHUNK 65536

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
        size_t index; /* FROM_SYSFS: the sysfs series; else the runtime in tags */
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

struct nmon {
        struct collector base;
        struct collector *sysfs;
        struct sample_batch scratch; /* sysfs's values, before picking */
        struct source *sources;      /* parallel to base.inv.series */
        char *command;               /* monitor=, or NULL */
        char *fifo;                  /* monitor-fifo=, or NULL */
        int fd;
        pid_t child;
        pid_t group; /* the child's process group, until the pipe closes */
        int64_t next_start_ms, backoff_ms;
        char *line; /* the partial line read so far */
        size_t len;
        bool discarding;      /* inside a line over NMON_LINE_MAX */
        bool flooded;         /* the last drain skipped lines */
        uint64_t lines_taken; /* in this tick's drain, and past the bounds on it */
        uint64_t lines_skipped;
        int64_t parse_deadline_ns;
        struct nmon_report report; /* the latest document: a runtime per process */
        struct nmon_report tags;   /* the same, a runtime per tag: the series' */
        struct totals *totals;
        bool has_report;
        int64_t report_ms;
        int64_t started_ms; /* when the child started, 0 once it printed */
        bool resync;        /* the last refresh failed: build the series anew */
        char problem[sizeof(((struct collector *) 0)->reason)];
};

bool nmon_options_have_monitor(const char *options) {
        return options && (strstr(options, ",monitor=") || strstr(options, ",monitor-fifo="));
}

/* Notes what went wrong for the next read() to say; the first problem
 * since the last read stays (a monitor's end before the documents it left
 * in the pipe). */
__attribute__((format(printf, 2, 3))) static void set_problem(struct nmon *m, const char *fmt, ...) {
        va_list ap;
        if (m->problem[0])
                return;
        va_start(ap, fmt);
        vsnprintf(m->problem, sizeof(m->problem), fmt, ap);
        va_end(ap);
}

/* ---- the child and the pipe ------------------------------------------ */

/* Kills the child and what it started (its process group; the child
 * itself too, should it not have made the group yet). A child that
 * already exited stays a zombie for reap() to read its status. */
static void kill_child(struct nmon *m) {
        if (m->child > 0)
                kill(m->child, SIGKILL);
        /* The group outlives a child reaped first: what it started may
         * still hold the pipe. */
        if (m->group > 0)
                kill(-m->group, SIGKILL);
        m->group = 0;
}

static void stop_child(struct nmon *m) {
        kill_child(m);
        if (m->child > 0)
                (void) waitpid(m->child, NULL, 0);
        m->child = 0;
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
        m->group = pid;
        m->len = 0;
        m->discarding = false;
        m->started_ms = 0;
        return 0;
}

/* Notes how the child ended, once it has. */
static void reap(struct nmon *m) {
        int status;
        if (m->child <= 0 || waitpid(m->child, &status, WNOHANG) != m->child)
                return;
        char how[48];
        if (WIFEXITED(status))
                snprintf(how, sizeof(how), "exited with status %d", WEXITSTATUS(status));
        else
                snprintf(how, sizeof(how), "was killed by signal %d", WIFSIGNALED(status) ? WTERMSIG(status) : 0);
        set_problem(m, "neuron-monitor %s", how);
        m->child = 0;
}

/* ---- documents ------------------------------------------------------- */

static void free_totals(struct totals *t, size_t n) {
        for (size_t i = 0; t && i < n; i++)
                free(t[i].flops);
        free(t);
}

/* Forgets the report: its runtimes' series go, and their counters start
 * from 0 should they come back. */
static void drop_report(struct nmon *m) {
        free_totals(m->totals, m->tags.n_runtimes);
        m->totals = NULL;
        nmon_report_free(&m->report);
        nmon_report_free(&m->tags);
        m->has_report = false;
}

/* Takes a new report: a tag's counters carry on when it was in the last
 * one (whichever processes it has now), start at 0 for a new tag, and add
 * this period. */
static int take_report(struct nmon *m, struct nmon_report *rep, int64_t now_ms) {
        struct nmon_report tags;
        int r = nmon_merge_tags(rep, &tags);
        if (r < 0)
                return r;
        struct totals *t = calloc(tags.n_runtimes ? tags.n_runtimes : 1, sizeof(*t));
        if (!t) {
                nmon_report_free(&tags);
                return -ENOMEM;
        }
        for (size_t i = 0; i < tags.n_runtimes; i++) {
                const struct nmon_runtime *rt = &tags.runtimes[i];
                t[i].flops = calloc(rt->n_cores ? rt->n_cores : 1, sizeof(double));
                if (!t[i].flops) {
                        free_totals(t, i + 1);
                        nmon_report_free(&tags);
                        return -ENOMEM;
                }
                for (size_t k = 0; m->has_report && k < m->tags.n_runtimes; k++) {
                        const struct nmon_runtime *old = &m->tags.runtimes[k];
                        if (strcmp(old->tag, rt->tag) != 0)
                                continue;
                        memcpy(t[i].status, m->totals[k].status, sizeof(t[i].status));
                        memcpy(t[i].errors, m->totals[k].errors, sizeof(t[i].errors));
                        /* Both core lists are ascending. */
                        for (size_t c = 0, o = 0; c < rt->n_cores && o < old->n_cores;) {
                                if (old->cores[o].index < rt->cores[c].index)
                                        o++;
                                else if (old->cores[o].index > rt->cores[c].index)
                                        c++;
                                else
                                        t[i].flops[c++] = m->totals[k].flops[o++];
                        }
                }
                for (int s = 0; s < EXEC_STATUS__COUNT && rt->has_exec; s++)
                        t[i].status[s] += rt->status[s];
                for (int e = 0; e < EXEC_ERROR__COUNT && rt->has_exec; e++)
                        t[i].errors[e] += rt->errors[e];
                for (size_t c = 0; c < rt->n_cores; c++)
                        t[i].flops[c] += rt->cores[c].has_flops ? rt->cores[c].flops : 0;
                if (rt->error[0])
                        set_problem(m, "runtime %s: %s", rt->tag, rt->error);
        }
        drop_report(m);
        m->report = *rep;
        *rep = (struct nmon_report){ 0 };
        m->tags = tags;
        m->totals = t;
        m->has_report = true;
        m->report_ms = now_ms;
        m->started_ms = 0;
        m->backoff_ms = RESTART_MIN_MS;
        return 0;
}

static int64_t monotonic_ns(void) {
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (int64_t) ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static int take_line(struct nmon *m, const char *text, size_t len, int64_t now_ms) {
        struct nmon_report rep;
        char err[128];
        if (len == 0)
                return 0;
        if (m->lines_taken >= LINES_PER_TICK || monotonic_ns() > m->parse_deadline_ns) {
                m->lines_skipped++;
                return 0;
        }
        m->lines_taken++;
        int r = nmon_parse(text, len, &rep, err, sizeof(err));
        if (r == -ENOMEM)
                return r;
        if (r < 0) {
                set_problem(m, "neuron-monitor: a line skipped: %s", err);
                return 0;
        }
        r = take_report(m, &rep, now_ms);
        nmon_report_free(&rep);
        return r;
}

static int drain_lines(struct nmon *m, int64_t now_ms) {
        if (!m->line) {
                m->line = malloc(NMON_LINE_MAX);
                if (!m->line)
                        return -ENOMEM;
        }
        for (size_t total = 0; total < DRAIN_MAX;) {
                char chunk[CHUNK];
                ssize_t n = read(m->fd, chunk, sizeof(chunk));
                if (n < 0 && errno == EINTR)
                        continue;
                if (n < 0)
                        return errno == EAGAIN ? 0 : -errno;
                if (n == 0)
                        return m->command ? -EPIPE : 0; /* a FIFO without a writer: wait for one */
                total += (size_t) n;
                for (const char *p = chunk, *end = chunk + n; p < end;) {
                        const char *nl = memchr(p, '\n', (size_t) (end - p));
                        size_t part = (size_t) ((nl ? nl : end) - p);
                        if (!m->discarding && m->len + part > NMON_LINE_MAX) {
                                set_problem(m, "neuron-monitor: a line over %u bytes skipped", NMON_LINE_MAX);
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
                        int r = m->discarding ? 0 : take_line(m, m->line, m->len, now_ms);
                        m->len = 0;
                        m->discarding = false;
                        if (r < 0)
                                return r;
                }
        }
        return 0;
}

/* Reads what the pipe holds, without waiting, and takes each complete
 * line in order, within LINES_PER_TICK and PARSE_BUDGET_NS. Returns 0, or
 * -EPIPE at the end of the child's output. */
static int drain(struct nmon *m, int64_t now_ms) {
        m->lines_taken = m->lines_skipped = 0;
        m->parse_deadline_ns = monotonic_ns() + PARSE_BUDGET_NS;
        int r = drain_lines(m, now_ms);
        /* Said when it starts and ends; meanwhile each tick's reason counts. */
        if ((m->lines_skipped > 0) != m->flooded) {
                m->flooded = m->lines_skipped > 0;
                if (m->flooded)
                        log_collector(LOG_LEVEL_WARNING, "neuron-monitor",
                                      "more lines than a tick takes (%d, or %lld ms of parsing): lines skipped",
                                      LINES_PER_TICK, PARSE_BUDGET_NS / 1000000);
                else
                        log_collector(LOG_LEVEL_INFO, "neuron-monitor", "every line read again");
        }
        if (m->lines_skipped > 0) {
                /* Said first: a flood is why the lines' own problems stop being read. */
                char first[sizeof(m->problem)];
                snprintf(first, sizeof(first), "%s", m->problem);
                m->problem[0] = '\0';
                set_problem(m, "neuron-monitor: %llu lines skipped this tick, past %d lines or %lld ms of parsing%s%s",
                            (unsigned long long) m->lines_skipped, LINES_PER_TICK, PARSE_BUDGET_NS / 1000000,
                            first[0] ? "; first: " : "", first);
        }
        return r;
}

/* Keeps the input going: starts the child when due, reads, and stops a
 * child that ended or fell silent. */
static int poll_input(struct nmon *m, int64_t now_ms) {
        reap(m);
        /* A new child once the last one is reaped and its back-off over. */
        if (m->fd < 0 && m->command && m->child <= 0 && now_ms >= m->next_start_ms) {
                int r = start_child(m);
                m->next_start_ms = now_ms + m->backoff_ms;
                m->backoff_ms = m->backoff_ms * 2 < RESTART_MAX_MS ? m->backoff_ms * 2 : RESTART_MAX_MS;
                m->started_ms = now_ms;
                if (r < 0)
                        set_problem(m, "neuron-monitor: cannot start it: %s", strerror(-r));
        }
        if (m->fd < 0)
                return 0;
        int r = drain(m, now_ms);
        if (r == -ENOMEM)
                return r;
        int64_t last = m->started_ms ? m->started_ms : m->report_ms;
        if (r < 0 || (m->command && now_ms - last > NMON_STALE_MS)) {
                if (r == 0)
                        set_problem(m, "neuron-monitor: no document for %d s; restarting it", NMON_STALE_MS / 1000);
                else if (r != -EPIPE)
                        set_problem(m, "neuron-monitor: reading its output: %s", strerror(-r));
                /* Its runtimes' series go with it. */
                kill_child(m);
                close(m->fd);
                m->fd = -1;
                drop_report(m);
                reap(m);
        }
        return 0;
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
        return m->has_report && now_ms - m->report_ms <= NMON_STALE_MS;
}

/* Whether a runtime in the report holds logical core `core`. */
static bool core_held(const struct nmon *m, unsigned core) {
        for (size_t i = 0; i < m->tags.n_runtimes; i++)
                for (size_t c = 0; c < m->tags.runtimes[i].n_cores; c++)
                        if (m->tags.runtimes[i].cores[c].index == core)
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
        const struct nmon_runtime *rt = &m->tags.runtimes[i];
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
        const char *tag = m->tags.runtimes[i].tag;
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
        const struct nmon_runtime *rt = &m->report.runtimes[i];
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
        for (size_t i = 0; live && i < m->tags.n_runtimes && r == 0; i++) {
                r = add_cores(m, i);
                if (r == 0)
                        r = add_runtime(m, i);
        }
        for (size_t i = 0; live && i < m->report.n_runtimes && r == 0; i++)
                r = add_process(m, i);
        return r;
}

/* Whether the runtimes (pid, tag, cores) differ from the inventory's. */
static bool runtimes_changed(const struct nmon *m, bool live) {
        const struct inventory *inv = &m->base.inv;
        size_t n_runtimes = live ? m->report.n_runtimes : 0;
        if (inv->n_runtimes != n_runtimes)
                return true;
        for (size_t i = 0; i < n_runtimes; i++) {
                const struct nmon_runtime *rt = &m->report.runtimes[i];
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
        int r = poll_input(m, now_ms);
        if (r < 0)
                return r;
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
        const struct nmon_runtime *rt = &m->tags.runtimes[src->index];
        const struct totals *t = &m->totals[src->index];
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
        stop_child(m);
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
        drop_report(m);
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
        m->fd = -1;
        m->backoff_ms = RESTART_MIN_MS;
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
