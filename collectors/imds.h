/* The EC2 instance metadata service (IMDSv2): who the instance is.
 *
 * A PUT for a session token, then one GET per field with it
 * (docs.aws.amazon.com, "Use the Instance Metadata Service to access
 * instance metadata"): instance-id, instance-type,
 * placement/availability-zone, placement/availability-zone-id,
 * placement/region, ami-id, the subnet of the primary interface
 * (network/interfaces/macs/<mac>/subnet-id) and the Name tag
 * (tags/instance/Name, there only when the instance allows tags in its
 * metadata). The daemon fetches it once at start for a backend that does
 * not know its instance, and keeps it.
 *
 * Plain HTTP/1.1 to a numeric address, one connection per request, each
 * bounded by a timeout; never logs (it says what failed in
 * instance_identity.error). */
#pragma once

#include <stddef.h>
#include <sys/socket.h>

#include "lib/inventory.h"

#define IMDS_DEFAULT_ADDRESS "169.254.169.254:80"

/* Fetches the identity from the service at addr, each request answered
 * within timeout_ms. Returns 0 with every field it could read (a field it
 * could not read stays empty and error names it; a missing Name tag is no
 * error), or a negative errno when the service gives no session token
 * (-ETIMEDOUT, -ECONNREFUSED, -ENETUNREACH, -EPROTO for an answer that is
 * not HTTP, -EACCES for another status); *ret is then untouched. */
int imds_fetch(const struct sockaddr *addr, socklen_t addr_len, int timeout_ms, struct instance_identity *ret);

/* Splits an HTTP/1.x response into its status and body. The body is what
 * follows the header, as long as Content-Length says when it is there.
 * Returns 0, -EPROTO when buf is not such a response (chunked bodies
 * included: the service does not send them), -EMSGSIZE when the body is
 * shorter than Content-Length. Pure; fuzzed. */
int imds_parse_response(const char *buf, size_t len, unsigned *ret_status, const char **ret_body, size_t *ret_body_len);

/* Copies a metadata value into out (size > 0): printable ASCII of less
 * than size bytes, a trailing newline dropped. Returns 0, -EINVAL or
 * -ERANGE. */
int imds_parse_value(const char *body, size_t len, char *out, size_t size);
