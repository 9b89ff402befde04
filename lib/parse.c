#include "config.h"

#include <errno.h>
#include <string.h>

#include "lib/parse.h"

int parse_u64(const char *text, size_t len, uint64_t *ret) {
        uint64_t v = 0;

        if (len == 0)
                return -EINVAL;
        for (size_t i = 0; i < len; i++) {
                if (text[i] < '0' || text[i] > '9')
                        return -EINVAL;
                unsigned d = (unsigned) (text[i] - '0');
                if (v > (UINT64_MAX - d) / 10)
                        return -ERANGE;
                v = v * 10 + d;
        }
        *ret = v;
        return 0;
}

int parse_uint_range(const char *text, uint64_t min, uint64_t max, uint64_t *ret) {
        uint64_t v;
        int r = parse_u64(text, strlen(text), &v);

        if (r < 0)
                return r;
        if (v < min || v > max)
                return -ERANGE;
        *ret = v;
        return 0;
}

int parse_seconds_ms(const char *text, int64_t *ret_ms) {
        const char *dot = strchr(text, '.');
        size_t int_len = dot ? (size_t) (dot - text) : strlen(text);
        uint64_t seconds, frac = 0;

        if (int_len > 15 || parse_u64(text, int_len, &seconds) < 0)
                return -EINVAL;
        int64_t ms = (int64_t) seconds * 1000;
        if (dot) {
                size_t frac_len = strlen(dot + 1);
                if (frac_len > 9 || parse_u64(dot + 1, frac_len, &frac) < 0)
                        return -EINVAL;
                for (size_t i = frac_len; i < 3; i++)
                        frac *= 10;
                for (size_t i = 3; i < frac_len; i++)
                        frac /= 10;
                ms += (int64_t) frac;
        }
        *ret_ms = ms;
        return 0;
}

int parse_duration_ms(const char *text, int64_t *ret_ms) {
        static const struct {
                const char *suffix;
                int64_t ms;
        } units[] = {
                /* "ms" before "m" so the longer suffix wins. */
                { "ms", 1 }, { "s", 1000 }, { "m", 60000 }, { "h", 3600000 }, { "d", 86400000 }, { "w", 604800000 },
        };
        const char *p = text;
        int64_t total = 0;

        if (!text || !*text)
                return -EINVAL;
        while (*p) {
                size_t digits = strspn(p, "0123456789");
                uint64_t n;
                if (digits > 18 || parse_u64(p, digits, &n) < 0)
                        return -EINVAL;
                p += digits;
                size_t u;
                for (u = 0; u < sizeof(units) / sizeof(units[0]); u++) {
                        size_t len = strlen(units[u].suffix);
                        if (strncmp(p, units[u].suffix, len) == 0 && !(p[len] >= 'a' && p[len] <= 'z')) {
                                p += len;
                                break;
                        }
                }
                if (u == sizeof(units) / sizeof(units[0]))
                        return -EINVAL;
                if ((int64_t) n > (INT64_MAX - total) / units[u].ms)
                        return -EINVAL;
                total += (int64_t) n * units[u].ms;
        }
        *ret_ms = total;
        return 0;
}

int parse_size_bytes(const char *text, uint64_t *ret) {
        static const char units[] = "KMGT";
        size_t digits = strspn(text, "0123456789");
        const char *u = text[digits] ? strchr(units, text[digits]) : NULL;
        uint64_t v;

        if (parse_u64(text, digits, &v) < 0 || (text[digits] && (!u || text[digits + 1])))
                return -EINVAL;
        for (int shift = u ? (int) (u - units) + 1 : 0; shift > 0; shift--) {
                if (v > UINT64_MAX / 1024)
                        return -EINVAL;
                v *= 1024;
        }
        *ret = v;
        return 0;
}

int parse_bool(const char *text, bool *ret) {
        static const char *const yes[] = { "true", "yes", "on", "1" }, *const no[] = { "false", "no", "off", "0" };

        for (size_t i = 0; i < sizeof(yes) / sizeof(yes[0]); i++) {
                if (strcmp(text, yes[i]) == 0) {
                        *ret = true;
                        return 0;
                }
                if (strcmp(text, no[i]) == 0) {
                        *ret = false;
                        return 0;
                }
        }
        return -EINVAL;
}
