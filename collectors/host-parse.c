#include "config.h"

#include <errno.h>
#include <string.h>

#include "collectors/host.h"
#include "lib/parse.h"

/* Parses a decimal field starting at *p (after spaces), stopping at a
 * space or the end of the line. */
static int parse_field(const char **p, const char *end, uint64_t *ret) {
        const char *s = *p;
        uint64_t v = 0;
        while (s < end && *s == ' ')
                s++;
        if (s == end)
                return -ENODATA;
        const char *start = s;
        while (s < end && *s != ' ')
                s++;
        int r = parse_u64(start, (size_t) (s - start), &v);
        if (r < 0)
                return r;
        *p = s;
        *ret = v;
        return 0;
}

/* Finds the line that starts with prefix; returns its start after the
 * prefix and sets *ret_end to its end, or NULL. */
static const char *find_line(const char *buf, size_t len, const char *prefix, const char **ret_end) {
        size_t plen = strlen(prefix);
        for (size_t at = 0; at < len;) {
                const char *line = buf + at;
                const char *nl = memchr(line, '\n', len - at);
                size_t line_len = nl ? (size_t) (nl - line) : len - at;
                if (line_len >= plen && memcmp(line, prefix, plen) == 0) {
                        *ret_end = line + line_len;
                        return line + plen;
                }
                at += line_len + 1;
        }
        return NULL;
}

int host_parse_stat(const char *buf, size_t len, struct host_cpu_times *ret) {
        struct host_cpu_times t = { 0 };
        const char *end;
        const char *p = find_line(buf, len, "cpu ", &end);
        if (!p)
                return -ENODATA;
        for (int i = 0; i < HOST_CPU__COUNT; i++) {
                int r = parse_field(&p, end, &t.ticks[i]);
                /* user..idle exist since Linux 2.4; later fields may be missing. */
                if (r == -ENODATA && i > HOST_CPU_IDLE)
                        break;
                if (r < 0)
                        return r == -ENODATA ? -EINVAL : r;
        }
        *ret = t;
        return 0;
}

int host_cpu_ratios(const struct host_cpu_times *prev, const struct host_cpu_times *cur,
                    double ratios[HOST_CPU__COUNT]) {
        double all = 0;
        for (int i = 0; i < HOST_CPU__COUNT; i++) {
                if (cur->ticks[i] < prev->ticks[i])
                        return -ERANGE;
                all += (double) (cur->ticks[i] - prev->ticks[i]);
        }
        if (all <= 0)
                return -ENODATA;
        for (int i = 0; i < HOST_CPU__COUNT; i++)
                ratios[i] = (double) (cur->ticks[i] - prev->ticks[i]) / all;
        return 0;
}

static int parse_kb(const char *buf, size_t len, const char *prefix, uint64_t *ret) {
        const char *end;
        uint64_t kb;
        const char *p = find_line(buf, len, prefix, &end);
        if (!p)
                return -ENODATA;
        int r = parse_field(&p, end, &kb);
        if (r < 0)
                return r == -ENODATA ? -EINVAL : r;
        if (end - p != 3 || memcmp(p, " kB", 3) != 0)
                return -EINVAL;
        if (kb > UINT64_MAX / 1024)
                return -ERANGE;
        *ret = kb * 1024;
        return 0;
}

int host_parse_meminfo(const char *buf, size_t len, struct host_memory *ret) {
        struct host_memory m;
        int r = parse_kb(buf, len, "MemTotal:", &m.total_bytes);
        if (r < 0)
                return r;
        r = parse_kb(buf, len, "MemAvailable:", &m.available_bytes);
        if (r < 0)
                return r;
        if (m.available_bytes > m.total_bytes)
                return -ERANGE;
        *ret = m;
        return 0;
}
