/* Authentication for the HTTP server: HTTP basic against bcrypt hashes (an
 * htpasswd-style file of "user:$2b$..." lines, like exporter-toolkit's
 * basic_auth_users), or a bearer token read from a file. Either one
 * admits a request. Comparisons of secrets take time independent of where
 * they differ. A flood of wrong passwords costs little and denies nobody
 * else: auth_check() answers known and backed-off credentials at once,
 * and only auth_verify() hashes. Thread safe after auth_new(). */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <sys/socket.h>

#define AUTH_USERS_MAX 64
#define AUTH_NAME_MAX 128
#define AUTH_SECRET_MAX 1024
#define AUTH_KEY_BYTES 32
#define AUTH_CACHE_SIZE 64
#define AUTH_CACHE_SECONDS 900
#define AUTH_CLIENTS_MAX 256
#define AUTH_FREE_FAILURES 3
#define AUTH_BACKOFF_MAX_SECONDS 60

struct auth;

/* Reads the users file and/or the token file (either may be NULL or "",
 * not both). Returns 0, -EINVAL with err filled for a bad file. */
int auth_new(const char *users_file, const char *token_file, struct auth **ret, char *err, size_t errlen);
void auth_free(struct auth *a); /* NULL-safe */

/* Whether the basic scheme (users) is set up: the challenge names it. */
bool auth_has_users(const struct auth *a);

/* What auth_check() makes of a request's credentials. */
enum auth_verdict {
        AUTH_UNCHECKED, /* not judged yet; auth_check() never answers it */
        AUTH_GRANTED,
        AUTH_DENIED,
        AUTH_VERIFY, /* a password only auth_verify() can judge */
};

/* A password waiting for its bcrypt verification, as auth_check() read it
 * from the header. auth_verify() wipes it. */
struct auth_attempt {
        char user[AUTH_NAME_MAX];
        char password[AUTH_SECRET_MAX];
        unsigned char key[AUTH_KEY_BYTES]; /* the credentials' keyed hash: the cache's key */
        unsigned char client[16];          /* the client's address: IPv4 mapped, or IPv6 */
};

/* Judges the value of an Authorization header (NULL: none) without the
 * slow hash, from client (NULL: unknown). The scheme ("Basic", "Bearer")
 * is matched without case. A token is compared with the token file's over
 * its whole length. Basic credentials are decoded here, and a NUL byte in
 * the user or password is refused, not taken as their end; credentials
 * verified in the last AUTH_CACHE_SECONDS are granted from a cache keyed
 * by a hash of the header under a key chosen at start (memory holds no
 * password); a client with AUTH_FREE_FAILURES failures in a row is denied
 * without a hash for 1 s, then 2, 4 ... up to AUTH_BACKOFF_MAX_SECONDS.
 * Otherwise AUTH_VERIFY, with attempt filled for auth_verify(). */
enum auth_verdict auth_check(struct auth *a, const char *authorization, const struct sockaddr *client,
                             struct auth_attempt *attempt);

/* The bcrypt verification of attempt (tens of milliseconds; run it off the
 * threads that serve scrapes): AUTH_GRANTED, and the credentials cached, or
 * AUTH_DENIED, counted against the client. An unknown user costs a
 * bcrypt verification too, so response time does not tell which names
 * exist. */
enum auth_verdict auth_verify(struct auth *a, struct auth_attempt *attempt);

/* String equality whose time depends only on the expected string's
 * length, not on where the strings differ. */
bool auth_equal(const char *given, const char *expected);
