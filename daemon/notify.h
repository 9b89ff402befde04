/* Service manager notifications (sd_notify). No-ops when built without
 * libsystemd or when not started by a service manager. */
#pragma once

void notify_ready(const char *status);
void notify_stopping(void);
void notify_watchdog(void);
