/* The admin endpoint: fault injection into the device model, and the
 * loop's clock held and driven (lib/ticks.h), at run time.
 *
 *   GET    /api/v1/admin/faults              list queued and active faults
 *   POST   /api/v1/admin/faults?fault=SPEC   inject one (syntax: docs/metrics.md)
 *   DELETE /api/v1/admin/faults              end every fault
 *   GET    /api/v1/admin/ticks               whether the timer is held, the latest tick
 *   POST   /api/v1/admin/ticks?hold=BOOL     hold the timer, or let it tick again
 *   POST   /api/v1/admin/ticks?run=N         hold it and run N ticks, each one interval
 *                                            after the last; answered once the last is stored
 *
 * Off unless the `admin` setting is true (web_context.admin); while off it
 * answers 404 like any unknown path. When on, it answers only clients
 * on a loopback address (403 otherwise), whatever address the server binds.
 * Handlers run on libmicrohttpd's threads; the backend behind
 * web_context.faults takes its own lock. */
#pragma once

#include <stdbool.h>
#include <sys/socket.h>

#include "web/context.h"
#include "web/reply.h"
#include "web/request.h"

/* True for 127.0.0.0/8, ::1 and IPv4-mapped 127.0.0.0/8; false for NULL. */
bool admin_is_loopback(const struct sockaddr *sa);

/* What admin routes ask beyond credentials: 404 while the admin setting is
 * off, 403 for a client not on loopback. Returns true with reply filled
 * when it refuses. */
bool admin_refuse(const struct web_context *ctx, const struct web_request *req, struct web_reply *reply);

/* The route handler for /api/v1/admin/faults (GET, HEAD, POST, DELETE). */
void admin_faults(const struct web_context *ctx, const struct web_request *req, struct web_reply *reply);

/* The route handler for /api/v1/admin/ticks (GET, HEAD, POST); a queued
 * row, as a run waits for its ticks. */
void admin_ticks(const struct web_context *ctx, const struct web_request *req, struct web_reply *reply);
