#include "config.h"

#include <crypt.h>
#include <errno.h>
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

static void auth_check_basic__users_file__only_right_pairs(void **state) {
        char h1[128], h2[128], text[512], path[256], err[256];
        struct auth *a = NULL;

        bcrypt("s3cret", h1, sizeof(h1));
        bcrypt("other", h2, sizeof(h2));
        snprintf(text, sizeof(text), "# comment\nalice:%s\n\nbob:%s\n", h1, h2);
        write_file("users", text, path, sizeof(path));
        assert_int_equal(auth_new(path, NULL, &a, err, sizeof(err)), 0);
        assert_true(auth_has_users(a));
        for (int round = 0; round < 2; round++) { /* the second round hits the cache */
                assert_true(auth_check_basic(a, "alice", "s3cret"));
                assert_true(auth_check_basic(a, "bob", "other"));
                assert_false(auth_check_basic(a, "alice", "other"));
                assert_false(auth_check_basic(a, "alice", "s3cret "));
                assert_false(auth_check_basic(a, "alice", ""));
                assert_false(auth_check_basic(a, "carol", "s3cret"));
                assert_false(auth_check_bearer(a, "s3cret"));
        }
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

static void auth_check_bearer__token_file__exact_match(void **state) {
        char path[256], err[256];
        struct auth *a = NULL;

        write_file("tok", "abc123XYZ\n", path, sizeof(path));
        assert_int_equal(auth_new(NULL, path, &a, err, sizeof(err)), 0);
        assert_true(auth_check_bearer(a, "abc123XYZ"));
        assert_false(auth_check_bearer(a, "abc123XY"));
        assert_false(auth_check_bearer(a, "abc123XYZZ"));
        assert_false(auth_check_bearer(a, ""));
        assert_false(auth_check_basic(a, "abc123XYZ", "abc123XYZ"));
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
        static const char *const names[] = { "plain", "empty", "token", "token2" };
        char path[256];
        for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
                snprintf(path, sizeof(path), "%s/%s", dir, names[i]);
                unlink(path);
        }
        return rmdir(dir);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(auth_check_basic__users_file__only_right_pairs),
                cmocka_unit_test(auth_new__bad_files__einval),
                cmocka_unit_test(auth_check_bearer__token_file__exact_match),
                cmocka_unit_test(auth_equal__strings__equality),
        };
        return cmocka_run_group_tests_name("auth", tests, setup, teardown);
}
