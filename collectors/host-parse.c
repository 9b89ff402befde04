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
        /* The per-vCPU lines follow the aggregate one. */
        for (const char *line = end; line < buf + len;) {
                line++; /* past the newline */
                if ((size_t) (buf + len - line) < 4 || memcmp(line, "cpu", 3) != 0 || line[3] < '0' || line[3] > '9')
                        break;
                t.vcpus++;
                const char *nl = memchr(line, '\n', (size_t) (buf + len - line));
                line = nl ? nl : buf + len;
        }
        *ret = t;
        return 0;
}

int host_cpu_usage(const struct host_cpu_times *prev, const struct host_cpu_times *cur, struct host_cpu_usage *ret) {
        double d[HOST_CPU__COUNT], all = 0;
        for (int i = 0; i < HOST_CPU__COUNT; i++) {
                if (cur->ticks[i] < prev->ticks[i])
                        return -ERANGE;
                d[i] = (double) (cur->ticks[i] - prev->ticks[i]);
                all += d[i];
        }
        if (all <= 0)
                return -ENODATA;
        *ret = (struct host_cpu_usage){
                .user = (d[HOST_CPU_USER] + d[HOST_CPU_NICE]) / all,
                .system = (d[HOST_CPU_SYSTEM] + d[HOST_CPU_IOWAIT] + d[HOST_CPU_IRQ] + d[HOST_CPU_SOFTIRQ]) / all,
        };
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
        struct host_memory m = { 0 };
        int r = parse_kb(buf, len, "MemTotal:", &m.total_bytes);
        if (r == 0)
                r = parse_kb(buf, len, "MemAvailable:", &m.available_bytes);
        if (r < 0)
                return r;
        /* Every kernel since 2.6 writes the swap lines; without them swap is unknown. */
        r = parse_kb(buf, len, "SwapTotal:", &m.swap_total_bytes);
        if (r == 0)
                r = parse_kb(buf, len, "SwapFree:", &m.swap_free_bytes);
        if (r < 0 && r != -ENODATA)
                return r;
        m.has_swap = r == 0;
        if (m.available_bytes > m.total_bytes || m.swap_free_bytes > m.swap_total_bytes)
                return -ERANGE;
        *ret = m;
        return 0;
}
