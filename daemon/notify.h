/* Service manager integration: notifications (sd_notify) and the listening
 * socket of socket activation (sd_listen_fds). Every call is a no-op when built
 * without libsystemd or when NOTIFY_SOCKET is unset, so the daemon behaves the
 * same under systemd, under another supervisor and in a terminal.
 * Thread safe (each call sends one datagram). */
#pragma once

#include <stdint.h>

/* READY=1 with a STATUS= line: the database is open and the socket bound. */
void notify_ready(const char *status);
/* A STATUS= line alone: what the daemon is doing now. */
void notify_status(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* RELOADING=1 before a configuration reload; notify_ready() ends it. */
void notify_reloading(void);
void notify_stopping(void);
/* WATCHDOG=1 together with a STATUS= line; sent from the poll loop. */
void notify_watchdog(const char *status);

/* Half the watchdog period systemd asked for (WatchdogSec=), in ms, so the
 * loop can ping in time even when its interval is longer; 0 when no
 * watchdog is configured for this process. */
int64_t notify_watchdog_ping_ms(void);

/* The listening socket passed by the service manager (neurond.socket), or
 * -ENOENT when none was passed. -EINVAL when more than one was passed or it
 * is not a listening stream socket. Unsets LISTEN_FDS so children do not
 * inherit it. */
int notify_listen_fd(void);
