#include "config.h"

#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "lib/clock.h"
#include "lib/file.h"
#include "lib/log.h"
#include "remote/remote-internal.h"

/* A writer that has nothing to do looks again this often even when no
 * tick wakes it (the store may have opened, a deadline passed). */
#define IDLE_WAIT_MS 1000
/* Counting what is pending reads much of the database: this seldom. */
#define PENDING_REFRESH_MS 5000
/* A read or a position that fails is tried again after this. */
#define READ_RETRY_MS 1000
#define SECRET_MAX 4096

/* What every request carries about the writers themselves, per endpoint,
 * so that a fleet store sees which hosts lag (lib/forward.h). */
enum self_metric {
        SELF_SENT,
        SELF_FAILED,
        SELF_PENDING,
        SELF_BEHIND,
        SELF__COUNT,
};

static const char *const self_names[SELF__COUNT] = {
        [SELF_SENT] = "neurond_remote_write_samples_sent_total",
        [SELF_FAILED] = "neurond_remote_write_samples_failed_total",
        [SELF_PENDING] = "neurond_remote_write_pending_samples",
        [SELF_BEHIND] = "neurond_remote_write_behind_seconds",
};

/* Presence bits of a series in the previous and the current tick, for
 * stale markers. */
#define PRESENT_PREV 1u
#define PRESENT_CUR 2u

struct remote_writer {
        struct remote_set *set;
        struct remote_endpoint e;
        struct remote_http *http;
        pthread_t thread;
        bool started;

        pthread_mutex_t lock; /* guards woken and stats */
        pthread_cond_t cond;
        bool woken;
        struct forward_stats stats;

        /* The rest is the thread's own. */
        bool have_position;
        struct cursor_position pos; /* the last sample the receiver has (or refused) */
        uint64_t generation;        /* of the database pos and sets refer to */
        /* Label sets by series id, and which ids the store listed. */
        struct remote_labelset **sets;
        uint8_t *present;
        size_t sets_cap;
        int64_t listed_max;
        struct remote_labelset **self_sets; /* per endpoint of the set, SELF__COUNT each */
        size_t n_self_sets;
        int64_t self_ts; /* the newest stamp of the self samples sent */
        /* The tick being read and the series in it and in the one before. */
        bool tick_open;
        int64_t tick_ts;
        int64_t *prev_ids, *cur_ids;
        size_t n_prev, n_cur;
        struct remote_item *items;
        size_t items_cap;
        struct remote_encoder enc;
        /* The batch being sent: its body, the position after it, and its
         * samples sent and skipped. */
        uint8_t *body;
        size_t body_len;
        struct cursor_position end;
        uint64_t n_batch, n_skipped;
        int64_t waiting_since_ms; /* when a batch smaller than the limit was first seen; 0: none */
        int64_t pending_at_ms;    /* when pending was last counted */
        uint64_t failures;        /* failed sends of the batch in a row */
        int64_t backoff_ms;
        uint64_t refused; /* batches refused in a row, for the log */
};

struct remote_set {
        const struct cursor_source *source;
        atomic_bool stop;
        size_t n;
        struct remote_writer *writers;
};

static bool stopping(const struct remote_writer *w) {
        return atomic_load(&w->set->stop);
}

/* Waits until stopped or ms have passed, or, if wakeable, woken (a new
 * tick stored). */
static void writer_wait(struct remote_writer *w, int64_t ms, bool wakeable) {
        struct timespec until;

        clock_gettime(CLOCK_MONOTONIC, &until);
        int64_t ns = until.tv_nsec + (ms % 1000) * 1000000;
        until.tv_sec += ms / 1000 + ns / 1000000000;
        until.tv_nsec = ns % 1000000000;
        pthread_mutex_lock(&w->lock);
        while (!(wakeable && w->woken) && !stopping(w))
                if (pthread_cond_timedwait(&w->cond, &w->lock, &until) == ETIMEDOUT)
                        break;
        w->woken = false;
        pthread_mutex_unlock(&w->lock);
}

static const struct cursor_ops *ops(const struct remote_writer *w) {
        return w->set->source->ops;
}

static void *impl(const struct remote_writer *w) {
        return w->set->source->impl;
}

/* Grows the per-id arrays to hold id. */
static int reserve_ids(struct remote_writer *w, int64_t id) {
        if (id < 0)
                return -EINVAL;
        if ((size_t) id < w->sets_cap)
                return 0;
        size_t cap = w->sets_cap ? w->sets_cap : 256;
        while (cap <= (size_t) id)
                cap *= 2;
        struct remote_labelset **sets = realloc(w->sets, cap * sizeof(*sets));
        if (sets)
                w->sets = sets;
        uint8_t *present = realloc(w->present, cap);
        if (present)
                w->present = present;
        int64_t *prev = realloc(w->prev_ids, cap * sizeof(*prev));
        if (prev)
                w->prev_ids = prev;
        int64_t *cur = realloc(w->cur_ids, cap * sizeof(*cur));
        if (cur)
                w->cur_ids = cur;
        if (!sets || !present || !prev || !cur)
                return -ENOMEM;
        memset(w->sets + w->sets_cap, 0, (cap - w->sets_cap) * sizeof(*sets));
        memset(w->present + w->sets_cap, 0, cap - w->sets_cap);
        w->sets_cap = cap;
        return 0;
}

/* Forgets what referred to the previous database: its series' labels and
 * which were present. */
static void forget_series(struct remote_writer *w) {
        for (size_t i = 0; i < w->sets_cap; i++) {
                remote_labelset_free(w->sets[i]);
                w->sets[i] = NULL;
        }
        if (w->present)
                memset(w->present, 0, w->sets_cap);
        w->listed_max = 0;
        w->n_prev = w->n_cur = 0;
        w->tick_open = false;
}

/* Label sets of the series the store has listed since the last call. */
static int list_new_series(struct remote_writer *w) {
        struct cursor_series *list = NULL;
        size_t n = 0;
        int r = ops(w)->list_series(impl(w), w->listed_max + 1, &list, &n);

        for (size_t i = 0; r == 0 && i < n; i++) {
                const struct cursor_series *s = &list[i];
                r = reserve_ids(w, s->id);
                if (r == 0 && !w->sets[s->id])
                        r = remote_labelset_new(s->name, s->labels, s->n_labels, &w->e.external_labels,
                                                &w->sets[s->id]);
                if (r == 0 && s->id > w->listed_max)
                        w->listed_max = s->id;
        }
        free(list);
        return r;
}

/* Where this endpoint continues: its saved position, or for a new one the
 * newest stored tick. */
static int load_position(struct remote_writer *w) {
        struct cursor_position pos;
        int r = ops(w)->load(impl(w), w->e.name, &pos);

        if (r == -ENOENT) {
                int64_t newest = ops(w)->newest(impl(w));
                pos = (struct cursor_position){ newest > 0 ? newest - 1 : 0, newest > 0 ? INT64_MAX : 0 };
                log_info("remote_write %s: no position saved; sending from %s", w->e.name,
                         newest > 0 ? "the newest stored tick on" : "the first tick");
        } else if (r < 0) {
                return r;
        }
        w->pos = pos;
        w->have_position = true;
        w->generation = ops(w)->generation(impl(w));
        return 0;
}

static void set_stats(struct remote_writer *w, uint64_t pending, double behind) {
        pthread_mutex_lock(&w->lock);
        w->stats.pending = pending;
        w->stats.behind_seconds = behind;
        pthread_mutex_unlock(&w->lock);
}

/* Seconds between the newest stored sample and the newest one sent. */
static double behind_seconds(const struct remote_writer *w) {
        int64_t newest = ops(w)->newest(impl(w));
        return newest > w->pos.timestamp_ms && w->pos.timestamp_ms > 0
                       ? (double) (newest - w->pos.timestamp_ms) / 1000.0
                       : 0;
}

/* Counts what is pending, at most every PENDING_REFRESH_MS. */
static void refresh_pending(struct remote_writer *w) {
        int64_t now = clock_monotonic_ms();
        uint64_t pending;

        if (w->pending_at_ms && now - w->pending_at_ms < PENDING_REFRESH_MS) {
                pthread_mutex_lock(&w->lock);
                pending = w->stats.pending;
                pthread_mutex_unlock(&w->lock);
        } else if (ops(w)->count_after(impl(w), &w->pos, &pending) == 0) {
                w->pending_at_ms = now;
        } else {
                return;
        }
        set_stats(w, pending, behind_seconds(w));
}

static int reserve_items(struct remote_writer *w, size_t n) {
        if (n <= w->items_cap)
                return 0;
        struct remote_item *items = realloc(w->items, n * sizeof(*items));
        if (!items)
                return -ENOMEM;
        w->items = items;
        w->items_cap = n;
        return 0;
}

static double stale_marker(void) {
        uint64_t bits = REMOTE_STALE_NAN_BITS;
        double v;
        memcpy(&v, &bits, sizeof(v));
        return v;
}

/* The tick at tick_ts is whole: series present in the tick before but not
 * in it get a stale marker there, as Prometheus gives a series that a
 * scrape no longer returns. */
static void finish_tick(struct remote_writer *w, size_t *n_items) {
        if (!w->tick_open)
                return;
        for (size_t i = 0; i < w->n_prev; i++) {
                int64_t id = w->prev_ids[i];
                if (!(w->present[id] & PRESENT_CUR) && w->sets[id])
                        w->items[(*n_items)++] = (struct remote_item){ w->sets[id], w->tick_ts, stale_marker() };
                w->present[id] &= (uint8_t) ~PRESENT_PREV;
        }
        for (size_t i = 0; i < w->n_cur; i++)
                w->present[w->cur_ids[i]] = PRESENT_PREV;
        int64_t *ids = w->prev_ids;
        w->prev_ids = w->cur_ids;
        w->cur_ids = ids;
        w->n_prev = w->n_cur;
        w->n_cur = 0;
        w->tick_open = false;
}

/* Appends every endpoint's counters, stamped with the newest stored tick,
 * when that is newer than the last ones sent. */
static void add_self_samples(struct remote_writer *w, int64_t newest, size_t *n_items) {
        if (newest <= w->self_ts)
                return;
        for (size_t j = 0; j < w->set->n; j++) {
                struct forward_stats st;
                remote_forward_ops.get(w->set, j, &st);
                const double values[SELF__COUNT] = {
                        [SELF_SENT] = (double) st.samples_sent,
                        [SELF_FAILED] = (double) st.samples_failed,
                        [SELF_PENDING] = (double) st.pending,
                        [SELF_BEHIND] = st.behind_seconds,
                };
                for (int k = 0; k < SELF__COUNT; k++)
                        w->items[(*n_items)++] =
                                (struct remote_item){ w->self_sets[j * SELF__COUNT + k], newest, values[k] };
        }
        w->self_ts = newest;
}

static void batch_done(struct remote_writer *w, bool taken);

/* Turns a page into the next batch of *ret_n items; none leaves w->body
 * NULL. */
static int encode_page(struct remote_writer *w, const struct cursor_page *page, size_t *ret_n) {
        int64_t newest = ops(w)->newest(impl(w));
        int64_t oldest_kept = w->e.sample_age_limit_ms > 0 ? newest - w->e.sample_age_limit_ms : INT64_MIN;
        size_t n = 0;
        uint64_t skipped = 0;

        /* Room for the page's samples; the stale markers, at most one per
         * series of the tick before each tick (the first's may come from the
         * page before: at most sets_cap; the others are this page's
         * samples); and the endpoints' own counters. */
        int r = reserve_items(w, 2 * page->n + w->sets_cap + w->set->n * SELF__COUNT);
        for (size_t i = 0; r == 0 && i < page->n; i++) {
                const struct cursor_sample *s = &page->samples[i];
                if (s->series < 0 || (size_t) s->series >= w->sets_cap || !w->sets[s->series]) {
                        /* Listed after the page was read, or never: the store
                         * lost it. Not sendable without its labels. */
                        skipped++;
                        continue;
                }
                if (w->tick_open && s->timestamp_ms != w->tick_ts)
                        finish_tick(w, &n);
                if (!w->tick_open) {
                        w->tick_open = true;
                        w->tick_ts = s->timestamp_ms;
                }
                if (!(w->present[s->series] & PRESENT_CUR)) {
                        w->present[s->series] |= PRESENT_CUR;
                        w->cur_ids[w->n_cur++] = s->series;
                }
                if (s->timestamp_ms < oldest_kept) {
                        skipped++;
                        continue;
                }
                w->items[n++] = (struct remote_item){ w->sets[s->series], s->timestamp_ms, s->value };
        }
        if (r < 0)
                return r;
        /* A page that reached the end of what was stored ends with a whole tick. */
        if (!page->more)
                finish_tick(w, &n);
        size_t n_data = n;
        if (n_data > 0)
                add_self_samples(w, newest, &n);
        r = n_data > 0 ? remote_encode(&w->enc, w->items, n, &w->body, &w->body_len) : 0;
        if (r < 0)
                return r;
        *ret_n = n_data;
        w->end = (struct cursor_position){ page->samples[page->n - 1].timestamp_ms, page->samples[page->n - 1].series };
        w->n_batch = page->n - skipped;
        w->n_skipped = skipped;
        w->failures = 0;
        return 0;
}

/* Reads the next batch. Returns 1 with w->body set, 0 when there is
 * nothing to send yet (*wait_ms says how long to wait at most), or a
 * negative errno. */
static int next_batch(struct remote_writer *w, int64_t *wait_ms) {
        struct cursor_page page = { 0 };
        uint64_t generation = ops(w)->generation(impl(w));

        if (w->have_position && generation != w->generation) {
                /* A new database file: its ids are not the old one's. Go on
                 * after the tick sent last, which the new file may hold too. */
                log_warning("remote_write %s: the database was replaced; going on after the last tick sent", w->e.name);
                forget_series(w);
                w->pos.series = INT64_MAX;
                w->generation = generation;
        }
        int r = w->have_position ? 0 : load_position(w);
        if (r == 0)
                r = ops(w)->read(impl(w), &w->pos, (size_t) w->e.max_samples_per_send, &page);
        if (r < 0)
                return r;
        if (page.n == 0) {
                cursor_page_free(&page);
                w->waiting_since_ms = 0;
                set_stats(w, 0, 0);
                *wait_ms = IDLE_WAIT_MS;
                return 0;
        }
        /* A small batch waits for more, up to the deadline. */
        int64_t now = clock_monotonic_ms();
        if (page.n < w->e.max_samples_per_send && !page.more) {
                if (!w->waiting_since_ms)
                        w->waiting_since_ms = now;
                int64_t left = w->waiting_since_ms + w->e.batch_send_deadline_ms - now;
                if (left > 0) {
                        set_stats(w, page.n, behind_seconds(w));
                        cursor_page_free(&page);
                        *wait_ms = left < IDLE_WAIT_MS ? left : IDLE_WAIT_MS;
                        return 0;
                }
        }
        w->waiting_since_ms = 0;
        /* Labels for series new since the last listing. */
        bool unlisted = false;
        for (size_t i = 0; i < page.n && !unlisted; i++)
                unlisted = page.samples[i].series > w->listed_max;
        if (unlisted)
                r = list_new_series(w);
        size_t n_items = 0;
        if (r == 0)
                r = encode_page(w, &page, &n_items);
        if (r == 0) {
                if (page.more)
                        refresh_pending(w);
                else
                        set_stats(w, page.n, behind_seconds(w));
        }
        cursor_page_free(&page);
        if (r < 0)
                return r;
        /* Nothing to send (every sample past the age limit): done with it. */
        if (n_items == 0) {
                batch_done(w, false);
                *wait_ms = 0;
                return 0;
        }
        return 1;
}

/* The batch is done with: the receiver took it, or refused it for good. */
static void batch_done(struct remote_writer *w, bool taken) {
        w->pos = w->end;
        int r = ops(w)->save(impl(w), w->e.name, &w->pos);
        if (r < 0)
                log_debug("remote_write %s: saving the position: %s", w->e.name, strerror(-r));
        pthread_mutex_lock(&w->lock);
        if (taken)
                w->stats.samples_sent += w->n_batch;
        else
                w->stats.samples_failed += w->n_batch;
        w->stats.samples_failed += w->n_skipped;
        pthread_mutex_unlock(&w->lock);
        free(w->body);
        w->body = NULL;
        w->failures = 0;
}

/* Bounded complaints: on the first failure of a series of them and after
 * 2, 4, 8 ... */
static bool worth_logging(uint64_t count) {
        return (count & (count - 1)) == 0;
}

/* Sends the batch once. Returns how long to wait before the next try
 * (0: go on at once). */
static int64_t send_batch(struct remote_writer *w) {
        char msg[512];
        long status = 0;
        int64_t retry_after_s = 0;

        int r = remote_http_post(w->http, w->body, w->body_len, &status, &retry_after_s, msg, sizeof(msg));
        if (r == -ECANCELED)
                return 0;
        pthread_mutex_lock(&w->lock);
        w->stats.last_status = r < 0 ? 0 : (int) status;
        pthread_mutex_unlock(&w->lock);

        if (r == 0 && status >= 200 && status < 300) {
                if (w->failures > 0)
                        log_info("remote_write %s: the receiver takes samples again after %llu failed tries", w->e.name,
                                 (unsigned long long) w->failures);
                w->refused = 0;
                batch_done(w, true);
                return 0;
        }
        if (r == 0 && status >= 400 && status < 500 && status != 429) {
                /* Sending it again would be refused again. */
                w->refused++;
                if (worth_logging(w->refused))
                        log_error("remote_write %s: the receiver refused %llu samples (HTTP %ld: %s); dropped "
                                  "(%llu batches refused in a row)",
                                  w->e.name, (unsigned long long) w->n_batch, status, msg,
                                  (unsigned long long) w->refused);
                batch_done(w, false);
                return 0;
        }
        /* Worth trying again: no answer, a 5xx, a 429, or an answer no
         * receiver should give (a redirect), which keeps the data. */
        w->failures++;
        w->backoff_ms = w->failures == 1 ? w->e.min_backoff_ms : w->backoff_ms * 2;
        if (w->backoff_ms > w->e.max_backoff_ms)
                w->backoff_ms = w->e.max_backoff_ms;
        if (retry_after_s * 1000 > w->backoff_ms)
                w->backoff_ms = retry_after_s * 1000 < w->e.max_backoff_ms ? retry_after_s * 1000 : w->e.max_backoff_ms;
        pthread_mutex_lock(&w->lock);
        w->stats.retries++;
        pthread_mutex_unlock(&w->lock);
        if (worth_logging(w->failures)) {
                if (r < 0)
                        log_warning("remote_write %s: %s (%llu tries); trying again in %lld ms", w->e.name, msg,
                                    (unsigned long long) w->failures, (long long) w->backoff_ms);
                else
                        log_warning("remote_write %s: HTTP %ld: %s (%llu tries); trying again in %lld ms", w->e.name,
                                    status, msg, (unsigned long long) w->failures, (long long) w->backoff_ms);
        }
        refresh_pending(w);
        return w->backoff_ms;
}

static void *writer_main(void *arg) {
        struct remote_writer *w = arg;
        uint64_t read_errors = 0;

        while (!stopping(w)) {
                int64_t wait_ms = 0;
                if (!w->body) {
                        int r = next_batch(w, &wait_ms);
                        if (r < 0) {
                                read_errors++;
                                if (r != -EAGAIN && worth_logging(read_errors))
                                        log_warning("remote_write %s: reading stored samples: %s", w->e.name,
                                                    strerror(-r));
                                wait_ms = READ_RETRY_MS;
                        } else {
                                read_errors = 0;
                        }
                }
                /* A backoff is waited out whole: ticks arrive every
                 * interval, and would otherwise hasten every retry. */
                bool backoff = false;
                if (w->body && !stopping(w)) {
                        wait_ms = send_batch(w);
                        backoff = wait_ms > 0;
                }
                if (wait_ms > 0)
                        writer_wait(w, wait_ms, !backoff);
        }
        return NULL;
}

/* The password or token an endpoint's file holds: its first line. */
static int read_secret(const struct remote_endpoint *e, char *out, size_t size, char *err, size_t errlen) {
        const char *path = e->bearer_token_file[0] ? e->bearer_token_file : e->basic_auth_password_file;
        char why[256];
        char *text = NULL;
        size_t len;

        out[0] = '\0';
        if (!path[0])
                return 0;
        int r = file_read_text(path, size, &text, &len, why, sizeof(why));
        if (r < 0) {
                snprintf(err, errlen, "remote_write %s: %s: %s", e->name, path, why);
                return -EINVAL;
        }
        len = strcspn(text, "\r\n");
        bool clean = len > 0 && len < size;
        for (size_t i = 0; i < len && clean; i++)
                clean = (unsigned char) text[i] >= 0x20 && text[i] != 0x7f;
        if (clean) {
                memcpy(out, text, len);
                out[len] = '\0';
        }
        free(text);
        if (!clean) {
                snprintf(err, errlen, "remote_write %s: %s: the first line is empty or holds a control byte", e->name,
                         path);
                return -EINVAL;
        }
        return 0;
}

static int writer_init(struct remote_set *set, struct remote_writer *w, const struct remote_endpoint *e, char *err,
                       size_t errlen) {
        char secret[SECRET_MAX];

        w->set = set;
        w->e = *e;
        snprintf(w->stats.endpoint, sizeof(w->stats.endpoint), "%s", e->name);
        pthread_mutex_init(&w->lock, NULL);
        pthread_condattr_t attr;
        pthread_condattr_init(&attr);
        pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
        pthread_cond_init(&w->cond, &attr);
        pthread_condattr_destroy(&attr);

        int r = remote_endpoint_check(e, err, errlen);
        if (r == 0)
                r = read_secret(e, secret, sizeof(secret), err, errlen);
        if (r == 0)
                r = remote_http_new(e, secret[0] ? secret : NULL, &set->stop, &w->http, err, errlen);
        explicit_bzero(secret, sizeof(secret));
        if (r < 0)
                return r;
        w->self_sets = calloc(set->n * SELF__COUNT, sizeof(*w->self_sets));
        if (!w->self_sets)
                return -ENOMEM;
        w->n_self_sets = set->n * SELF__COUNT;
        for (size_t j = 0; j < set->n && r == 0; j++)
                for (int k = 0; k < SELF__COUNT && r == 0; k++) {
                        struct cursor_label endpoint = { .name = "endpoint" };
                        snprintf(endpoint.value, sizeof(endpoint.value), "%s", set->writers[j].e.name);
                        r = remote_labelset_new(self_names[k], &endpoint, 1, &e->external_labels,
                                                &w->self_sets[j * SELF__COUNT + k]);
                }
        return r;
}

static void writer_done(struct remote_writer *w) {
        remote_http_free(w->http);
        for (size_t i = 0; i < w->sets_cap; i++)
                remote_labelset_free(w->sets[i]);
        for (size_t i = 0; i < w->n_self_sets; i++)
                remote_labelset_free(w->self_sets[i]);
        free(w->self_sets);
        free(w->sets);
        free(w->present);
        free(w->prev_ids);
        free(w->cur_ids);
        free(w->items);
        free(w->body);
        remote_encoder_done(&w->enc);
        pthread_cond_destroy(&w->cond);
        pthread_mutex_destroy(&w->lock);
}

int remote_set_start(const struct remote_endpoint *endpoints, size_t n, const struct cursor_source *source,
                     struct remote_set **ret, char *err, size_t errlen) {
        struct remote_set *set = calloc(1, sizeof(*set));
        int r = 0;

        if (!set)
                return -ENOMEM;
        set->source = source;
        atomic_init(&set->stop, false);
        set->writers = calloc(n ? n : 1, sizeof(*set->writers));
        if (!set->writers) {
                free(set);
                return -ENOMEM;
        }
        set->n = n;
        /* Names first: every writer labels the others' counters. */
        for (size_t i = 0; i < n; i++)
                snprintf(set->writers[i].e.name, sizeof(set->writers[i].e.name), "%s", endpoints[i].name);
        size_t ready = 0;
        for (; ready < n && r == 0; ready++)
                r = writer_init(set, &set->writers[ready], &endpoints[ready], err, errlen);
        for (size_t i = 0; i < n && r == 0; i++) {
                r = -pthread_create(&set->writers[i].thread, NULL, writer_main, &set->writers[i]);
                set->writers[i].started = r == 0;
                if (r < 0)
                        snprintf(err, errlen, "remote_write %s: starting its thread: %s", endpoints[i].name,
                                 strerror(-r));
        }
        if (r < 0) {
                /* writer_init() left the failed writer's parts to clean up too. */
                set->n = ready;
                remote_set_stop(set);
                return r;
        }
        *ret = set;
        return 0;
}

void remote_set_wake(struct remote_set *set) {
        for (size_t i = 0; set && i < set->n; i++) {
                struct remote_writer *w = &set->writers[i];
                pthread_mutex_lock(&w->lock);
                w->woken = true;
                pthread_cond_signal(&w->cond);
                pthread_mutex_unlock(&w->lock);
        }
}

void remote_set_stop(struct remote_set *set) {
        if (!set)
                return;
        atomic_store(&set->stop, true);
        remote_set_wake(set);
        for (size_t i = 0; i < set->n; i++)
                if (set->writers[i].started)
                        pthread_join(set->writers[i].thread, NULL);
        for (size_t i = 0; i < set->n; i++)
                writer_done(&set->writers[i]);
        free(set->writers);
        free(set);
}

static size_t forward_count(void *impl_) {
        const struct remote_set *set = impl_;
        return set->n;
}

static void forward_get(void *impl_, size_t i, struct forward_stats *ret) {
        struct remote_set *set = impl_;
        struct remote_writer *w = &set->writers[i];
        pthread_mutex_lock(&w->lock);
        *ret = w->stats;
        pthread_mutex_unlock(&w->lock);
}

const struct forward_ops remote_forward_ops = {
        .count = forward_count,
        .get = forward_get,
};
