#include "config.h"

#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "daemon/log.h"

static enum log_level log_max_level = LOG_LEVEL_INFO;
static bool log_to_journal;

/* systemd sets JOURNAL_STREAM to "DEV:INODE" of the stream it connected. */
static bool stderr_is_journal(void) {
        const char *e = getenv("JOURNAL_STREAM");
        unsigned long long dev, ino;
        struct stat st;

        if (!e || sscanf(e, "%llu:%llu", &dev, &ino) != 2 || fstat(STDERR_FILENO, &st) < 0)
                return false;
        return (unsigned long long) st.st_dev == dev && (unsigned long long) st.st_ino == ino;
}

void log_init(enum log_level max_level) {
        log_max_level = max_level;
        log_to_journal = stderr_is_journal();
}

void log_msg(enum log_level level, const char *fmt, ...) {
        static const char *const names[] = {
                [LOG_LEVEL_ERROR] = "error", [LOG_LEVEL_WARNING] = "warning",
                [LOG_LEVEL_INFO] = "info", [LOG_LEVEL_DEBUG] = "debug",
        };
        char line[1024];
        va_list ap;

        if (level > log_max_level)
                return;
        va_start(ap, fmt);
        vsnprintf(line, sizeof(line), fmt, ap);
        va_end(ap);
        /* One write per line so that lines from several threads never mix. */
        if (log_to_journal)
                dprintf(STDERR_FILENO, "<%d>%s\n", (int) level, line);
        else
                dprintf(STDERR_FILENO, "neurond: %s: %s\n", names[level] ? names[level] : "log", line);
}
