#include "config.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include "lib/clock.h"
#include "lib/file.h"
#include "lib/parse.h"
#include "lib/process.h"

/* The fields of /proc/self/stat after the command, counted from state (3):
 * utime 14, stime 15, starttime 22, vsize 23, rss 24 (proc(5)). */
int process_parse_stat(const char *buf, size_t len, struct process_stat_fields *ret) {
        struct process_stat_fields f = { 0 };
        const char *end = buf + len;
        /* The command may hold spaces and parentheses: its last ')' ends it. */
        const char *p = NULL;
        for (const char *q = buf; q < end; q++)
                if (*q == ')')
                        p = q;
        if (!p)
                return -EINVAL;
        p++;
        for (int field = 3; field <= 24; field++) {
                while (p < end && *p == ' ')
                        p++;
                const char *start = p;
                while (p < end && *p != ' ' && *p != '\n')
                        p++;
                if (p == start)
                        return -EINVAL;
                uint64_t v = 0;
                uint64_t *out = field == 14   ? &f.utime
                                : field == 15 ? &f.stime
                                : field == 22 ? &f.starttime
                                : field == 23 ? &f.vsize
                                : field == 24 ? &f.rss
                                              : NULL;
                if (out && parse_u64(start, (size_t) (p - start), &v) < 0)
                        return -EINVAL;
                if (out)
                        *out = v;
        }
        *ret = f;
        return 0;
}

int process_stats_read(struct process_stats *ret) {
        char buf[1024];
        size_t len;
        struct process_stat_fields f;
        uint64_t fds = 0;
        struct rlimit lim;
        long hz = sysconf(_SC_CLK_TCK), page = sysconf(_SC_PAGESIZE);

        int r = file_read_at(AT_FDCWD, "/proc/self/stat", buf, sizeof(buf), 0, &len);
        if (r == 0)
                r = process_parse_stat(buf, len, &f);
        if (r < 0)
                return r;
        DIR *d = opendir("/proc/self/fd");
        if (!d)
                return -errno;
        for (struct dirent *e; (e = readdir(d));)
                fds += e->d_name[0] != '.';
        closedir(d);
        if (getrlimit(RLIMIT_NOFILE, &lim) < 0)
                return -errno;
        if (hz <= 0)
                hz = 100;
        /* Boot time in Unix seconds: the wall clock less the time since boot. */
        double boot = (double) (clock_ns(CLOCK_REALTIME) - clock_ns(CLOCK_BOOTTIME)) / 1e9;
        *ret = (struct process_stats){
                .cpu_seconds = (double) (f.utime + f.stime) / (double) hz,
                .start_time = boot + (double) f.starttime / (double) hz,
                .virtual_bytes = f.vsize,
                .resident_bytes = f.rss * (uint64_t) (page > 0 ? page : 4096),
                /* The directory itself is open while it is read. */
                .open_fds = fds > 0 ? fds - 1 : 0,
                .max_fds = lim.rlim_cur == RLIM_INFINITY ? UINT64_MAX : lim.rlim_cur,
        };
        return 0;
}
