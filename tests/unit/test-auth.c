#include "config.h"

#include <arpa/inet.h>
#include <crypt.h>
#include <errno.h>
#include <gnutls/gnutls.h>
#include <netinet/in.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "web/auth.h"

static char dir[] = "/tmp/neurond-test-auth.XXXXXX";

static void write_file(const char *name, const char *text, char *ret_path, size_t size) {
        snprintf(ret_path, size, "%s/%s", dir, name);
        FILE *f = fopen(ret_path, "we");
        assert_non_null(f);
        fputs(text, f);
        fclose(f);
}

/* A bcrypt hash at the lowest cost, to keep the test quick. */
static void bcrypt(const char *password, char *out, size_t size) {
        char salt[64];
        struct crypt_data cd = { 0 };
        assert_non_null(crypt_gensalt_rn("$2b$", 4, NULL, 0, salt, sizeof(salt)));
        const char *h = crypt_r(password, salt, &cd);
        assert_non_null(h);
        assert_int_equal(h[0], '$');
        snprintf(out, size, "%s", h);
}

/* "Basic " and the base64 of len bytes of "user:password". */
static void basic_header(const char *credentials, size_t len, char *out, size_t size) {
        gnutls_datum_t in = { .data = (unsigned char *) credentials, .size = (unsigned) len }, b64 = { 0 };
        assert_int_equal(gnutls_base64_encode2(&in, &b64), 0);
        snprintf(out, size, "Basic %.*s", (int) b64.size, b64.data);
        gnutls_free(b64.data);
}

/* What a request with this header gets: auth_check, and auth_verify when
 * it asks for it. */
static enum auth_verdict judge(struct auth *a, const char *header, const struct sockaddr *client) {
        struct auth_attempt attempt;
        enum auth_verdict v = auth_check(a, header, client, &attempt);
        return v == AUTH_VERIFY ? auth_verify(a, &attempt) : v;
}

static bool basic(struct auth *a, const char *user, const char *password) {
        char credentials[256], header[512];
        snprintf(credentials, sizeof(credentials), "%s:%s", user, password);
        basic_header(credentials, strlen(credentials), header, sizeof(header));
        return judge(a, header, NULL) == AUTH_GRANTED;
}

static struct auth *users_alice_bob(char *path, size_t size) {
        char h1[128], h2[128], text[512], err[256];
        struct auth *a = NULL;

        bcrypt("s3cret", h1, sizeof(h1));
        bcrypt("other", h2, sizeof(h2));
        snprintf(text, sizeof(text), "# comment\nalice:%s\n\nbob:%s\n", h1, h2);
        write_file("users", text, path, size);
        assert_int_equal(auth_new(path, NULL, &a, err, sizeof(err)), 0);
        return a;
}

static void auth_check__basic__only_right_pairs(void **state) {
        char path[256];
        struct auth *a = users_alice_bob(path, sizeof(path));

        assert_true(auth_has_users(a));
        for (int round = 0; round < 2; round++) { /* the second round hits the cache */
                assert_true(basic(a, "alice", "s3cret"));
                assert_true(basic(a, "bob", "other"));
                assert_false(basic(a, "alice", "other"));
                assert_false(basic(a, "alice", "s3cret "));
                assert_false(basic(a, "alice", ""));
                assert_false(basic(a, "carol", "s3cret"));
        }
        assert_int_equal(judge(a, "Bearer s3cret", NULL), AUTH_DENIED);
        assert_int_equal(judge(a, NULL, NULL), AUTH_DENIED);
        assert_int_equal(judge(a, "Basic !!!", NULL), AUTH_DENIED);
        assert_int_equal(judge(a, "Digest x", NULL), AUTH_DENIED);
        auth_free(a);
        unlink(path);
}

static void auth_check__verified_credentials__granted_without_hashing(void **state) {
        char path[256], header[128];
        struct auth_attempt attempt;
        struct auth *a = users_alice_bob(path, sizeof(path));

        basic_header("alice:s3cret", 12, header, sizeof(header));
        assert_int_equal(auth_check(a, header, NULL, &attempt), AUTH_VERIFY);
        assert_int_equal(auth_verify(a, &attempt), AUTH_GRANTED);
        assert_int_equal(auth_check(a, header, NULL, &attempt), AUTH_GRANTED);
        /* The scheme's name in any case; the cache holds the credentials,
         * not the header's spelling. */
        header[0] = 'b';
        assert_int_equal(auth_check(a, header, NULL, &attempt), AUTH_GRANTED);
        memcpy(header, "BASIC", 5);
        assert_int_equal(auth_check(a, header, NULL, &attempt), AUTH_GRANTED);
        auth_free(a);
        unlink(path);
}

static void auth_check__nul_in_credentials__denied(void **state) {
        char path[256], header[128];
        struct auth *a = users_alice_bob(path, sizeof(path));

        /* A NUL ends nothing: the whole decoded password is compared. */
        basic_header("alice:s3cret\0junk", 17, header, sizeof(header));
        assert_int_equal(judge(a, header, NULL), AUTH_DENIED);
        basic_header("alice:s3cret\0", 13, header, sizeof(header));
        assert_int_equal(judge(a, header, NULL), AUTH_DENIED);
        basic_header("alice\0x:s3cret", 14, header, sizeof(header));
        assert_int_equal(judge(a, header, NULL), AUTH_DENIED);
        assert_true(basic(a, "alice", "s3cret"));
        auth_free(a);
        unlink(path);
}

static void auth_check__repeated_failures__client_backed_off(void **state) {
        char path[256], right[128], wrong[128];
        struct auth_attempt attempt;
        struct auth *a = users_alice_bob(path, sizeof(path));
        struct sockaddr_in x = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(0x7f000002) };
        struct sockaddr_in y = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(0x7f000003) };

        basic_header("alice:s3cret", 12, right, sizeof(right));
        basic_header("alice:wrong", 11, wrong, sizeof(wrong));
        for (int i = 0; i < AUTH_FREE_FAILURES + 1; i++) {
                assert_int_equal(auth_check(a, wrong, (struct sockaddr *) &x, &attempt), AUTH_VERIFY);
                assert_int_equal(auth_verify(a, &attempt), AUTH_DENIED);
        }
        /* Backed off: denied at once, even the right password. */
        assert_int_equal(auth_check(a, wrong, (struct sockaddr *) &x, &attempt), AUTH_DENIED);
        assert_int_equal(auth_check(a, right, (struct sockaddr *) &x, &attempt), AUTH_DENIED);
        /* Another client is not. */
        assert_int_equal(judge(a, right, (struct sockaddr *) &y), AUTH_GRANTED);
        /* Once cached, the right credentials pass from anywhere. */
        assert_int_equal(auth_check(a, right, (struct sockaddr *) &x, &attempt), AUTH_GRANTED);
        auth_free(a);
        unlink(path);
}

static void auth_new__bad_files__einval(void **state) {
        char path[256], err[256];
        struct auth *a = NULL;

        write_file("plain", "alice:password\n", path, sizeof(path));
        assert_int_equal(auth_new(path, NULL, &a, err, sizeof(err)), -EINVAL);
        assert_non_null(strstr(err, "not bcrypt"));
        write_file("empty", "# nobody\n", path, sizeof(path));
        assert_int_equal(auth_new(path, NULL, &a, err, sizeof(err)), -EINVAL);
        assert_int_equal(auth_new("/nonexistent/users", NULL, &a, err, sizeof(err)), -EINVAL);
        assert_int_equal(auth_new(NULL, "", &a, err, sizeof(err)), -EINVAL);
        write_file("token", "\n", path, sizeof(path));
        assert_int_equal(auth_new(NULL, path, &a, err, sizeof(err)), -EINVAL);
        write_file("token2", "one\ntwo\n", path, sizeof(path));
        assert_int_equal(auth_new(NULL, path, &a, err, sizeof(err)), -EINVAL);
        assert_null(a);
}

static void auth_check__bearer__exact_match(void **state) {
        char path[256], err[256];
        struct auth *a = NULL;

        write_file("tok", "abc123XYZ\n", path, sizeof(path));
        assert_int_equal(auth_new(NULL, path, &a, err, sizeof(err)), 0);
        assert_int_equal(judge(a, "Bearer abc123XYZ", NULL), AUTH_GRANTED);
        assert_int_equal(judge(a, "bearer abc123XYZ", NULL), AUTH_GRANTED);
        assert_int_equal(judge(a, "BEARER  abc123XYZ", NULL), AUTH_GRANTED);
        assert_int_equal(judge(a, "Bearer abc123XY", NULL), AUTH_DENIED);
        assert_int_equal(judge(a, "Bearer abc123XYZZ", NULL), AUTH_DENIED);
        assert_int_equal(judge(a, "Bearer ", NULL), AUTH_DENIED);
        assert_int_equal(judge(a, "Bearerabc123XYZ", NULL), AUTH_DENIED);
        assert_false(basic(a, "abc123XYZ", "abc123XYZ"));
        auth_free(a);
        unlink(path);
}

static void auth_equal__strings__equality(void **state) {
        assert_true(auth_equal("", ""));
        assert_true(auth_equal("abc", "abc"));
        assert_false(auth_equal("abc", "abd"));
        assert_false(auth_equal("ab", "abc"));
        assert_false(auth_equal("abcd", "abc"));
        assert_false(auth_equal("", "a"));
}

static int setup(void **state) {
        return mkdtemp(dir) ? 0 : -1;
}

static int teardown(void **state) {
        static const char *const names[] = { "plain", "empty", "token", "token2", "users", "tok" };
        char path[256];
        for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
                snprintf(path, sizeof(path), "%s/%s", dir, names[i]);
                unlink(path);
        }
        return rmdir(dir);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(auth_check__basic__only_right_pairs),
                cmocka_unit_test(auth_check__verified_credentials__granted_without_hashing),
                cmocka_unit_test(auth_check__nul_in_credentials__denied),
                cmocka_unit_test(auth_check__repeated_failures__client_backed_off),
                cmocka_unit_test(auth_new__bad_files__einval),
                cmocka_unit_test(auth_check__bearer__exact_match),
                cmocka_unit_test(auth_equal__strings__equality),
        };
        return cmocka_run_group_tests_name("auth", tests, setup, teardown);
}
