#include "config.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "collectors/model-internal.h"
#include "lib/parse.h"

/* ---- the text form ------------------------------------------------------ */

static const char *const kind_names[FAULT__COUNT] = {
        [FAULT_DEVICE_DOWN] = "device_down", [FAULT_CORE_STUCK] = "core_stuck",   [FAULT_ECC] = "ecc",
        [FAULT_LINK_DOWN] = "link_down",     [FAULT_EXEC_ERRORS] = "exec_errors", [FAULT_HBM_FULL] = "hbm_full",
};

const char *const model_ecc_names[MODEL_ECC_TYPES] = {
        "mem_ecc_uncorrected", "mem_ecc_repairable_uncorrected", "sram_ecc_uncorrected", "mem_ecc_corrected",
        "sram_ecc_corrected",
};

#define EXEC_ERRORS_DEFAULT_RATE 100.0
#define EXEC_ERRORS_DEFAULT_MS 10000
#define HBM_FULL_DEFAULT_SHARE 0.98

/* A fault starts within and lasts at most a year: far beyond any test, and
 * small enough that adding it to a tick's timestamp cannot overflow. */
#define FAULT_TIME_MAX_MS (366LL * 24 * 3600 * 1000)

/* A device or core index: up to 9 digits. */
static int parse_index(const char *text, unsigned *ret) {
        uint64_t v;
        int r = parse_uint_range(text, 0, 999999999, &v);
        if (r < 0)
                return r;
        *ret = (unsigned) v;
        return 0;
}

/* A positive number up to max. */
static int parse_rate(const char *text, double max, double *ret) {
        char *end;
        errno = 0;
        double v = strtod(text, &end);
        if (errno || end == text || *end || !(v > 0 && v <= max))
                return -EINVAL;
        *ret = v;
        return 0;
}

/* A duration as the flags take it ("250ms", "30s", "1m30s"), up to a year. */
static int parse_duration(const char *text, size_t len, int64_t *ret_ms) {
        char copy[32];
        int64_t ms;

        if (len == 0 || len >= sizeof(copy))
                return -EINVAL;
        memcpy(copy, text, len);
        copy[len] = '\0';
        if (parse_duration_ms(copy, &ms) < 0 || ms > FAULT_TIME_MAX_MS)
                return -EINVAL;
        *ret_ms = ms;
        return 0;
}

int model_fault_parse(const char *text, struct model_fault *ret, char *err, size_t errlen) {
        struct model_fault f = { .peer = MODEL_PEER_SWITCH };
        char buf[128];
        char *fields[4] = { 0 };
        size_t n_fields = 0;

        if (strlen(text) >= sizeof(buf)) {
                snprintf(err, errlen, "fault '%.40s...' is too long", text);
                return -EINVAL;
        }
        snprintf(buf, sizeof(buf), "%s", text);

        /* Split off "+duration" and "@start" from the end. */
        char *plus = strchr(buf, '+');
        char *at = strchr(buf, '@');
        if (plus && at && plus < at) {
                snprintf(err, errlen, "fault '%s': write @start before +duration", text);
                return -EINVAL;
        }
        bool has_duration = plus != NULL;
        if (plus) {
                *plus = '\0';
                if (parse_duration(plus + 1, strlen(plus + 1), &f.duration_ms) < 0 || f.duration_ms <= 0) {
                        snprintf(err, errlen,
                                 "fault '%s': duration '%s' is not a positive duration up to a year, such as 30s", text,
                                 plus + 1);
                        return -EINVAL;
                }
        }
        if (at) {
                *at = '\0';
                if (parse_duration(at + 1, strlen(at + 1), &f.start_ms) < 0) {
                        snprintf(err, errlen, "fault '%s': start '%s' is not a duration up to a year, such as 10s",
                                 text, at + 1);
                        return -EINVAL;
                }
        }
        for (char *p = buf; p;) {
                if (n_fields == 4) {
                        snprintf(err, errlen, "fault '%s': too many ':' fields", text);
                        return -EINVAL;
                }
                fields[n_fields++] = p;
                p = strchr(p, ':');
                if (p)
                        *p++ = '\0';
        }
        int kind = -1;
        for (int k = 0; k < FAULT__COUNT; k++)
                if (strcmp(fields[0], kind_names[k]) == 0)
                        kind = k;
        if (kind < 0) {
                snprintf(
                        err, errlen,
                        "fault '%s': unknown kind '%s' (expected device_down, core_stuck, ecc, link_down, exec_errors or "
                        "hbm_full)",
                        text, fields[0]);
                return -EINVAL;
        }
        f.kind = (enum model_fault_kind) kind;
        size_t want_min = 2, want_max = 2;
        if (kind == FAULT_EXEC_ERRORS || kind == FAULT_HBM_FULL)
                want_max = 3;
        if (kind == FAULT_ECC)
                want_max = 4;
        if (kind == FAULT_LINK_DOWN)
                want_min = want_max = 3;
        if (n_fields < want_min || n_fields > want_max) {
                snprintf(err, errlen, "fault '%s': %s takes %s", text, kind_names[kind],
                         kind == FAULT_LINK_DOWN     ? "<device>:<peer device or switch>"
                         : kind == FAULT_ECC         ? "<device>[:<event type>[:<events per second>]]"
                         : kind == FAULT_HBM_FULL    ? "<device>[:<share of memory>]"
                         : kind == FAULT_EXEC_ERRORS ? "<core>[:<errors per second>]"
                         : kind == FAULT_CORE_STUCK  ? "<core>"
                                                     : "<device>");
                return -EINVAL;
        }
        if (parse_index(fields[1], &f.target) < 0) {
                snprintf(err, errlen, "fault '%s': '%s' is not a device or core index", text, fields[1]);
                return -EINVAL;
        }
        switch (f.kind) {
        case FAULT_LINK_DOWN:
                if (strcmp(fields[2], "switch") != 0 && parse_index(fields[2], &f.peer) < 0) {
                        snprintf(err, errlen, "fault '%s': peer '%s' is not a device index nor 'switch'", text,
                                 fields[2]);
                        return -EINVAL;
                }
                break;
        case FAULT_ECC: {
                int e = n_fields >= 3 ? -1 : DRIVER_ECC_MEM_UNCORRECTED;
                for (int i = 0; n_fields >= 3 && i < MODEL_ECC_TYPES; i++)
                        if (strcmp(fields[2], model_ecc_names[i]) == 0)
                                e = i;
                if (e < 0) {
                        _Static_assert(MODEL_ECC_TYPES == 5, "the message names every ECC type");
                        snprintf(err, errlen, "fault '%s': ECC type '%s' is not %s, %s, %s, %s or %s", text, fields[2],
                                 model_ecc_names[0], model_ecc_names[1], model_ecc_names[2], model_ecc_names[3],
                                 model_ecc_names[4]);
                        return -EINVAL;
                }
                f.ecc = (unsigned) e;
                f.rate = 1;
                if (n_fields == 4 && parse_rate(fields[3], 1e6, &f.rate) < 0) {
                        snprintf(err, errlen,
                                 "fault '%s': rate '%s' is not a number of events per second in (0, 1000000]", text,
                                 fields[3]);
                        return -EINVAL;
                }
                break;
        }
        case FAULT_EXEC_ERRORS:
                f.rate = EXEC_ERRORS_DEFAULT_RATE;
                if (n_fields == 3 && parse_rate(fields[2], 1e6, &f.rate) < 0) {
                        snprintf(err, errlen,
                                 "fault '%s': rate '%s' is not a number of errors per second in (0, 1000000]", text,
                                 fields[2]);
                        return -EINVAL;
                }
                break;
        case FAULT_HBM_FULL:
                f.rate = HBM_FULL_DEFAULT_SHARE;
                if (n_fields == 3 && parse_rate(fields[2], 1, &f.rate) < 0) {
                        snprintf(err, errlen, "fault '%s': share '%s' is not a number in (0, 1]", text, fields[2]);
                        return -EINVAL;
                }
                break;
        default:
                break;
        }
        if (!has_duration)
                f.duration_ms = f.kind == FAULT_ECC           ? 0
                                : f.kind == FAULT_EXEC_ERRORS ? EXEC_ERRORS_DEFAULT_MS
                                                              : MODEL_FAULT_FOREVER;
        *ret = f;
        return 0;
}

static void format_duration(int64_t ms, char *out, size_t size) {
        if (ms % 3600000 == 0)
                snprintf(out, size, "%" PRId64 "h", ms / 3600000);
        else if (ms % 60000 == 0)
                snprintf(out, size, "%" PRId64 "m", ms / 60000);
        else if (ms % 1000 == 0)
                snprintf(out, size, "%" PRId64 "s", ms / 1000);
        else
                snprintf(out, size, "%" PRId64 "ms", ms);
}

void model_fault_format(const struct model_fault *f, char *out, size_t size) {
        char arg[48] = "", start[32] = "", duration[32] = "";

        switch (f->kind) {
        case FAULT_LINK_DOWN:
                if (f->peer == MODEL_PEER_SWITCH)
                        snprintf(arg, sizeof(arg), ":switch");
                else
                        snprintf(arg, sizeof(arg), ":%u", f->peer);
                break;
        case FAULT_ECC:
                if (f->rate != 1)
                        snprintf(arg, sizeof(arg), ":%s:%g", model_ecc_names[f->ecc], f->rate);
                else
                        snprintf(arg, sizeof(arg), ":%s", model_ecc_names[f->ecc]);
                break;
        case FAULT_HBM_FULL:
                snprintf(arg, sizeof(arg), ":%g", f->rate);
                break;
        case FAULT_EXEC_ERRORS:
                snprintf(arg, sizeof(arg), ":%g", f->rate);
                break;
        default:
                break;
        }
        if (f->start_ms > 0) {
                start[0] = '@';
                format_duration(f->start_ms, start + 1, sizeof(start) - 1);
        }
        if (f->duration_ms > 0 && f->duration_ms != MODEL_FAULT_FOREVER) {
                duration[0] = '+';
                format_duration(f->duration_ms, duration + 1, sizeof(duration) - 1);
        }
        snprintf(out, size, "%s:%u%s%s%s", kind_names[f->kind], f->target, arg, start, duration);
}

/* ---- faults in force ---------------------------------------------------- */

static int fault_check(const struct model *m, const struct model_fault *f, char *err, size_t errlen) {
        bool core = f->kind == FAULT_CORE_STUCK || f->kind == FAULT_EXEC_ERRORS;
        unsigned limit = core ? m->n_lcores : m->n_dev; /* cores: the logical neuroncore index */
        if (f->target >= limit) {
                snprintf(err, errlen, "%s %u does not exist on %s (0-%u)", core ? "core" : "device", f->target,
                         m->instance->name, limit - 1);
                return -EINVAL;
        }
        if (f->kind != FAULT_LINK_DOWN)
                return 0;
        for (size_t l = 0; l < m->n_links; l++)
                if (m->links[l].from == f->target && m->links[l].to == f->peer)
                        return 0;
        if (f->peer == MODEL_PEER_SWITCH)
                snprintf(err, errlen, "device %u has no NeuronSwitch port on %s", f->target, m->instance->name);
        else
                snprintf(err, errlen, "device %u has no NeuronLink to device %u on %s", f->target, f->peer,
                         m->instance->name);
        return -EINVAL;
}

int model_fault_inject(struct collector *c, const struct model_fault *f, char *err, size_t errlen) {
        struct model *m = (struct model *) c;
        /* The other nodes' daemons would not see a fault on this one, and
         * their traffic with it would no longer match: not modelled. */
        if (m->node >= 0) {
                snprintf(err, errlen, "faults are not modelled on one node of an UltraServer (node=%d)", m->node);
                return -EINVAL;
        }
        int r = fault_check(m, f, err, errlen);
        if (r < 0)
                return r;
        pthread_mutex_lock(&m->lock);
        if (m->n_pending + m->n_active >= FAULTS_MAX) {
                snprintf(err, errlen, "too many faults at once (at most %d)", FAULTS_MAX);
                r = -ENOSPC;
        } else {
                m->pending[m->n_pending++] = *f;
        }
        pthread_mutex_unlock(&m->lock);
        return r;
}

void model_fault_clear(struct collector *c) {
        struct model *m = (struct model *) c;
        pthread_mutex_lock(&m->lock);
        m->n_pending = 0;
        m->clear_requested = true;
        pthread_mutex_unlock(&m->lock);
}

size_t model_fault_list(struct collector *c, struct model_fault_status *out, size_t max) {
        struct model *m = (struct model *) c;
        size_t n = 0;
        pthread_mutex_lock(&m->lock);
        for (size_t i = 0; i < m->n_pending; i++, n++)
                if (n < max)
                        out[n] = (struct model_fault_status){ .fault = m->pending[i], .pending = true };
        for (size_t i = 0; !m->clear_requested && i < m->n_active; i++) {
                if (m->active[i].end_ms != INT64_MAX && m->active[i].end_ms <= m->fault_clock_ms)
                        continue;
                if (n < max)
                        out[n] = m->active[i];
                n++;
        }
        pthread_mutex_unlock(&m->lock);
        return n;
}

void model_faults_update(struct model *m, int64_t now_ms) {
        pthread_mutex_lock(&m->lock);
        if (m->clear_requested) {
                m->n_active = 0;
                m->clear_requested = false;
        }
        /* Keep what the integration from last_ms on may still need. */
        size_t kept = 0;
        for (size_t i = 0; i < m->n_active; i++) {
                const struct model_fault_status *f = &m->active[i];
                if (f->end_ms == INT64_MAX || f->end_ms / 1000 >= m->last_ms / 1000)
                        m->active[kept++] = *f;
        }
        m->n_active = kept;
        for (size_t i = 0; i < m->n_pending && m->n_active < FAULTS_MAX; i++) {
                const struct model_fault *f = &m->pending[i];
                /* Faults begin on a whole simulated second, so that the
                 * second they begin in is entirely theirs. */
                int64_t start = (now_ms + f->start_ms + 999) / 1000 * 1000;
                m->active[m->n_active++] = (struct model_fault_status){
                        .fault = *f,
                        .start_ms = start,
                        /* At least the whole second: an instant ECC fault is one event. */
                        .end_ms = f->duration_ms == MODEL_FAULT_FOREVER
                                          ? INT64_MAX
                                          : start + (f->duration_ms > 1000 ? f->duration_ms : 1000),
                };
        }
        m->n_pending = 0;
        m->fault_clock_ms = now_ms;
        pthread_mutex_unlock(&m->lock);
        /* The cached second may predate a fault that starts in it. */
        m->st.second = INT64_MIN;
}

/* ---- lib/faults.h's interface --------------------------------------------- */

static int fault_ops_inject(void *impl, const char *spec, char *canonical, size_t canonical_size, char *err,
                            size_t errlen) {
        struct model_fault f;
        int r = model_fault_parse(spec, &f, err, errlen);
        if (r >= 0)
                r = model_fault_inject(impl, &f, err, errlen);
        if (r >= 0)
                model_fault_format(&f, canonical, canonical_size);
        return r;
}

static void fault_ops_clear(void *impl) {
        model_fault_clear(impl);
}

static size_t fault_ops_list(void *impl, struct fault_entry *out, size_t max) {
        struct model_fault_status faults[64];
        size_t n = model_fault_list(impl, faults, sizeof(faults) / sizeof(faults[0]));

        for (size_t i = 0; i < n && i < max && i < sizeof(faults) / sizeof(faults[0]); i++) {
                out[i] = (struct fault_entry){
                        .pending = faults[i].pending,
                        .start_ms = faults[i].start_ms,
                        .end_ms = faults[i].end_ms,
                };
                model_fault_format(&faults[i].fault, out[i].spec, sizeof(out[i].spec));
        }
        return n;
}

const struct fault_ops model_fault_ops = {
        .inject = fault_ops_inject,
        .clear = fault_ops_clear,
        .list = fault_ops_list,
};
