#include "config.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>

#ifdef HAVE_SYSTEMD
#include <systemd/sd-daemon.h>
#endif

#include "daemon/notify.h"

#ifdef HAVE_SYSTEMD
void notify_ready(const char *status) {
        sd_notifyf(0, "READY=1\nSTATUS=%s", status);
}

void notify_status(const char *fmt, ...) {
        char line[256];
        va_list ap;

        va_start(ap, fmt);
        vsnprintf(line, sizeof(line), fmt, ap);
        va_end(ap);
        sd_notifyf(0, "STATUS=%s", line);
}

void notify_reloading(void) {
        sd_notify(0, "RELOADING=1\nSTATUS=Reloading configuration");
}

void notify_stopping(void) {
        sd_notify(0, "STOPPING=1\nSTATUS=Stopping");
}

void notify_watchdog(const char *status) {
        sd_notifyf(0, "WATCHDOG=1\nSTATUS=%s", status);
}

int64_t notify_watchdog_ping_ms(void) {
        uint64_t usec = 0;

        /* sd_watchdog_enabled() checks WATCHDOG_PID against our own pid. */
        if (sd_watchdog_enabled(0, &usec) <= 0 || usec == 0)
                return 0;
        return usec / 2000 > 0 ? (int64_t) (usec / 2000) : 1;
}

int notify_listen_fd(void) {
        int n = sd_listen_fds(1);

        if (n < 0)
                return n;
        if (n == 0)
                return -ENOENT;
        if (n > 1 || sd_is_socket(SD_LISTEN_FDS_START, AF_UNSPEC, SOCK_STREAM, 1) <= 0)
                return -EINVAL;
        return SD_LISTEN_FDS_START;
}
#else
void notify_ready(const char *status) {
}

void notify_status(const char *fmt, ...) {
}

void notify_reloading(void) {
}

void notify_stopping(void) {
}

void notify_watchdog(const char *status) {
}

int64_t notify_watchdog_ping_ms(void) {
        return 0;
}

int notify_listen_fd(void) {
        return -ENOENT;
}
#endif
