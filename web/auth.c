#include "config.h"

#include <crypt.h>
#include <errno.h>
#include <gnutls/crypto.h>
#include <gnutls/gnutls.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "lib/clock.h"
#include "lib/file.h"
#include "web/auth.h"

struct auth_user {
        char name[AUTH_NAME_MAX];
        char hash[128]; /* bcrypt, from the file */
};

/* Credentials bcrypt has accepted, by their keyed hash. */
struct auth_cached {
        unsigned char key[AUTH_KEY_BYTES];
        int64_t expires_ms; /* monotonic; 0: a free slot */
};

/* Failures from one client address, for its back-off. */
struct auth_client {
        unsigned char addr[16];
        unsigned failures; /* in a row */
        int64_t last_ms;   /* monotonic, of the latest failure; 0: a free slot */
        int64_t refused_until_ms;
};

struct auth {
        struct auth_user users[AUTH_USERS_MAX];
        size_t n_users;
        char token[AUTH_SECRET_MAX];
        size_t token_len;
        /* The key of the cache's hash, chosen at start: memory holds no
         * value from which a password could be found. */
        unsigned char hmac_key[AUTH_KEY_BYTES];
        pthread_mutex_t lock; /* guards cache and clients */
        struct auth_cached cache[AUTH_CACHE_SIZE];
        struct auth_client clients[AUTH_CLIENTS_MAX];
};

bool auth_equal(const char *given, const char *expected) {
        size_t glen = strlen(given), elen = strlen(expected);
        unsigned char diff = glen != elen;
        for (size_t i = 0; i < elen; i++)
                diff |= (unsigned char) ((i < glen ? given[i] : 0) ^ expected[i]);
        return diff == 0;
}

/* The files are small: the users' lines, or one token line. */
#define USERS_FILE_MAX (64 * 1024)
#define TOKEN_FILE_MAX (AUTH_SECRET_MAX + 2)

static bool bytes_equal(const unsigned char *a, const unsigned char *b, size_t n) {
        unsigned char diff = 0;
        for (size_t i = 0; i < n; i++)
                diff |= a[i] ^ b[i];
        return diff == 0;
}

/* One line's content without the trailing newline and blanks. */
static void chomp(char *line) {
        size_t n = strlen(line);
        while (n && (line[n - 1] == '\n' || line[n - 1] == '\r' || line[n - 1] == ' ' || line[n - 1] == '\t'))
                line[--n] = '\0';
}

/* One "user:bcrypt-hash" line, without its newline, into a new user. */
static int add_user(struct auth *a, char *line, const char *path, int lineno, char *err, size_t errlen) {
        char *colon = strchr(line, ':');
        if (!colon || colon == line || (size_t) (colon - line) >= sizeof(a->users[0].name) ||
            strlen(colon + 1) >= sizeof(a->users[0].hash)) {
                snprintf(err, errlen, "basic_auth_users: %s:%d: expected user:bcrypt-hash", path, lineno);
                return -EINVAL;
        }
        const char *hash = colon + 1;
        if (strncmp(hash, "$2b$", 4) != 0 && strncmp(hash, "$2y$", 4) != 0 && strncmp(hash, "$2a$", 4) != 0) {
                snprintf(err, errlen, "basic_auth_users: %s:%d: the hash is not bcrypt ($2b$, $2y$ or $2a$)", path,
                         lineno);
                return -EINVAL;
        }
        if (a->n_users == AUTH_USERS_MAX) {
                snprintf(err, errlen, "basic_auth_users: %s: more than %d users", path, AUTH_USERS_MAX);
                return -EINVAL;
        }
        struct auth_user *u = &a->users[a->n_users++];
        *colon = '\0';
        /* Both lengths were checked above. */
        memcpy(u->name, line, strlen(line) + 1);
        memcpy(u->hash, hash, strlen(hash) + 1);
        return 0;
}

static int load_users(struct auth *a, const char *path, char *err, size_t errlen) {
        char why[128];
        char *text = NULL;
        size_t len;
        int lineno = 0, r;

        r = file_read_text(path, USERS_FILE_MAX, &text, &len, why, sizeof(why));
        if (r < 0) {
                snprintf(err, errlen, "basic_auth_users: %s: %s", path, why);
                return r == -ENOMEM ? r : -EINVAL;
        }
        for (char *line = text, *next; line && r == 0; line = next) {
                next = strchr(line, '\n');
                if (next)
                        *next++ = '\0';
                lineno++;
                chomp(line);
                if (line[0] && line[0] != '#')
                        r = add_user(a, line, path, lineno, err, errlen);
        }
        if (r == 0 && a->n_users == 0) {
                snprintf(err, errlen, "basic_auth_users: %s: no users", path);
                r = -EINVAL;
        }
        explicit_bzero(text, len);
        free(text);
        return r;
}

static int load_token(struct auth *a, const char *path, char *err, size_t errlen) {
        char why[128];
        char *text = NULL;
        size_t len;

        int r = file_read_text(path, TOKEN_FILE_MAX, &text, &len, why, sizeof(why));
        if (r < 0) {
                snprintf(err, errlen, "bearer_token_file: %s: %s", path, why);
                return r == -ENOMEM ? r : -EINVAL;
        }
        chomp(text);
        size_t token_len = strlen(text);
        if (token_len > 0 && token_len < sizeof(a->token) && !strchr(text, '\n')) {
                memcpy(a->token, text, token_len + 1);
                a->token_len = token_len;
        } else {
                snprintf(err, errlen, "bearer_token_file: %s: expected one line of at most %d bytes", path,
                         AUTH_SECRET_MAX - 1);
                r = -EINVAL;
        }
        explicit_bzero(text, len);
        free(text);
        return r;
}

int auth_new(const char *users_file, const char *token_file, struct auth **ret, char *err, size_t errlen) {
        bool users = users_file && *users_file, token = token_file && *token_file;
        int r;

        if (!users && !token) {
                snprintf(err, errlen, "no users file and no token file");
                return -EINVAL;
        }
        struct auth *a = calloc(1, sizeof(*a));
        if (!a)
                return -ENOMEM;
        pthread_mutex_init(&a->lock, NULL);
        if (users && (r = load_users(a, users_file, err, errlen)) < 0)
                goto fail;
        if (token && (r = load_token(a, token_file, err, errlen)) < 0)
                goto fail;
        if (gnutls_rnd(GNUTLS_RND_KEY, a->hmac_key, sizeof(a->hmac_key)) < 0) {
                snprintf(err, errlen, "choosing a random key failed");
                r = -EIO;
                goto fail;
        }
        *ret = a;
        return 0;
fail:
        auth_free(a);
        return r;
}

void auth_free(struct auth *a) {
        if (!a)
                return;
        pthread_mutex_destroy(&a->lock);
        explicit_bzero(a, sizeof(*a));
        free(a);
}

bool auth_has_users(const struct auth *a) {
        return a && a->n_users > 0;
}

/* The address as 16 bytes: IPv6, or IPv4 mapped into it; zeros when unknown. */
static void client_bytes(const struct sockaddr *sa, unsigned char out[16]) {
        memset(out, 0, 16);
        if (sa && sa->sa_family == AF_INET6) {
                memcpy(out, &((const struct sockaddr_in6 *) sa)->sin6_addr, 16);
        } else if (sa && sa->sa_family == AF_INET) {
                out[10] = out[11] = 0xff;
                memcpy(out + 12, &((const struct sockaddr_in *) sa)->sin_addr, 4);
        }
}

/* The client's entry, made (over the stalest one when full) if make.
 * Called locked. */
static struct auth_client *find_client(struct auth *a, const unsigned char addr[16], bool make, int64_t now) {
        struct auth_client *stalest = &a->clients[0];

        for (size_t i = 0; i < AUTH_CLIENTS_MAX; i++) {
                struct auth_client *c = &a->clients[i];
                if (c->last_ms && memcmp(c->addr, addr, 16) == 0)
                        return c;
                if (c->last_ms < stalest->last_ms)
                        stalest = c;
        }
        if (!make)
                return NULL;
        *stalest = (struct auth_client){ .last_ms = now };
        memcpy(stalest->addr, addr, 16);
        return stalest;
}

static bool backed_off(struct auth *a, const unsigned char addr[16]) {
        int64_t now = clock_monotonic_ms();
        pthread_mutex_lock(&a->lock);
        struct auth_client *c = find_client(a, addr, false, now);
        bool refused = c && now < c->refused_until_ms;
        pthread_mutex_unlock(&a->lock);
        return refused;
}

/* A failure from addr: past the free ones, the client is refused for 1 s,
 * then 2, 4 ... AUTH_BACKOFF_MAX_SECONDS. Failures older than the longest
 * back-off are forgotten. */
static void count_failure(struct auth *a, const unsigned char addr[16]) {
        int64_t now = clock_monotonic_ms();

        pthread_mutex_lock(&a->lock);
        struct auth_client *c = find_client(a, addr, true, now);
        if (now - c->last_ms > 2 * AUTH_BACKOFF_MAX_SECONDS * 1000)
                c->failures = 0;
        c->last_ms = now;
        if (++c->failures > AUTH_FREE_FAILURES) {
                unsigned shift = c->failures - AUTH_FREE_FAILURES - 1;
                int64_t seconds = shift < 6 ? 1LL << shift : AUTH_BACKOFF_MAX_SECONDS;
                c->refused_until_ms =
                        now + (seconds < AUTH_BACKOFF_MAX_SECONDS ? seconds : AUTH_BACKOFF_MAX_SECONDS) * 1000;
        }
        pthread_mutex_unlock(&a->lock);
}

static bool cached(struct auth *a, const unsigned char key[AUTH_KEY_BYTES]) {
        int64_t now = clock_monotonic_ms();
        bool found = false;

        pthread_mutex_lock(&a->lock);
        for (size_t i = 0; i < AUTH_CACHE_SIZE; i++)
                found |= a->cache[i].expires_ms > now && bytes_equal(a->cache[i].key, key, AUTH_KEY_BYTES);
        pthread_mutex_unlock(&a->lock);
        return found;
}

/* Caches key over the entry that expires first, and forgets the client's
 * failures. */
static void remember(struct auth *a, const unsigned char key[AUTH_KEY_BYTES], const unsigned char addr[16]) {
        int64_t now = clock_monotonic_ms();

        pthread_mutex_lock(&a->lock);
        struct auth_cached *slot = &a->cache[0];
        for (size_t i = 1; i < AUTH_CACHE_SIZE; i++)
                if (a->cache[i].expires_ms < slot->expires_ms)
                        slot = &a->cache[i];
        memcpy(slot->key, key, AUTH_KEY_BYTES);
        slot->expires_ms = now + AUTH_CACHE_SECONDS * 1000LL;
        struct auth_client *c = find_client(a, addr, false, now);
        if (c)
                *c = (struct auth_client){ 0 };
        pthread_mutex_unlock(&a->lock);
}

/* The scheme's name, matched without case, then at least one blank;
 * returns the credentials after the blanks, or NULL. */
static const char *after_scheme(const char *header, const char *scheme) {
        size_t n = strlen(scheme);
        if (strncasecmp(header, scheme, n) != 0 || (header[n] != ' ' && header[n] != '\t'))
                return NULL;
        return header + n + strspn(header + n, " \t");
}

/* Decodes "user:password" from base64 into attempt. A NUL byte in either,
 * or a part too long, is no credential. */
static bool decode_basic(const char *b64, size_t len, struct auth_attempt *attempt) {
        gnutls_datum_t in = { .data = (unsigned char *) b64, .size = (unsigned) len }, out = { 0 };
        bool ok = false;

        if (gnutls_base64_decode2(&in, &out) < 0)
                return false;
        const char *text = (const char *) out.data;
        const char *colon = memchr(text, ':', out.size);
        size_t user_len = colon ? (size_t) (colon - text) : 0;
        size_t password_len = colon ? out.size - user_len - 1 : 0;
        if (colon && !memchr(text, '\0', out.size) && user_len < sizeof(attempt->user) &&
            password_len < sizeof(attempt->password)) {
                memcpy(attempt->user, text, user_len);
                attempt->user[user_len] = '\0';
                memcpy(attempt->password, colon + 1, password_len);
                attempt->password[password_len] = '\0';
                ok = true;
        }
        explicit_bzero(out.data, out.size);
        gnutls_free(out.data);
        return ok;
}

enum auth_verdict auth_check(struct auth *a, const char *authorization, const struct sockaddr *client,
                             struct auth_attempt *attempt) {
        const char *credentials;

        if (!a || !authorization)
                return AUTH_DENIED;
        if ((credentials = after_scheme(authorization, "Bearer")))
                return a->token_len && auth_equal(credentials, a->token) ? AUTH_GRANTED : AUTH_DENIED;
        if (!(credentials = after_scheme(authorization, "Basic")) || a->n_users == 0)
                return AUTH_DENIED;
        size_t len = strcspn(credentials, " \t");
        if (credentials[len + strspn(credentials + len, " \t")] != '\0' ||
            len > 4 * (AUTH_NAME_MAX + AUTH_SECRET_MAX) / 3 + 4)
                return AUTH_DENIED;

        *attempt = (struct auth_attempt){ 0 };
        client_bytes(client, attempt->client);
        if (gnutls_hmac_fast(GNUTLS_MAC_SHA256, a->hmac_key, sizeof(a->hmac_key), credentials, len, attempt->key) < 0)
                return AUTH_DENIED;
        if (cached(a, attempt->key))
                return AUTH_GRANTED;
        if (backed_off(a, attempt->client))
                return AUTH_DENIED;
        if (!decode_basic(credentials, len, attempt)) {
                count_failure(a, attempt->client);
                return AUTH_DENIED;
        }
        return AUTH_VERIFY;
}

/* crypt_r into out; false when the hash could not be computed. */
static bool crypt_into(const char *password, const char *setting, char *out, size_t size) {
        struct crypt_data *cd = calloc(1, sizeof(*cd));
        bool ok = false;

        if (!cd)
                return false;
        const char *h = crypt_r(password, setting, cd);
        /* libxcrypt returns a string starting with '*' on failure. */
        if (h && h[0] != '*' && strlen(h) < size) {
                memcpy(out, h, strlen(h) + 1);
                ok = true;
        }
        explicit_bzero(cd, sizeof(*cd));
        free(cd);
        return ok;
}

enum auth_verdict auth_verify(struct auth *a, struct auth_attempt *attempt) {
        const struct auth_user *match = NULL;
        char hashed[128];

        for (size_t i = 0; i < a->n_users; i++)
                if (auth_equal(attempt->user, a->users[i].name))
                        match = &a->users[i];
        /* An unknown user is hashed against the first user's hash. */
        const struct auth_user *target = match ? match : &a->users[0];
        bool ok = crypt_into(attempt->password, target->hash, hashed, sizeof(hashed)) &&
                  auth_equal(hashed, target->hash) && match;
        explicit_bzero(hashed, sizeof(hashed));
        explicit_bzero(attempt->password, sizeof(attempt->password));
        if (ok)
                remember(a, attempt->key, attempt->client);
        else
                count_failure(a, attempt->client);
        return ok ? AUTH_GRANTED : AUTH_DENIED;
}
