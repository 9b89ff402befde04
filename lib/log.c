#include "config.h"

#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>

#ifdef HAVE_SYSTEMD
/* CODE_FILE= would always name this file; leave the fields out. */
#define SD_JOURNAL_SUPPRESS_LOCATION
#include <systemd/sd-journal.h>
#endif

#include "lib/log.h"

static enum log_level log_max_level = LOG_LEVEL_INFO;
static bool log_to_journal; /* stderr is the journal's stream */
static bool log_structured; /* and journald's native socket is there */

/* systemd sets JOURNAL_STREAM to "DEV:INODE" of the stream it connected;
 * comparing with stderr tells an inherited variable from a live one. */
static bool stderr_is_journal(void) {
        const char *e = getenv("JOURNAL_STREAM");
        unsigned long long dev, ino;
        struct stat st;

        if (!e || sscanf(e, "%llu:%llu", &dev, &ino) != 2 || fstat(STDERR_FILENO, &st) < 0)
                return false;
        return (unsigned long long) st.st_dev == dev && (unsigned long long) st.st_ino == ino;
}

int log_level_parse(const char *text, enum log_level *ret) {
        static const struct {
                const char *name;
                enum log_level level;
        } levels[] = {
                { "error", LOG_LEVEL_ERROR },
                { "warning", LOG_LEVEL_WARNING },
                { "info", LOG_LEVEL_INFO },
                { "debug", LOG_LEVEL_DEBUG },
        };
        for (size_t i = 0; i < sizeof(levels) / sizeof(levels[0]); i++)
                if (strcmp(text, levels[i].name) == 0) {
                        *ret = levels[i].level;
                        return 0;
                }
        return -EINVAL;
}

void log_init(enum log_level max_level) {
        log_set_level(max_level);
        log_to_journal = stderr_is_journal();
        /* sd_journal_sendv() drops messages silently when the socket is
         * missing; then the stream, with priority prefixes, is the way in. */
        log_structured = log_to_journal && access("/run/systemd/journal/socket", W_OK) == 0;
}

void log_set_level(enum log_level max_level) {
        __atomic_store_n(&log_max_level, max_level, __ATOMIC_RELAXED);
}

#ifdef HAVE_SYSTEMD
/* Returns 0 when journald took the message. */
static int log_journal(enum log_level level, const char *collector, const char *line) {
        char message[1100], priority[16], field[300];
        struct iovec iov[4];
        int n = 0;

        snprintf(message, sizeof(message), "MESSAGE=%s", line);
        snprintf(priority, sizeof(priority), "PRIORITY=%d", (int) level);
        iov[n++] = (struct iovec){ .iov_base = message, .iov_len = strlen(message) };
        iov[n++] = (struct iovec){ .iov_base = priority, .iov_len = strlen(priority) };
        iov[n++] = (struct iovec){ .iov_base = (char *) "SYSLOG_IDENTIFIER=neurond", .iov_len = 25 };
        if (collector) {
                snprintf(field, sizeof(field), "NEUROND_COLLECTOR=%s", collector);
                iov[n++] = (struct iovec){ .iov_base = field, .iov_len = strlen(field) };
        }
        return sd_journal_sendv(iov, n);
}
#endif

void log_msg(enum log_level level, const char *collector, const char *fmt, ...) {
        static const char *const names[] = {
                [LOG_LEVEL_ERROR] = "error",
                [LOG_LEVEL_WARNING] = "warning",
                [LOG_LEVEL_INFO] = "info",
                [LOG_LEVEL_DEBUG] = "debug",
        };
        char text[1024];
        va_list ap;

        if (level > __atomic_load_n(&log_max_level, __ATOMIC_RELAXED))
                return;
        va_start(ap, fmt);
        vsnprintf(text, sizeof(text), fmt, ap);
        va_end(ap);
        if (log_to_journal) {
#ifdef HAVE_SYSTEMD
                if (log_structured && log_journal(level, collector, text) >= 0)
                        return;
#endif
                /* One write per line so that lines from several threads never mix. */
                if (collector)
                        dprintf(STDERR_FILENO, "<%d>collector %s: %s\n", (int) level, collector, text);
                else
                        dprintf(STDERR_FILENO, "<%d>%s\n", (int) level, text);
                return;
        }
        dprintf(STDERR_FILENO, "neurond: %s: %s%s%s%s\n", names[level] ? names[level] : "log",
                collector ? "collector " : "", collector ? collector : "", collector ? ": " : "", text);
}
