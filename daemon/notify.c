#include "config.h"

#ifdef HAVE_SYSTEMD
#include <systemd/sd-daemon.h>
#endif

#include "daemon/notify.h"

#ifdef HAVE_SYSTEMD
void notify_ready(const char *status) {
        sd_notifyf(0, "READY=1\nSTATUS=%s", status);
}

void notify_stopping(void) {
        sd_notify(0, "STOPPING=1\nSTATUS=Stopping");
}

void notify_watchdog(void) {
        sd_notify(0, "WATCHDOG=1");
}
#else
void notify_ready(const char *status) {
}

void notify_stopping(void) {
}

void notify_watchdog(void) {
}
#endif
