/* The Host check that keeps DNS rebinding out. A web page can point a
 * name of its own at this machine's address (127.0.0.1 included) and then
 * read neurond from the visitor's browser as its own origin; the browser
 * still sends that name in Host. So a request is answered only when its
 * Host is
 *   - an IP address (a page cannot be served from a bare address it does
 *     not own, so no rebinding comes with one): the listen address, the
 *     socket the service manager passed, any address a client used;
 *   - or a name on the allowed list: by default the loopback names
 *     (localhost, *.localhost, localhost.localdomain, ip6-localhost,
 *     ip6-loopback); the allowed_hosts setting replaces them.
 * A list entry is a name, "*.suffix" for every name below suffix, or "*"
 * for every name (the check off). Names compare without case, the port is
 * ignored. Immutable after hosts_new(), so thread safe. */
#pragma once

#include <stdbool.h>
#include <stddef.h>

#define HOSTS_MAX 64
#define HOSTS_NAME_MAX 253

struct hosts;

/* list: entries separated by commas or blanks; NULL or "" for the
 * default. Returns 0, or -EINVAL with err saying which entry is wrong,
 * or -ENOMEM. */
int hosts_new(const char *list, struct hosts **ret, char *err, size_t errlen);
void hosts_free(struct hosts *h); /* NULL-safe */

enum hosts_verdict {
        HOSTS_ALLOWED,
        HOSTS_NOT_ALLOWED, /* a name not on the list: 421 */
        HOSTS_MALFORMED,   /* not host[:port]: 400 */
};

/* The verdict on a Host header's value. */
enum hosts_verdict hosts_check(const struct hosts *h, const char *host);
