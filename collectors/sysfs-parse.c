#include "config.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "collectors/sysfs.h"
#include "lib/buf.h"
#include "lib/parse.h"

/* A decimal with an optional fraction ("12.50"), as the driver prints with
 * %.2f; parsed by hand so that "nan", "inf" or hex never get through. */
static int parse_decimal(const char *p, size_t len, double *ret) {
        const char *dot = memchr(p, '.', len);
        size_t int_len = dot ? (size_t) (dot - p) : len;
        uint64_t ip, fp = 0;
        double scale = 1;

        int r = parse_u64(p, int_len, &ip);
        if (r < 0)
                return r;
        if (dot) {
                size_t frac_len = len - int_len - 1;
                if (frac_len == 0 || frac_len > 9)
                        return -EINVAL;
                r = parse_u64(dot + 1, frac_len, &fp);
                if (r < 0)
                        return r;
                for (size_t i = 0; i < frac_len; i++)
                        scale *= 10;
        }
        *ret = (double) ip + (double) fp / scale;
        return 0;
}

/* Strips one trailing newline; sysfs attributes end in exactly one. */
static size_t chomp(const char *buf, size_t len) {
        return len > 0 && buf[len - 1] == '\n' ? len - 1 : len;
}

int sysfs_parse_u64(const char *buf, size_t len, uint64_t *ret) {
        len = chomp(buf, len);
        if (len == 0)
                return -ENODATA;
        return parse_u64(buf, len, ret);
}

int sysfs_parse_string(const char *buf, size_t len, char *out, size_t size) {
        len = chomp(buf, len);
        if (len == 0)
                return -ENODATA;
        for (size_t i = 0; i < len; i++)
                if ((unsigned char) buf[i] < 0x20 || buf[i] == 0x7f)
                        return -EINVAL;
        if (len >= size || len >= SYSFS_STRING_MAX)
                return -ERANGE;
        /* Bytes that are not UTF-8 (a damaged or hostile attribute) become
         * U+FFFD: every string neurond passes on is valid UTF-8, which
         * Prometheus requires of label values. */
        char text[SYSFS_STRING_MAX], clean[3 * SYSFS_STRING_MAX];
        memcpy(text, buf, len);
        text[len] = '\0';
        size_t clean_len = utf8_sanitize(clean, sizeof(clean), text);
        if (clean_len >= size)
                return -ERANGE;
        memcpy(out, clean, clean_len + 1);
        return 0;
}

/* Splits buf at commas into exactly n fields; returns 0 or -EINVAL. */
static int split_fields(const char *buf, size_t len, size_t n, const char **start, size_t *flen) {
        size_t f = 0, at = 0;
        for (size_t i = 0; i <= len; i++) {
                if (i < len && buf[i] != ',')
                        continue;
                if (f == n)
                        return -EINVAL;
                start[f] = buf + at;
                flen[f] = i - at;
                f++;
                at = i + 1;
        }
        return f == n ? 0 : -EINVAL;
}

static bool span_is(const char *p, size_t len, const char *s) {
        return strlen(s) == len && memcmp(p, s, len) == 0;
}

int sysfs_parse_power(const char *buf, size_t len, struct sysfs_power *ret) {
        const char *f[5];
        size_t fl[5];
        struct sysfs_power p;
        int r;

        len = chomp(buf, len);
        if (len == 0)
                return -ENODATA;
        r = split_fields(buf, len, 5, f, fl);
        if (r < 0)
                return r;
        if (span_is(f[0], fl[0], "POWER_STATUS_VALID"))
                p.status = SYSFS_POWER_VALID;
        else if (span_is(f[0], fl[0], "POWER_STATUS_NO_DATA"))
                p.status = SYSFS_POWER_NO_DATA;
        else if (span_is(f[0], fl[0], "POWER_STATUS_INVALID"))
                p.status = SYSFS_POWER_INVALID;
        else
                return -EINVAL;
        r = parse_u64(f[1], fl[1], &p.epoch_seconds);
        if (r < 0)
                return -EINVAL;
        if (parse_decimal(f[2], fl[2], &p.min) < 0 || parse_decimal(f[3], fl[3], &p.max) < 0 ||
            parse_decimal(f[4], fl[4], &p.avg) < 0)
                return -EINVAL;
        *ret = p;
        return 0;
}

#define PE_HEADER "xrow_grp,mm_active,wl_active,idle"

static int add_u64(uint64_t *sum, uint64_t v) {
        if (*sum > UINT64_MAX - v)
                return -ERANGE;
        *sum += v;
        return 0;
}

int sysfs_parse_pe_counters(const char *buf, size_t len, struct sysfs_pe_counters *ret) {
        struct sysfs_pe_counters sum = { 0 };
        unsigned rows = 0;
        bool header = false;

        if (len == 0)
                return -ENODATA;
        for (size_t at = 0; at < len;) {
                const char *nl = memchr(buf + at, '\n', len - at);
                size_t line_len = nl ? (size_t) (nl - (buf + at)) : len - at;
                const char *line = buf + at;
                at += line_len + 1;

                if (!header) {
                        if (!span_is(line, line_len, PE_HEADER))
                                return -EINVAL;
                        header = true;
                        continue;
                }
                const char *f[4];
                size_t fl[4];
                uint64_t group, mm, wl, idle;
                if (split_fields(line, line_len, 4, f, fl) < 0 || parse_u64(f[0], fl[0], &group) < 0 ||
                    parse_u64(f[1], fl[1], &mm) < 0 || parse_u64(f[2], fl[2], &wl) < 0 ||
                    parse_u64(f[3], fl[3], &idle) < 0)
                        return -EINVAL;
                /* Row groups are numbered from 0 in order; anything else is a
                 * torn or truncated read. */
                if (group != rows)
                        return -EINVAL;
                if (add_u64(&sum.mm_active, mm) < 0 || add_u64(&sum.wl_active, wl) < 0 || add_u64(&sum.idle, idle) < 0)
                        return -ERANGE;
                rows++;
        }
        if (rows == 0)
                return -ENODATA;
        *ret = sum;
        return 0;
}

int sysfs_busy_ratio(const struct sysfs_pe_counters *prev, const struct sysfs_pe_counters *cur, double *ret) {
        if (cur->mm_active < prev->mm_active || cur->wl_active < prev->wl_active || cur->idle < prev->idle)
                return -ERANGE;
        double mm = (double) (cur->mm_active - prev->mm_active);
        double all = mm + (double) (cur->wl_active - prev->wl_active) + (double) (cur->idle - prev->idle);
        if (all <= 0)
                return -ENODATA;
        *ret = mm / all;
        return 0;
}

int sysfs_parse_device_name(const char *name, unsigned *ret) {
        uint64_t v;
        if (strncmp(name, "neuron", 6) != 0)
                return -EINVAL;
        /* No leading zeros: "neuron01" is not a driver name. */
        if (name[6] == '0' && name[7] != '\0')
                return -EINVAL;
        if (parse_u64(name + 6, strlen(name + 6), &v) < 0 || v > 65535)
                return -EINVAL;
        *ret = (unsigned) v;
        return 0;
}

static bool is_busy(const char *buf, size_t len) {
        return len == 4 && memcmp(buf, "busy", 4) == 0;
}

int sysfs_parse_node_id(const char *buf, size_t len, int *ret) {
        uint64_t v;
        len = chomp(buf, len);
        if (len == 0)
                return -ENODATA;
        if (is_busy(buf, len))
                return -EBUSY;
        if (len == 2 && memcmp(buf, "-1", 2) == 0) {
                *ret = -1;
                return 0;
        }
        /* Node ids are small: at most 4 digits. */
        if (len > 4 || parse_u64(buf, len, &v) < 0)
                return -EINVAL;
        *ret = (int) v;
        return 0;
}

int sysfs_parse_server_id(const char *buf, size_t len, char *out, size_t size) {
        len = chomp(buf, len);
        if (len == 0)
                return -ENODATA;
        if (is_busy(buf, len))
                return -EBUSY;
        if (len != 16 || size < 17)
                return -EINVAL;
        for (size_t i = 0; i < len; i++) {
                char c = buf[i];
                if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F')))
                        return -EINVAL;
        }
        for (size_t i = 0; i < len; i++)
                out[i] = (char) (buf[i] >= 'A' && buf[i] <= 'F' ? buf[i] - 'A' + 'a' : buf[i]);
        out[len] = '\0';
        return 0;
}

int sysfs_parse_ultraserver_modes(const char *buf, size_t len, unsigned *ret_mask) {
        unsigned mask = 0;
        len = chomp(buf, len);
        if (is_busy(buf, len))
                return -EBUSY;
        /* "m,m,...": one digit 1-4 each, separated by single commas. */
        for (size_t i = 0; i < len; i += 2) {
                if (buf[i] < '1' || buf[i] > '4' || (i + 1 < len && buf[i + 1] != ','))
                        return -EINVAL;
                if (i + 1 == len - 1)
                        return -EINVAL; /* a trailing comma */
                mask |= 1u << (buf[i] - '0');
        }
        *ret_mask = mask;
        return 0;
}
