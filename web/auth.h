/* Authentication for the HTTP server: HTTP basic against bcrypt hashes (an
 * htpasswd-style file of "user:$2b$..." lines, like exporter-toolkit's
 * basic_auth_users), or a bearer token read from a file. Either one
 * admits a request. Comparisons of secrets take time independent of where
 * they differ. Thread safe after auth_new(). */
#pragma once

#include <stdbool.h>
#include <stddef.h>

#define AUTH_USERS_MAX 64
#define AUTH_SECRET_MAX 1024

struct auth;

/* Reads the users file and/or the token file (either may be NULL or "",
 * not both). Returns 0, -EINVAL with err filled for a bad file. */
int auth_new(const char *users_file, const char *token_file, struct auth **ret, char *err, size_t errlen);
void auth_free(struct auth *a); /* NULL-safe */

/* Whether the basic scheme (users) is set up: the challenge names it. */
bool auth_has_users(const struct auth *a);

/* Checks a user name and password against the users file. A bcrypt
 * verification costs tens of milliseconds; after one succeeds, the same
 * password is recognised by a fast salted SHA-256 crypt held in memory.
 * Only one bcrypt runs at a time: a check that would wait for another
 * thread's bcrypt fails at once (the client sees 401 and retries). */
bool auth_check_basic(struct auth *a, const char *user, const char *password);
/* Checks the value of an "Authorization: Bearer X" header's X. */
bool auth_check_bearer(const struct auth *a, const char *token);

/* String equality whose time depends only on the expected string's
 * length, not on where the strings differ. */
bool auth_equal(const char *given, const char *expected);
