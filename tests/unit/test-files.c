#include "config.h"

#include <errno.h>
#include <ftw.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <unistd.h>

#include <cmocka.h>

#include "web-fixture.h"
#include "web/files.h"

/* A web root, /tmp/neurond-files-X/root, with index.html and app.js, and
 * outside it /tmp/neurond-files-X/secret. */
struct tree {
        char top[64], root[80];
};

static void write_file(const char *dir, const char *name, const char *text) {
        char path[160];
        snprintf(path, sizeof(path), "%s/%s", dir, name);
        FILE *f = fopen(path, "w");
        assert_non_null(f);
        fputs(text, f);
        fclose(f);
}

static int tree_setup(void **state) {
        struct tree *t = calloc(1, sizeof(*t));
        assert_non_null(t);
        snprintf(t->top, sizeof(t->top), "/tmp/neurond-files-XXXXXX");
        assert_non_null(mkdtemp(t->top));
        snprintf(t->root, sizeof(t->root), "%s/root", t->top);
        assert_int_equal(mkdir(t->root, 0700), 0);
        write_file(t->root, "index.html", "<!doctype html>\n");
        write_file(t->root, "app.js", "1;\n");
        write_file(t->top, "secret", "key\n");
        *state = t;
        return 0;
}

static int remove_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw) {
        return remove(path);
}

static int tree_teardown(void **state) {
        struct tree *t = *state;
        /* Depth first, symlinks not followed. */
        assert_int_equal(nftw(t->top, remove_entry, 8, FTW_DEPTH | FTW_PHYS), 0);
        free(t);
        return 0;
}

static int open_in(const struct tree *t, const char *path) {
        struct stat st;
        int fd = -1;
        int r = files_open(t->root, path, &fd, &st);
        if (r == 0) {
                assert_true(S_ISREG(st.st_mode));
                close(fd);
        }
        return r;
}

static void files_open__plain_files__opened(void **state) {
        struct tree *t = *state;
        struct stat st;
        int fd;

        assert_int_equal(files_open(t->root, "/", &fd, &st), 0);
        assert_int_equal(st.st_size, strlen("<!doctype html>\n"));
        close(fd);
        assert_int_equal(open_in(t, "/app.js"), 0);
        assert_int_equal(open_in(t, "/nope.js"), -ENOENT);
}

static void files_open__dot_segments_and_odd_separators__refused(void **state) {
        struct tree *t = *state;

        assert_int_equal(open_in(t, "/../secret"), -ENOENT);
        assert_int_equal(open_in(t, "/./app.js"), -ENOENT);
        assert_int_equal(open_in(t, "/x/../app.js"), -ENOENT);
        assert_int_equal(open_in(t, "/.hidden"), -ENOENT);
        assert_int_equal(open_in(t, "//app.js"), -ENOENT);
        assert_int_equal(open_in(t, "/..\\secret"), -ENOENT);
        assert_int_equal(open_in(t, "app.js"), -ENOENT);
        assert_int_equal(open_in(t, "*"), -ENOENT);
}

static void files_open__symlinks__only_inside_the_root(void **state) {
        struct tree *t = *state;
        char link[160], target[160];

        snprintf(target, sizeof(target), "%s/secret", t->top);
        snprintf(link, sizeof(link), "%s/out", t->root);
        assert_int_equal(symlink(target, link), 0);
        assert_int_equal(open_in(t, "/out"), -ENOENT);
        snprintf(link, sizeof(link), "%s/up", t->root);
        assert_int_equal(symlink("..", link), 0);
        assert_int_equal(open_in(t, "/up/secret"), -ENOENT);
        snprintf(link, sizeof(link), "%s/same.js", t->root);
        assert_int_equal(symlink("app.js", link), 0);
        assert_int_equal(open_in(t, "/same.js"), 0);
}

static void files_open__fifo_and_directory__refused_without_blocking(void **state) {
        struct tree *t = *state;
        char path[160];

        snprintf(path, sizeof(path), "%s/pipe", t->root);
        assert_int_equal(mkfifo(path, 0600), 0);
        snprintf(path, sizeof(path), "%s/sub", t->root);
        assert_int_equal(mkdir(path, 0700), 0);
        /* Opening a FIFO without a writer blocks unless told not to: the
         * alarm ends a test that would otherwise hang. */
        alarm(10);
        assert_int_equal(open_in(t, "/pipe"), -ENOENT);
        alarm(0);
        assert_int_equal(open_in(t, "/sub"), -ENOENT);
        assert_int_equal(open_in(t, "/sub/"), -ENOENT);
}

static void files_etag_matches__if_none_match_lists__weak_and_star(void **state) {
        const char *etag = "\"1a-2b-3c\"";

        assert_false(files_etag_matches(NULL, etag));
        assert_true(files_etag_matches("\"1a-2b-3c\"", etag));
        assert_true(files_etag_matches("W/\"1a-2b-3c\"", etag));
        assert_true(files_etag_matches("\"x\", \"1a-2b-3c\"", etag));
        assert_true(files_etag_matches("\"1a-2b-3c\",\"x\"", etag));
        assert_true(files_etag_matches("*", etag));
        assert_false(files_etag_matches("\"1a-2b-3\"", etag));
        assert_false(files_etag_matches("\"1a-2b-3c0\"", etag));
        assert_false(files_etag_matches("", etag));
}

static void files_etag__file_changes__new_etag(void **state) {
        struct stat st = { .st_ino = 26, .st_size = 43, .st_mtim = { 1, 5 } };
        char a[64], b[64];

        files_etag(&st, a, sizeof(a));
        assert_string_equal(a, "\"1a-2b-3b9aca05\"");
        st.st_mtim.tv_nsec = 6;
        files_etag(&st, b, sizeof(b));
        assert_string_not_equal(a, b);
}

static void files_mime_type__extensions__content_types(void **state) {
        assert_string_equal(files_mime_type("/index.html"), "text/html; charset=utf-8");
        assert_string_equal(files_mime_type("/vendor/uPlot.iife.min.js"), "text/javascript; charset=utf-8");
        assert_string_equal(files_mime_type("/favicon.svg"), "image/svg+xml");
        assert_string_equal(files_mime_type("/LICENSE"), "application/octet-stream");
        assert_string_equal(files_mime_type("/x.html.bak"), "application/octet-stream");
}

static void files_serve__through_the_server__etag_revalidates(void **state) {
        struct web_fixture f;
        struct web_answer a;
        char etag[64], header[128], value[128];

        web_fixture_init(&f);
        web_fixture_start(&f);
        web_fixture_ask(&f, "GET", "/", NULL, &a);
        assert_int_equal(a.status, 200);
        assert_string_equal(a.body, "<!doctype html>hello\n");
        assert_true(web_answer_header(&a, "Content-Type", value, sizeof(value)));
        assert_string_equal(value, "text/html; charset=utf-8");
        assert_true(web_answer_header(&a, "Cache-Control", value, sizeof(value)));
        assert_string_equal(value, "no-cache");
        assert_true(web_answer_header(&a, "ETag", etag, sizeof(etag)));
        web_answer_free(&a);

        snprintf(header, sizeof(header), "If-None-Match: %s\r\n", etag);
        web_fixture_ask(&f, "GET", "/index.html", header, &a);
        assert_int_equal(a.status, 304);
        assert_int_equal(a.body_len, 0);
        web_answer_free(&a);
        web_fixture_expect(&f, "GET", "/index.html", "If-None-Match: \"other\"\r\n", 200, "hello");
        web_fixture_expect(&f, "GET", "/%2e%2e/%2e%2e/etc/passwd", NULL, 404, "\"errorType\":\"not_found\"");
        web_fixture_free(&f);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test_setup_teardown(files_open__plain_files__opened, tree_setup, tree_teardown),
                cmocka_unit_test_setup_teardown(files_open__dot_segments_and_odd_separators__refused, tree_setup,
                                                tree_teardown),
                cmocka_unit_test_setup_teardown(files_open__symlinks__only_inside_the_root, tree_setup, tree_teardown),
                cmocka_unit_test_setup_teardown(files_open__fifo_and_directory__refused_without_blocking, tree_setup,
                                                tree_teardown),
                cmocka_unit_test(files_etag_matches__if_none_match_lists__weak_and_star),
                cmocka_unit_test(files_etag__file_changes__new_etag),
                cmocka_unit_test(files_mime_type__extensions__content_types),
                cmocka_unit_test(files_serve__through_the_server__etag_revalidates),
        };
        return cmocka_run_group_tests_name("files", tests, NULL, NULL);
}
