#include "config.h"

#include <crypt.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/file.h"
#include "web/auth.h"

struct auth_user {
        char name[128];
        char hash[128];   /* bcrypt, from the file */
        char cached[128]; /* fast crypt of the last good password, or "" */
};

struct auth {
        struct auth_user users[AUTH_USERS_MAX];
        size_t n_users;
        char token[AUTH_SECRET_MAX];
        size_t token_len;
        /* sha256crypt with few rounds: cheap, but salted with a secret chosen
         * at start, so memory holds no reusable password equivalent. */
        char cache_setting[64];
        pthread_mutex_t lock; /* guards users[].cached */
        /* Held while a bcrypt runs: at most one HTTP thread hashes at a time,
         * so a stream of wrong passwords cannot occupy every thread. */
        pthread_mutex_t slow_lock;
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
        pthread_mutex_init(&a->slow_lock, NULL);
        if (users && (r = load_users(a, users_file, err, errlen)) < 0)
                goto fail;
        if (token && (r = load_token(a, token_file, err, errlen)) < 0)
                goto fail;
        /* A random salt for the cache; crypt_gensalt reads the kernel's entropy. */
        char salt[64];
        if (!crypt_gensalt_rn("$5$", 1000, NULL, 0, salt, sizeof(salt))) {
                snprintf(err, errlen, "generating a salt failed: %s", strerror(errno));
                r = -EIO;
                goto fail;
        }
        /* salt is "$5$rounds=1000$XXXX"; keep it whole as the crypt setting. */
        snprintf(a->cache_setting, sizeof(a->cache_setting), "%s", salt);
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
        pthread_mutex_destroy(&a->slow_lock);
        explicit_bzero(a, sizeof(*a));
        free(a);
}

bool auth_has_users(const struct auth *a) {
        return a && a->n_users > 0;
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

bool auth_check_basic(struct auth *a, const char *user, const char *password) {
        char fast[128], slow[128];
        struct auth_user *match = NULL;

        if (!a || a->n_users == 0 || !user || !password || strlen(password) >= AUTH_SECRET_MAX)
                return false;
        for (size_t i = 0; i < a->n_users; i++)
                if (auth_equal(user, a->users[i].name))
                        match = &a->users[i];
        if (!crypt_into(password, a->cache_setting, fast, sizeof(fast)))
                return false;
        if (match) {
                char cached[128];
                pthread_mutex_lock(&a->lock);
                memcpy(cached, match->cached, sizeof(cached));
                pthread_mutex_unlock(&a->lock);
                if (cached[0] && auth_equal(fast, cached))
                        return true;
        }
        /* An unknown user costs one bcrypt too (against the first user's
         * hash), so response time does not tell which names exist. */
        const struct auth_user *target = match ? match : &a->users[0];
        /* Another thread is already hashing: refuse now rather than queue. */
        if (pthread_mutex_trylock(&a->slow_lock) != 0)
                return false;
        bool hashed = crypt_into(password, target->hash, slow, sizeof(slow));
        pthread_mutex_unlock(&a->slow_lock);
        if (!hashed)
                return false;
        bool ok = auth_equal(slow, target->hash) && match;
        if (ok) {
                pthread_mutex_lock(&a->lock);
                memcpy(match->cached, fast, sizeof(match->cached));
                pthread_mutex_unlock(&a->lock);
        }
        explicit_bzero(slow, sizeof(slow));
        return ok;
}

bool auth_check_bearer(const struct auth *a, const char *token) {
        if (!a || a->token_len == 0 || !token)
                return false;
        return auth_equal(token, a->token);
}
