/* The admin endpoint: fault injection into the device model at run time.
 *
 *   GET    /api/v1/admin/faults              list queued and active faults
 *   POST   /api/v1/admin/faults?fault=SPEC   inject one (syntax: docs/metrics.md)
 *   DELETE /api/v1/admin/faults              end every fault
 *
 * Off unless the `admin` setting is true (web_context.admin): then it
 * answers 404 like any unknown path. When on, it answers only clients
 * on a loopback address (403 otherwise), whatever address the server binds.
 * Handlers run on libmicrohttpd's threads; the model takes its own lock. */
#pragma once

#include <microhttpd.h>
#include <stdbool.h>
#include <sys/socket.h>

#include "web/context.h"
#include "web/reply.h"

#define ADMIN_PREFIX "/api/v1/admin"

/* True for the paths this endpoint owns. */
bool admin_owns(const char *url);

/* True for 127.0.0.0/8, ::1 and IPv4-mapped 127.0.0.0/8; false for NULL. */
bool admin_is_loopback(const struct sockaddr *sa);

/* Answers a request for an admin path, once it has arrived whole (a
 * request body is read and ignored: parameters come from the query
 * string), by filling in reply. */
void admin_request(const struct web_context *ctx, struct MHD_Connection *conn, const char *url, const char *method,
                   struct web_reply *reply);
