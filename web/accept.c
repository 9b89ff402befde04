#include "config.h"

#include <stddef.h>
#include <string.h>
#include <strings.h>

#include "web/accept.h"

#define Q_INVALID (-1)

static bool is_space(char c) {
        return c == ' ' || c == '\t';
}

/* [s, e) with the blanks on both ends removed. */
static void trim(const char **s, const char **e) {
        while (*s < *e && is_space(**s))
                (*s)++;
        while (*e > *s && is_space((*e)[-1]))
                (*e)--;
}

static bool token_is(const char *s, const char *e, const char *word) {
        size_t n = strlen(word);
        return (size_t) (e - s) == n && strncasecmp(s, word, n) == 0;
}

/* An RFC 9110 qvalue ("0", "0.5", "1", "1.000") in thousandths, or Q_INVALID. */
static int parse_q(const char *s, const char *e) {
        if (s == e || (*s != '0' && *s != '1'))
                return Q_INVALID;
        int q = (*s - '0') * 1000;
        s++;
        if (s == e)
                return q;
        if (*s != '.' || e - s > 4)
                return Q_INVALID;
        int scale = 100;
        for (s++; s < e; s++, scale /= 10) {
                if (*s < '0' || *s > '9')
                        return Q_INVALID;
                q += (*s - '0') * scale;
        }
        return q > 1000 ? Q_INVALID : q;
}

/* One element of a comma list: the value before the first ';' and the
 * parameters after it. Fills the q-value (default 1000) and, when asked,
 * the version parameter; returns false when a parameter is malformed. */
static bool parse_element(const char *s, const char *e, const char **ret_value_end, int *ret_q,
                          const char **ret_version, const char **ret_version_end) {
        const char *semi = memchr(s, ';', (size_t) (e - s));
        const char *value_end = semi ? semi : e;
        int q = 1000;
        const char *version = NULL, *version_end = NULL;

        while (semi) {
                const char *p = semi + 1;
                semi = memchr(p, ';', (size_t) (e - p));
                const char *pe = semi ? semi : e;
                const char *eq = memchr(p, '=', (size_t) (pe - p));
                if (!eq)
                        return false;
                const char *ks = p, *ke = eq, *vs = eq + 1, *ve = pe;
                trim(&ks, &ke);
                trim(&vs, &ve);
                if (ve - vs >= 2 && *vs == '"' && ve[-1] == '"') {
                        vs++;
                        ve--;
                }
                if (token_is(ks, ke, "q")) {
                        q = parse_q(vs, ve);
                        if (q == Q_INVALID)
                                return false;
                } else if (token_is(ks, ke, "version")) {
                        version = vs;
                        version_end = ve;
                }
        }
        *ret_value_end = value_end;
        *ret_q = q;
        if (ret_version) {
                *ret_version = version;
                *ret_version_end = version_end;
        }
        return true;
}

enum accept_format accept_format(const char *accept) {
        enum accept_format best = ACCEPT_TEXT;
        int best_q = 0;

        if (!accept)
                return ACCEPT_TEXT;
        const char *end = accept + strlen(accept);
        for (const char *s = accept; s < end;) {
                const char *comma = memchr(s, ',', (size_t) (end - s));
                const char *e = comma ? comma : end;
                const char *value_end, *version, *version_end;
                int q;

                if (parse_element(s, e, &value_end, &q, &version, &version_end)) {
                        const char *vs = s, *ve = value_end;
                        trim(&vs, &ve);
                        bool have_version = version != NULL;
                        int format = -1;
                        if (token_is(vs, ve, "application/openmetrics-text") &&
                            (!have_version || token_is(version, version_end, "1.0.0")))
                                format = ACCEPT_OPENMETRICS;
                        else if (token_is(vs, ve, "text/plain") &&
                                 (!have_version || token_is(version, version_end, "0.0.4")))
                                format = ACCEPT_TEXT;
                        else if (token_is(vs, ve, "text/*") || token_is(vs, ve, "*/*"))
                                format = ACCEPT_TEXT;
                        if (format >= 0 && q > best_q) {
                                best = (enum accept_format) format;
                                best_q = q;
                        }
                }
                s = e + 1;
        }
        return best;
}

bool accept_gzip(const char *accept_encoding) {
        int gzip_q = -1, star_q = -1;

        if (!accept_encoding)
                return false;
        const char *end = accept_encoding + strlen(accept_encoding);
        for (const char *s = accept_encoding; s < end;) {
                const char *comma = memchr(s, ',', (size_t) (end - s));
                const char *e = comma ? comma : end;
                const char *value_end;
                int q;

                if (parse_element(s, e, &value_end, &q, NULL, NULL)) {
                        const char *vs = s, *ve = value_end;
                        trim(&vs, &ve);
                        if (token_is(vs, ve, "gzip") || token_is(vs, ve, "x-gzip"))
                                gzip_q = q > gzip_q ? q : gzip_q;
                        else if (token_is(vs, ve, "*"))
                                star_q = q;
                }
                s = e + 1;
        }
        return gzip_q > 0 || (gzip_q < 0 && star_q > 0);
}
