/* Range-query semantics as text files: every .test file of tests/data/query
 * runs, as one test, against a real store in a temporary SQLite file, on
 * synthetic timestamps, through the query path the REST API takes
 * (store_history_ops.query_range). The format is that of Prometheus's
 * promql/promqltest files (load, eval range, clear, the expanding
 * notation), with the REST API's parameters in place of PromQL:
 *
 *   # a comment: a line whose first character that is not a blank is #
 *   store retention_raw=2h retention_1m=6h retention_1h=2d
 *   load <interval>
 *     <series> <values>
 *   eval range from <start> to <end> step <step> <selector> [agg=avg|min|max|last|sum] [rate=0|1]
 *     expect fail errno: <E2BIG, EINVAL ...>
 *     <series> <points>
 *   clear
 *
 * A command starts at the beginning of a line; the lines under it are
 * indented. clear starts a new, empty store; store sets its options (the
 * others stay the defaults) and comes before anything else since the last
 * clear.
 *
 * Times and durations: Prometheus durations (1h30m, 90s, 500ms; units ms,
 * s, m, h, d, w), or seconds with up to three decimals (3599.999); times
 * count from the Unix epoch.
 *
 * Series: name{label="value", ...}, a family of lib/metric.c with labels
 * of its own; a label not given is absent. A selector has the same form
 * and keeps the series whose labels equal those given.
 *
 * Values: numbers, NaN, Inf, -Inf; _ for no sample; a+bxn for the n + 1
 * values a, a+b ... a+n*b (likewise a-bxn; axn is a+0xn); _xn for n
 * missing ones.
 *
 * load: a series' k-th value is a sample at k * interval. The samples
 * loaded are stored when the next eval comes: merged by timestamp into
 * ticks, one store_append() per timestamp, in which the section's other
 * series are absent. So a tick in a later hour compacts the hours before
 * it and makes their rollups, as in the daemon. A tick must come after
 * every tick already stored. The series of all the loads up to the next
 * clear are registered when the store is opened.
 *
 * eval: a series' points are the buckets of the window in order: the k-th
 * is the bucket at first + k * step, first being start rounded down to a
 * multiple of step (Prometheus evaluates at start + k * step; the store's
 * buckets are aligned); _ where the answer has no point (trailing ones may
 * be left out). With expect fail, the query must fail with that errno.
 * Every series of the answer is listed, and no other: an eval with no
 * series lines expects an empty answer. Values compare exactly, except for
 * a gauge of which some loaded value is not a whole number: the store
 * keeps such values, and the rollups' sums of them, to 24 significant bits
 * (storage/precision.c), so those compare within a relative 2^-23. A
 * failure names the file and the line. */
#include "config.h"

#include <ctype.h>
#include <errno.h>
#include <glob.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "storage/store.h"

#define VALUES_MAX 1000000 /* per series line: a day at 1 s fits, a typo does not */
#define SERIES_MAX 64      /* per section */

struct values {
        double *v;
        uint8_t *present;
        size_t n;
};

struct series_line {
        int line;
        struct series_desc desc;
        struct values values;
};

enum cmd_kind { CMD_STORE, CMD_LOAD, CMD_EVAL, CMD_CLEAR };

struct cmd {
        enum cmd_kind kind;
        int line;
        struct store_options opt; /* store */
        int64_t interval_ms;      /* load */
        struct history_query q;   /* eval */
        int expect_errno;         /* eval: the errno the query must fail with, or 0 */
        struct series_line *series;
        size_t n_series;
};

struct file {
        const char *name; /* as the messages give it: relative to the source tree */
        struct cmd *cmds;
        size_t n_cmds;
        int failures;
};

/* Every message starts with the file and the line it is about. */
__attribute__((format(printf, 3, 4))) static void report(struct file *f, int line, const char *fmt, ...) {
        char msg[1024];
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(msg, sizeof(msg), fmt, ap);
        va_end(ap);
        print_error("%s:%d: %s\n", f->name, line, msg);
        f->failures++;
}

static const char *skip_blanks(const char *p) {
        while (*p == ' ' || *p == '\t')
                p++;
        return p;
}

/* The next blank-separated word of *p into out; false at the end. */
static bool next_word(const char **p, char *out, size_t size) {
        const char *s = skip_blanks(*p), *e = s;
        while (*e && *e != ' ' && *e != '\t')
                e++;
        if (e == s || (size_t) (e - s) >= size)
                return false;
        memcpy(out, s, (size_t) (e - s));
        out[e - s] = '\0';
        *p = e;
        return true;
}

/* A time or duration in milliseconds: seconds with up to three decimals,
 * or a Prometheus duration. Decimal seconds are read digit by digit, so
 * that 3599.999 is exactly 3599999 ms. */
static bool parse_ms(const char *s, int64_t *ret) {
        int64_t total = 0;
        if (!*s)
                return false;
        if (strspn(s, "0123456789.") == strlen(s)) {
                const char *dot = strchr(s, '.');
                size_t whole = dot ? (size_t) (dot - s) : strlen(s), frac = dot ? strlen(dot + 1) : 0;
                if (whole == 0 || whole > 12 || frac > 3 || (dot && (frac == 0 || strchr(dot + 1, '.'))))
                        return false;
                for (size_t i = 0; i < whole; i++)
                        total = total * 10 + (s[i] - '0');
                total *= 1000;
                for (size_t i = 0, scale = 100; i < frac; i++, scale /= 10)
                        total += (dot[1 + i] - '0') * (int64_t) scale;
                *ret = total;
                return true;
        }
        static const struct {
                const char *unit;
                int64_t ms;
        } units[] = { { "ms", 1 },      { "s", 1000 },     { "m", 60000 },
                      { "h", 3600000 }, { "d", 86400000 }, { "w", 604800000 } };
        while (*s) {
                int64_t n = 0;
                size_t digits = strspn(s, "0123456789");
                if (digits == 0 || digits > 9)
                        return false;
                for (size_t i = 0; i < digits; i++)
                        n = n * 10 + (s[i] - '0');
                s += digits;
                size_t u = 0;
                while (u < sizeof(units) / sizeof(units[0]) && strncmp(s, units[u].unit, strlen(units[u].unit)) != 0)
                        u++;
                if (u == sizeof(units) / sizeof(units[0]))
                        return false;
                s += strlen(units[u].unit);
                total += n * units[u].ms;
        }
        *ret = total;
        return true;
}

/* metric{label="value", ...}: *given says which labels were written.
 * Returns the end of it, or NULL with the problem in err. */
static const char *parse_series(const char *p, struct series_desc *d, bool *given, char *err, size_t errlen) {
        char name[128];
        size_t len = 0;
        p = skip_blanks(p);
        while (isalnum((unsigned char) p[len]) || p[len] == '_' || p[len] == ':')
                len++;
        if (len == 0 || len >= sizeof(name)) {
                snprintf(err, errlen, "expected a metric name at '%s'", p);
                return NULL;
        }
        memcpy(name, p, len);
        name[len] = '\0';
        int m = metric_lookup(name);
        if (m < 0) {
                snprintf(err, errlen, "'%s' is not a family of lib/metric.c", name);
                return NULL;
        }
        memset(d, 0, sizeof(*d));
        d->metric = (enum metric_id) m;
        for (size_t i = 0; i < METRIC_LABELS_MAX; i++)
                given[i] = false;
        p += len;
        if (*p != '{')
                return p;
        p++;
        for (;;) {
                p = skip_blanks(p);
                if (*p == '}')
                        return p + 1;
                char label[64];
                len = 0;
                while (isalnum((unsigned char) p[len]) || p[len] == '_')
                        len++;
                if (len == 0 || len >= sizeof(label)) {
                        snprintf(err, errlen, "expected a label name at '%s'", p);
                        return NULL;
                }
                memcpy(label, p, len);
                label[len] = '\0';
                int idx = metric_label_index(&metric_table[m], label);
                if (idx < 0 || given[idx]) {
                        snprintf(err, errlen, "'%s' is %s of %s", label, idx < 0 ? "not a label" : "given twice", name);
                        return NULL;
                }
                p = skip_blanks(p + len);
                if (*p++ != '=' || *(p = skip_blanks(p)) != '"') {
                        snprintf(err, errlen, "expected =\"value\" after %s", label);
                        return NULL;
                }
                p++;
                char *out = d->label_values[idx];
                size_t n = 0;
                for (; *p && *p != '"'; p++) {
                        if (*p == '\\' && p[1])
                                p++;
                        if (n + 1 >= SERIES_LABEL_VALUE_MAX) {
                                snprintf(err, errlen, "the value of %s is too long", label);
                                return NULL;
                        }
                        out[n++] = *p;
                }
                if (*p != '"') {
                        snprintf(err, errlen, "the value of %s has no closing quote", label);
                        return NULL;
                }
                given[idx] = true;
                p = skip_blanks(p + 1);
                if (*p == ',')
                        p++;
                else if (*p != '}') {
                        snprintf(err, errlen, "expected , or } after the value of %s", label);
                        return NULL;
                }
        }
}

/* A number at the start of s: NaN, Inf, +Inf, -Inf, or digits with a
 * sign, a point and an exponent (not strtod() on the whole word: it reads
 * 0x5, which here is 0 six times, as hexadecimal). Returns its length. */
static size_t scan_number(const char *s, double *ret) {
        size_t n = 0;
        if (s[n] == '+' || s[n] == '-')
                n++;
        if (strncmp(s + n, "NaN", 3) == 0 || strncmp(s + n, "Inf", 3) == 0) {
                *ret = s[n] == 'N' ? NAN : s[0] == '-' ? -INFINITY : INFINITY;
                return n + 3;
        }
        size_t digits = strspn(s + n, "0123456789.");
        if (digits == 0)
                return 0;
        n += digits;
        if (s[n] == 'e' || s[n] == 'E') {
                size_t e = n + 1 + (s[n + 1] == '+' || s[n + 1] == '-');
                if (isdigit((unsigned char) s[e]))
                        n = e + strspn(s + e, "0123456789");
        }
        char buf[64];
        if (n >= sizeof(buf))
                return 0;
        memcpy(buf, s, n);
        buf[n] = '\0';
        char *end;
        *ret = strtod(buf, &end);
        return *end ? 0 : n;
}

static bool values_push(struct values *vs, double v, bool present) {
        if (vs->n >= VALUES_MAX)
                return false;
        if ((vs->n & (vs->n - 1)) == 0) { /* 0, 1, 2, 4 ...: grow */
                size_t cap = vs->n ? 2 * vs->n : 1;
                double *v2 = realloc(vs->v, cap * sizeof(*v2));
                if (v2)
                        vs->v = v2;
                uint8_t *p2 = realloc(vs->present, cap);
                if (p2)
                        vs->present = p2;
                assert_true(v2 && p2);
        }
        vs->v[vs->n] = v;
        vs->present[vs->n++] = present;
        return true;
}

/* Values in the expanding notation (the top of the file). */
static bool parse_values(const char *p, struct values *vs, char *err, size_t errlen) {
        char word[128];
        while (next_word(&p, word, sizeof(word))) {
                double a = 0, b = 0;
                size_t count = 1;
                bool blank = word[0] == '_';
                size_t n = blank ? 1 : scan_number(word, &a);
                if (n == 0) {
                        snprintf(err, errlen, "'%s' is not a value", word);
                        return false;
                }
                const char *rest = word + n;
                if (!blank && (*rest == '+' || *rest == '-')) {
                        size_t m = rest[1] == '+' || rest[1] == '-' ? 0 : scan_number(rest + 1, &b);
                        if (m == 0 || rest[1 + m] != 'x') {
                                snprintf(err, errlen, "'%s' is not a+bxn", word);
                                return false;
                        }
                        b = *rest == '-' ? -b : b;
                        rest += 1 + m;
                }
                if (*rest == 'x') {
                        size_t digits = strspn(rest + 1, "0123456789");
                        if (digits == 0 || digits > 7 || rest[1 + digits]) {
                                snprintf(err, errlen, "'%s': expected a count after x", word);
                                return false;
                        }
                        /* _xn is n missing samples, axn n + 1 samples. */
                        count = strtoul(rest + 1, NULL, 10) + !blank;
                } else if (*rest) {
                        snprintf(err, errlen, "'%s' is not a value", word);
                        return false;
                }
                for (size_t i = 0; i < count; i++)
                        if (!values_push(vs, blank ? 0 : a + (double) i * b, !blank)) {
                                snprintf(err, errlen, "more than %d values", VALUES_MAX);
                                return false;
                        }
        }
        return true;
}

static const struct {
        const char *name;
        int value;
} errnos[] = { { "EINVAL", EINVAL }, { "E2BIG", E2BIG }, { "EAGAIN", EAGAIN }, { "ECANCELED", ECANCELED } };

static const char *const agg_names[] = { [HISTORY_AGG_AVG] = "avg",
                                         [HISTORY_AGG_MIN] = "min",
                                         [HISTORY_AGG_MAX] = "max",
                                         [HISTORY_AGG_LAST] = "last",
                                         [HISTORY_AGG_SUM] = "sum" };

static bool parse_store(const char *p, struct store_options *o, char *err, size_t errlen) {
        char word[128];
        store_options_init(o);
        o->check_interval_ms = 0; /* as section_init() */
        while (next_word(&p, word, sizeof(word))) {
                char *eq = strchr(word, '=');
                int64_t ms;
                if (!eq || !parse_ms(eq + 1, &ms) || ms <= 0) {
                        snprintf(err, errlen, "'%s' is not name=duration", word);
                        return false;
                }
                *eq = '\0';
                if (strcmp(word, "retention_raw") == 0)
                        o->raw_retention_ms = ms;
                else if (strcmp(word, "retention_1m") == 0)
                        o->minute_retention_ms = ms;
                else if (strcmp(word, "retention_1h") == 0)
                        o->hour_retention_ms = ms;
                else {
                        snprintf(err, errlen, "'%s' is not retention_raw, retention_1m or retention_1h", word);
                        return false;
                }
        }
        return true;
}

static bool expect_word(const char **p, const char *want) {
        char word[32];
        return next_word(p, word, sizeof(word)) && strcmp(word, want) == 0;
}

static bool parse_eval(const char *p, struct history_query *q, char *err, size_t errlen) {
        char from[32], to[32], step[32], word[64];
        struct series_desc d;
        bool given[METRIC_LABELS_MAX];

        memset(q, 0, sizeof(*q));
        if (!expect_word(&p, "eval") || !expect_word(&p, "range") || !expect_word(&p, "from") ||
            !next_word(&p, from, sizeof(from)) || !expect_word(&p, "to") || !next_word(&p, to, sizeof(to)) ||
            !expect_word(&p, "step") || !next_word(&p, step, sizeof(step))) {
                snprintf(err, errlen, "expected eval range from <start> to <end> step <step> <selector>");
                return false;
        }
        if (!parse_ms(from, &q->start_ms) || !parse_ms(to, &q->end_ms) || !parse_ms(step, &q->step_ms)) {
                snprintf(err, errlen, "bad time or duration in '%s', '%s' or '%s'", from, to, step);
                return false;
        }
        p = parse_series(p, &d, given, err, errlen);
        if (!p)
                return false;
        q->metric = d.metric;
        const struct metric_desc *m = &metric_table[d.metric];
        for (size_t i = 0; i < metric_label_count(m); i++) {
                if (!given[i])
                        continue;
                struct history_matcher *mt = &q->matchers[q->n_matchers++];
                snprintf(mt->name, sizeof(mt->name), "%s", m->labels[i]);
                snprintf(mt->value, sizeof(mt->value), "%s", d.label_values[i]);
        }
        while (next_word(&p, word, sizeof(word))) {
                size_t a = 0;
                if (strncmp(word, "agg=", 4) == 0) {
                        while (a < sizeof(agg_names) / sizeof(agg_names[0]) && strcmp(word + 4, agg_names[a]) != 0)
                                a++;
                        if (a == sizeof(agg_names) / sizeof(agg_names[0])) {
                                snprintf(err, errlen, "'%s': agg is avg, min, max, last or sum", word);
                                return false;
                        }
                        q->agg = (enum history_agg) a;
                } else if (strcmp(word, "rate=1") == 0 || strcmp(word, "rate=0") == 0) {
                        q->rate = word[5] == '1';
                } else {
                        snprintf(err, errlen, "'%s' is not agg= or rate=", word);
                        return false;
                }
        }
        return true;
}

static bool parse_expect(const char *p, int *ret, char *err, size_t errlen) {
        char word[32];
        if (!expect_word(&p, "expect") || !expect_word(&p, "fail") || !expect_word(&p, "errno:") ||
            !next_word(&p, word, sizeof(word))) {
                snprintf(err, errlen, "expected expect fail errno: <name>");
                return false;
        }
        for (size_t i = 0; i < sizeof(errnos) / sizeof(errnos[0]); i++)
                if (strcmp(word, errnos[i].name) == 0) {
                        *ret = errnos[i].value;
                        return true;
                }
        snprintf(err, errlen, "'%s' is not an errno a range query returns", word);
        return false;
}

static void free_cmds(struct file *f) {
        for (size_t c = 0; c < f->n_cmds; c++) {
                for (size_t i = 0; i < f->cmds[c].n_series; i++) {
                        free(f->cmds[c].series[i].values.v);
                        free(f->cmds[c].series[i].values.present);
                }
                free(f->cmds[c].series);
        }
        free(f->cmds);
}

/* Reads the whole file into commands; false when any line is wrong (each
 * one reported). */
static bool parse_file(struct file *f, const char *path) {
        FILE *in = fopen(path, "r");
        char *line = NULL, err[512];
        size_t cap = 0, cap_cmds = 0;
        int number = 0;
        ssize_t len;

        if (!in) {
                report(f, 0, "cannot open %s: %s", path, strerror(errno));
                return false;
        }
        while ((len = getline(&line, &cap, in)) >= 0) {
                number++;
                while (len > 0 && (line[len - 1] == '\n' || line[len - 1] == '\r'))
                        line[--len] = '\0';
                const char *p = skip_blanks(line);
                if (*p == '\0' || *p == '#')
                        continue;
                bool indented = p != line;
                err[0] = '\0';
                if (!indented) {
                        if (f->n_cmds == cap_cmds) {
                                cap_cmds = cap_cmds ? 2 * cap_cmds : 16;
                                f->cmds = realloc(f->cmds, cap_cmds * sizeof(*f->cmds));
                                assert_non_null(f->cmds);
                        }
                        struct cmd *c = &f->cmds[f->n_cmds++];
                        *c = (struct cmd){ .line = number };
                        char word[16] = "";
                        const char *rest = p;
                        next_word(&rest, word, sizeof(word));
                        if (strcmp(word, "store") == 0) {
                                c->kind = CMD_STORE;
                                parse_store(rest, &c->opt, err, sizeof(err));
                        } else if (strcmp(word, "load") == 0) {
                                c->kind = CMD_LOAD;
                                char interval[32];
                                if (!next_word(&rest, interval, sizeof(interval)) ||
                                    !parse_ms(interval, &c->interval_ms) || c->interval_ms <= 0 || *skip_blanks(rest))
                                        snprintf(err, sizeof(err), "expected load <interval>");
                        } else if (strcmp(word, "eval") == 0) {
                                c->kind = CMD_EVAL;
                                parse_eval(p, &c->q, err, sizeof(err));
                        } else if (strcmp(word, "clear") == 0 && !*skip_blanks(rest)) {
                                c->kind = CMD_CLEAR;
                        } else {
                                snprintf(err, sizeof(err), "'%s' is not store, load, eval or clear", word);
                        }
                } else if (f->n_cmds == 0 ||
                           (f->cmds[f->n_cmds - 1].kind != CMD_LOAD && f->cmds[f->n_cmds - 1].kind != CMD_EVAL)) {
                        snprintf(err, sizeof(err), "an indented line belongs under load or eval");
                } else if (strncmp(p, "expect", 6) == 0) {
                        struct cmd *c = &f->cmds[f->n_cmds - 1];
                        if (c->kind != CMD_EVAL)
                                snprintf(err, sizeof(err), "expect belongs under eval");
                        else
                                parse_expect(p, &c->expect_errno, err, sizeof(err));
                } else {
                        struct cmd *c = &f->cmds[f->n_cmds - 1];
                        bool given[METRIC_LABELS_MAX];
                        struct series_line sl = { .line = number };
                        const char *values = parse_series(p, &sl.desc, given, err, sizeof(err));
                        if (values && parse_values(values, &sl.values, err, sizeof(err))) {
                                c->series = realloc(c->series, (c->n_series + 1) * sizeof(*c->series));
                                assert_non_null(c->series);
                                c->series[c->n_series++] = sl;
                        } else {
                                free(sl.values.v);
                                free(sl.values.present);
                        }
                }
                if (err[0])
                        report(f, number, "%s", err);
        }
        free(line);
        fclose(in);
        if (f->n_cmds == 0)
                report(f, number, "no commands");
        return f->failures == 0;
}

static bool same_series(const struct series_desc *a, const struct series_desc *b) {
        if (a->metric != b->metric)
                return false;
        for (size_t i = 0; i < METRIC_LABELS_MAX; i++)
                if (strcmp(a->label_values[i], b->label_values[i]) != 0)
                        return false;
        return true;
}

/* name{label="value",...} as the files write it. */
static const char *series_name(const struct series_desc *d, char *out, size_t size) {
        const struct metric_desc *m = &metric_table[d->metric];
        size_t n = (size_t) snprintf(out, size, "%s{", m->name);
        const char *sep = "";
        for (size_t i = 0; i < metric_label_count(m) && n < size; i++)
                if (d->label_values[i][0]) {
                        n += (size_t) snprintf(out + n, size - n, "%s%s=\"%s\"", sep, m->labels[i], d->label_values[i]);
                        sep = ",";
                }
        if (n < size)
                snprintf(out + n, size - n, "}");
        return out;
}

/* Milliseconds as the files write seconds. */
static const char *time_name(int64_t ms, char *out, size_t size) {
        if (ms % 1000 == 0)
                snprintf(out, size, "%llds", (long long) (ms / 1000));
        else
                snprintf(out, size, "%lld.%03llds", (long long) (ms / 1000), (long long) (ms % 1000));
        return out;
}

/* One store and its series, from the start or a clear to the next. */
struct section {
        struct store_options opt;
        char path[128];
        struct store *s;
        struct series_desc series[SERIES_MAX];
        bool fractional[SERIES_MAX]; /* a gauge with a value that is not whole */
        size_t n_series;
        struct loaded {
                int64_t ts;
                size_t series;
                double v;
                int line;
        } * pending;
        size_t n_pending, cap_pending;
        int64_t last_ts; /* of the last tick stored; -1 before the first */
        bool broken;     /* a load failed: the section's evals would say nothing */
};

static size_t section_series(struct section *sec, const struct series_desc *d) {
        for (size_t i = 0; i < sec->n_series; i++)
                if (same_series(&sec->series[i], d))
                        return i;
        assert_true(sec->n_series < SERIES_MAX);
        sec->series[sec->n_series] = *d;
        return sec->n_series++;
}

/* Opens the section's store with every series its loads name. */
static void section_open(struct file *f, struct section *sec, size_t from, const char *dir, int number) {
        for (size_t c = from; c < f->n_cmds && f->cmds[c].kind != CMD_CLEAR; c++)
                for (size_t i = 0; f->cmds[c].kind == CMD_LOAD && i < f->cmds[c].n_series; i++)
                        section_series(sec, &f->cmds[c].series[i].desc);
        snprintf(sec->path, sizeof(sec->path), "%s/section-%d.db", dir, number);
        assert_int_equal(store_open_with(sec->path, &sec->opt, &sec->s), 0);
        assert_int_equal(store_register_series(sec->s, sec->series, sec->n_series), 0);
}

/* An empty section with the default options, but no checking thread:
 * the files run in a second. */
static void section_init(struct section *sec) {
        *sec = (struct section){ .last_ts = -1 };
        store_options_init(&sec->opt);
        sec->opt.check_interval_ms = 0;
}

static void section_close(struct section *sec) {
        store_close(sec->s);
        free(sec->pending);
        section_init(sec);
}

static void load(struct section *sec, const struct cmd *c) {
        for (size_t i = 0; i < c->n_series; i++) {
                const struct series_line *sl = &c->series[i];
                size_t idx = section_series(sec, &sl->desc);
                for (size_t k = 0; k < sl->values.n; k++) {
                        if (!sl->values.present[k])
                                continue;
                        double v = sl->values.v[k];
                        if (sec->n_pending == sec->cap_pending) {
                                sec->cap_pending = sec->cap_pending ? 2 * sec->cap_pending : 1024;
                                sec->pending = realloc(sec->pending, sec->cap_pending * sizeof(*sec->pending));
                                assert_non_null(sec->pending);
                        }
                        sec->pending[sec->n_pending++] = (struct loaded){
                                .ts = (int64_t) k * c->interval_ms, .series = idx, .v = v, .line = sl->line
                        };
                        if (metric_table[sl->desc.metric].type != METRIC_COUNTER && isfinite(v) && v != floor(v))
                                sec->fractional[idx] = true;
                }
        }
}

static int loaded_cmp(const void *a, const void *b) {
        const struct loaded *x = a, *y = b;
        if (x->ts != y->ts)
                return x->ts < y->ts ? -1 : 1;
        return x->series < y->series ? -1 : x->series > y->series;
}

/* Stores what the loads since the last eval gave: a tick per timestamp. */
static void flush(struct file *f, struct section *sec) {
        double values[SERIES_MAX];
        uint8_t valid[SERIES_MAX];
        char t[32];

        if (sec->n_pending == 0)
                return;
        qsort(sec->pending, sec->n_pending, sizeof(*sec->pending), loaded_cmp);
        for (size_t at = 0; at < sec->n_pending && !sec->broken;) {
                int64_t ts = sec->pending[at].ts;
                memset(valid, 0, sizeof(valid));
                memset(values, 0, sizeof(values)); /* the store reads (and ignores) those not valid */
                if (ts <= sec->last_ts) {
                        report(f, sec->pending[at].line, "a sample at %s is not after the last tick stored",
                               time_name(ts, t, sizeof(t)));
                        sec->broken = true;
                        break;
                }
                for (; at < sec->n_pending && sec->pending[at].ts == ts; at++) {
                        const struct loaded *l = &sec->pending[at];
                        if (valid[l->series]) {
                                report(f, l->line, "a second sample of the series at %s", time_name(ts, t, sizeof(t)));
                                sec->broken = true;
                        }
                        values[l->series] = l->v;
                        valid[l->series] = 1;
                }
                int r = store_append(sec->s, ts, values, valid, sec->n_series);
                if (r < 0) {
                        report(f, sec->pending[at - 1].line, "store_append() at %s: %s", time_name(ts, t, sizeof(t)),
                               strerror(-r));
                        sec->broken = true;
                }
                sec->last_ts = ts;
        }
        sec->n_pending = 0;
}

static bool value_matches(double got, double want, bool fractional) {
        if (isnan(want) || isnan(got))
                return isnan(want) && isnan(got);
        if (got == want)
                return true;
        /* 24 significant bits of each value summed: within 2^-23 of the sum. */
        return fractional && isfinite(want) && fabs(got - want) <= ldexp(fabs(want), -23);
}

static void eval(struct file *f, struct section *sec, const struct cmd *c) {
        const struct history_query *q = &c->q;
        struct history h = { &store_history_ops, sec->s };
        struct history_result *res = NULL;
        char name[256], t[32];

        int r = h.ops->query_range(h.impl, q, &res);
        if (c->expect_errno) {
                if (r != -c->expect_errno)
                        report(f, c->line, "the query answered %s, not the error %s",
                               r == 0 ? "with success" : strerror(-r), strerror(c->expect_errno));
                history_result_free(res);
                return;
        }
        if (r < 0) {
                report(f, c->line, "the query failed: %s", strerror(-r));
                return;
        }
        int64_t first = q->start_ms - q->start_ms % q->step_ms;
        size_t n_buckets = (size_t) ((q->end_ms - first) / q->step_ms) + 1;
        bool *listed = calloc(res->n_series + 1, sizeof(*listed));
        uint8_t *have = malloc(n_buckets);
        double *value = malloc(n_buckets * sizeof(*value));
        assert_true(listed && have && value);
        for (size_t e = 0; e < c->n_series; e++) {
                const struct series_line *want = &c->series[e];
                series_name(&want->desc, name, sizeof(name));
                if (want->values.n > n_buckets) {
                        report(f, want->line, "%s: %zu points listed, the window has %zu buckets", name, want->values.n,
                               n_buckets);
                        continue;
                }
                const struct history_series *got = NULL;
                for (size_t i = 0; i < res->n_series && !got; i++)
                        if (same_series(&res->series[i].desc, &want->desc) && !listed[i]) {
                                got = &res->series[i];
                                listed[i] = true;
                        }
                if (!got) {
                        report(f, want->line, "%s is not in the answer", name);
                        continue;
                }
                bool fractional = false;
                for (size_t i = 0; i < sec->n_series; i++)
                        fractional |= same_series(&sec->series[i], &want->desc) && sec->fractional[i] && !q->rate;
                /* The answer's points by bucket, then bucket by bucket against the file. */
                memset(have, 0, n_buckets);
                for (size_t p = 0; p < got->n_points; p++) {
                        int64_t ts = got->points[p].timestamp_ms;
                        size_t k = (size_t) ((ts - first) / q->step_ms);
                        if (ts < first || (ts - first) % q->step_ms != 0 || k >= n_buckets || have[k]) {
                                report(f, want->line, "%s: a point at %s, not a bucket of the window or twice", name,
                                       time_name(ts, t, sizeof(t)));
                                continue;
                        }
                        have[k] = 1;
                        value[k] = got->points[p].value;
                }
                for (size_t k = 0; k < n_buckets; k++) {
                        const char *at = time_name(first + (int64_t) k * q->step_ms, t, sizeof(t));
                        bool expected = k < want->values.n && want->values.present[k];
                        if (have[k] && !expected)
                                report(f, want->line, "%s at %s: got %.17g, want no point", name, at, value[k]);
                        else if (!have[k] && expected)
                                report(f, want->line, "%s at %s: got no point, want %.17g", name, at,
                                       want->values.v[k]);
                        else if (have[k] && !value_matches(value[k], want->values.v[k], fractional))
                                report(f, want->line, "%s at %s: got %.17g, want %.17g", name, at, value[k],
                                       want->values.v[k]);
                }
        }
        for (size_t i = 0; i < res->n_series; i++)
                if (!listed[i])
                        report(f, c->line, "%s is in the answer, with %zu points, and not listed",
                               series_name(&res->series[i].desc, name, sizeof(name)), res->series[i].n_points);
        free(listed);
        free(have);
        free(value);
        history_result_free(res);
}

static void run_file(void **state) {
        const char *path = *state;
        const char *top = strstr(path, "tests/data/query/");
        struct file f = { .name = top ? top : path };
        struct section sec;
        char dir[] = "/tmp/neurond-test-query-XXXXXX", cmd[128];
        int sections = 0;

        assert_non_null(mkdtemp(dir));
        section_init(&sec);
        if (parse_file(&f, path)) {
                for (size_t i = 0; i < f.n_cmds; i++) {
                        const struct cmd *c = &f.cmds[i];
                        if (c->kind == CMD_CLEAR) {
                                section_close(&sec);
                                continue;
                        }
                        if (c->kind == CMD_STORE) {
                                if (sec.s)
                                        report(&f, c->line, "store comes before the section's loads and evals");
                                sec.opt = c->opt;
                                continue;
                        }
                        if (!sec.s)
                                section_open(&f, &sec, i, dir, ++sections);
                        if (c->kind == CMD_LOAD)
                                load(&sec, c);
                        else if ((flush(&f, &sec), !sec.broken))
                                eval(&f, &sec, c);
                }
                section_close(&sec);
        }
        free_cmds(&f);
        snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
        assert_int_equal(system(cmd), 0);
        if (f.failures)
                fail_msg("%s: %d failure%s (above)", f.name, f.failures, f.failures == 1 ? "" : "s");
}

int main(void) {
        glob_t g;
        int r = glob(TOP_SRCDIR "/tests/data/query/*.test", 0, NULL, &g);
        if (r != 0 || g.gl_pathc == 0) {
                fprintf(stderr, "no files in " TOP_SRCDIR "/tests/data/query\n");
                return 1;
        }
        struct CMUnitTest *tests = calloc(g.gl_pathc, sizeof(*tests));
        if (!tests)
                return 1;
        for (size_t i = 0; i < g.gl_pathc; i++) {
                const char *slash = strrchr(g.gl_pathv[i], '/');
                tests[i] =
                        (struct CMUnitTest){ .name = slash + 1, .test_func = run_file, .initial_state = g.gl_pathv[i] };
        }
        r = _cmocka_run_group_tests("query-files", tests, g.gl_pathc, NULL, NULL);
        free(tests);
        globfree(&g);
        return r;
}
