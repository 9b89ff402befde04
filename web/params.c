#include "config.h"

#include <errno.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "lib/parse.h"
#include "web/params.h"

/* Times before 1970 or after 9999 are refused: no caller means them. */
#define TIME_MAX_MS 253402300799999LL

static bool all_digits(const char *s, size_t n) {
        for (size_t i = 0; i < n; i++)
                if (s[i] < '0' || s[i] > '9')
                        return false;
        return n > 0;
}

static int parse_rfc3339(const char *text, int64_t *ret_ms) {
        int year, mon, day, hour, min, sec, consumed = 0;
        int64_t frac_ms = 0;

        if (strlen(text) < 20 || text[4] != '-' || text[7] != '-' || (text[10] != 'T' && text[10] != 't') ||
            text[13] != ':' || text[16] != ':' || !all_digits(text, 4) || !all_digits(text + 5, 2) ||
            !all_digits(text + 8, 2) || !all_digits(text + 11, 2) || !all_digits(text + 14, 2) ||
            !all_digits(text + 17, 2))
                return -EINVAL;
        if (sscanf(text, "%4d-%2d-%2d%*c%2d:%2d:%2d%n", &year, &mon, &day, &hour, &min, &sec, &consumed) != 6 ||
            consumed != 19)
                return -EINVAL;
        const char *p = text + 19;
        if (*p == '.') {
                size_t n = strspn(p + 1, "0123456789");
                if (n == 0 || n > 9)
                        return -EINVAL;
                int64_t scale = 100;
                for (size_t i = 0; i < n && i < 3; i++, scale /= 10)
                        frac_ms += (p[1 + i] - '0') * scale;
                p += 1 + n;
        }
        int64_t offset_s = 0;
        if (*p == 'Z' || *p == 'z') {
                p++;
        } else if ((*p == '+' || *p == '-') && all_digits(p + 1, 2) && p[3] == ':' && all_digits(p + 4, 2)) {
                int oh = (p[1] - '0') * 10 + (p[2] - '0'), om = (p[4] - '0') * 10 + (p[5] - '0');
                if (oh > 23 || om > 59)
                        return -EINVAL;
                offset_s = (*p == '+' ? 1 : -1) * (oh * 3600 + om * 60);
                p += 6;
        } else {
                return -EINVAL;
        }
        if (*p)
                return -EINVAL;
        static const int days_in_month[] = { 31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31 };
        if (year < 1970 || mon < 1 || mon > 12 || day < 1 || day > days_in_month[mon - 1] || hour > 23 || min > 59 ||
            sec > 60)
                return -EINVAL;
        struct tm tm = {
                .tm_year = year - 1900, .tm_mon = mon - 1, .tm_mday = day, .tm_hour = hour, .tm_min = min, .tm_sec = sec
        };
        time_t t = timegm(&tm);
        /* timegm normalises 30 February into March: refuse such dates. */
        if (tm.tm_mday != day)
                return -EINVAL;
        int64_t ms = ((int64_t) t - offset_s) * 1000 + frac_ms;
        if (ms < 0)
                return -EINVAL;
        *ret_ms = ms;
        return 0;
}

int params_parse_time(const char *text, int64_t *ret_ms) {
        int64_t ms;
        int r = strchr(text, '-') || strchr(text, 'T') ? parse_rfc3339(text, &ms) : parse_seconds_ms(text, &ms);
        if (r < 0 || ms > TIME_MAX_MS)
                return -EINVAL;
        *ret_ms = ms;
        return 0;
}

int params_parse_time_at(const char *text, int64_t now_ms, int64_t *ret_ms) {
        int64_t ago;
        if (strcmp(text, "now") == 0) {
                *ret_ms = now_ms;
                return 0;
        }
        /* "-1h": a duration, never seconds, so that "-5" is no typo for a time. */
        if (text[0] == '-') {
                if (parse_duration_ms(text + 1, &ago) < 0 || ago <= 0 || ago > TIME_MAX_MS)
                        return -EINVAL;
                *ret_ms = now_ms - ago;
                return 0;
        }
        return params_parse_time(text, ret_ms);
}

int params_parse_step(const char *text, int64_t *ret_ms) {
        int64_t ms;
        if (parse_duration_ms(text, &ms) < 0 && parse_seconds_ms(text, &ms) < 0)
                return -EINVAL;
        if (ms <= 0)
                return -EINVAL;
        *ret_ms = ms;
        return 0;
}

static int parse_agg(const char *text, enum history_agg *ret) {
        static const char *const names[] = {
                [HISTORY_AGG_AVG] = "avg",   [HISTORY_AGG_MIN] = "min", [HISTORY_AGG_MAX] = "max",
                [HISTORY_AGG_LAST] = "last", [HISTORY_AGG_SUM] = "sum",
        };
        for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
                if (strcmp(text, names[i]) == 0) {
                        *ret = (enum history_agg) i;
                        return 0;
                }
        return -EINVAL;
}

static const struct param *find_param(const struct param *params, size_t n, const char *key) {
        for (size_t i = 0; i < n; i++)
                if (strcmp(params[i].key, key) == 0)
                        return &params[i];
        return NULL;
}

int params_parse_query_range(const struct param *params, size_t n, int64_t now_ms, struct history_query *q, char *err,
                             size_t errlen) {
        struct history_query out = { .agg = HISTORY_AGG_AVG };
        const struct param *p;
        bool have_step = false;

        for (size_t i = 0; i < n; i++) {
                if (strlen(params[i].value) > PARAMS_VALUE_MAX) {
                        snprintf(err, errlen, "parameter '%.64s': value longer than %d bytes", params[i].key,
                                 PARAMS_VALUE_MAX);
                        return -EINVAL;
                }
                for (size_t j = 0; j < i; j++)
                        if (strcmp(params[i].key, params[j].key) == 0) {
                                snprintf(err, errlen, "parameter '%.64s' given more than once", params[i].key);
                                return -EINVAL;
                        }
        }

        p = find_param(params, n, "metric");
        if (!p || !*p->value) {
                snprintf(err, errlen, "parameter 'metric' is required");
                return -EINVAL;
        }
        int metric = metric_lookup(p->value);
        if (metric < 0) {
                snprintf(err, errlen, "parameter 'metric': unknown metric '%.64s'", p->value);
                return -EINVAL;
        }
        out.metric = metric;
        const struct metric_desc *m = &metric_table[metric];

        out.end_ms = now_ms;
        if ((p = find_param(params, n, "end")) && params_parse_time(p->value, &out.end_ms) < 0) {
                snprintf(err, errlen, "parameter 'end': '%.64s' is not a Unix time or RFC 3339 time", p->value);
                return -EINVAL;
        }
        out.start_ms = out.end_ms > 3600 * 1000 ? out.end_ms - 3600 * 1000 : 0;
        if ((p = find_param(params, n, "start"))) {
                if (params_parse_time(p->value, &out.start_ms) < 0) {
                        snprintf(err, errlen, "parameter 'start': '%.64s' is not a Unix time or RFC 3339 time",
                                 p->value);
                        return -EINVAL;
                }
        }
        if (out.start_ms > out.end_ms) {
                snprintf(err, errlen, "parameter 'start': start is after end");
                return -EINVAL;
        }
        if ((p = find_param(params, n, "step"))) {
                if (params_parse_step(p->value, &out.step_ms) < 0) {
                        snprintf(err, errlen,
                                 "parameter 'step': '%.64s' is not a positive duration or number of seconds", p->value);
                        return -EINVAL;
                }
                have_step = true;
        }
        if (!have_step) {
                int64_t span_s = (out.end_ms - out.start_ms) / 1000;
                out.step_ms = (span_s / 250 + 1) * 1000;
        }
        if ((out.end_ms - out.start_ms) / out.step_ms + 1 > PARAMS_MAX_POINTS) {
                snprintf(err, errlen,
                         "parameter 'step': exceeded maximum resolution of %d points per series; increase step",
                         PARAMS_MAX_POINTS);
                return -EINVAL;
        }
        if ((p = find_param(params, n, "agg")) && parse_agg(p->value, &out.agg) < 0) {
                snprintf(err, errlen, "parameter 'agg': '%.64s' is not avg, min, max, last or sum", p->value);
                return -EINVAL;
        }

        if ((p = find_param(params, n, "rate"))) {
                if (strcmp(p->value, "1") != 0 && strcmp(p->value, "0") != 0) {
                        snprintf(err, errlen, "parameter 'rate': '%.64s' is not 0 or 1", p->value);
                        return -EINVAL;
                }
                out.rate = p->value[0] == '1';
                if (out.rate && m->type != METRIC_COUNTER) {
                        snprintf(err, errlen, "parameter 'rate': %s is not a counter", m->name);
                        return -EINVAL;
                }
        }

        for (size_t i = 0; i < n; i++) {
                const char *key = params[i].key;
                if (!strcmp(key, "metric") || !strcmp(key, "start") || !strcmp(key, "end") || !strcmp(key, "step") ||
                    !strcmp(key, "agg") || !strcmp(key, "rate"))
                        continue;
                if (metric_label_index(m, key) < 0) {
                        snprintf(err, errlen, "parameter '%.64s': not a parameter nor a label of %s", key, m->name);
                        return -EINVAL;
                }
                if (strlen(params[i].value) >= HISTORY_LABEL_VALUE_MAX) {
                        snprintf(err, errlen, "parameter '%.64s': label value too long", key);
                        return -EINVAL;
                }
                struct history_matcher *mt = &out.matchers[out.n_matchers++];
                snprintf(mt->name, sizeof(mt->name), "%s", key);
                snprintf(mt->value, sizeof(mt->value), "%s", params[i].value);
        }
        *q = out;
        return 0;
}
