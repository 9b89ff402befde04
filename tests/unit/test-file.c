#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "lib/file.h"

/* A scratch directory per test, and the path of a name in it. */
static char dir[64];
static char path_buf[128];

static const char *in_dir(const char *name) {
        snprintf(path_buf, sizeof(path_buf), "%s/%s", dir, name);
        return path_buf;
}

static void write_bytes(const char *name, const char *bytes, size_t len) {
        FILE *f = fopen(in_dir(name), "w");
        assert_non_null(f);
        assert_int_equal(fwrite(bytes, 1, len, f), len);
        assert_int_equal(fclose(f), 0);
}

static int dir_setup(void **state) {
        snprintf(dir, sizeof(dir), "/tmp/test-file-XXXXXX");
        assert_non_null(mkdtemp(dir));
        /* A file opened for ever would end the test: the alarm makes a hang a failure. */
        alarm(10);
        return 0;
}

static int dir_teardown(void **state) {
        char cmd[128];
        alarm(0);
        snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
        assert_int_equal(system(cmd), 0);
        return 0;
}

static void file_read_at__regular__whole_or_efbig(void **state) {
        char buf[8];
        size_t len = 99;
        write_bytes("seven", "1234567", 7);
        write_bytes("eight", "12345678", 8);
        write_bytes("nine", "123456789", 9);

        assert_int_equal(file_read_at(AT_FDCWD, in_dir("seven"), buf, sizeof(buf), 0, &len), 0);
        assert_int_equal(len, 7);
        assert_memory_equal(buf, "1234567", 7);
        assert_int_equal(file_read_at(AT_FDCWD, in_dir("eight"), buf, sizeof(buf), 0, &len), 0);
        assert_int_equal(len, 8);
        len = 99;
        assert_int_equal(file_read_at(AT_FDCWD, in_dir("nine"), buf, sizeof(buf), 0, &len), -EFBIG);
        assert_int_equal(len, 99);
        /* The head, when the caller asks for it. */
        assert_int_equal(file_read_at(AT_FDCWD, in_dir("nine"), buf, sizeof(buf), FILE_READ_HEAD, &len), 0);
        assert_int_equal(len, 8);
        assert_memory_equal(buf, "12345678", 8);
        /* Relative to a directory. */
        int dfd = open(dir, O_PATH | O_DIRECTORY);
        assert_true(dfd >= 0);
        assert_int_equal(file_read_at(dfd, "seven", buf, sizeof(buf), 0, &len), 0);
        assert_int_equal(len, 7);
        close(dfd);
}

static void file_read_at__not_regular__refused_at_once(void **state) {
        char buf[64];
        size_t len = 99;
        assert_int_equal(mkfifo(in_dir("fifo"), 0600), 0);
        assert_int_equal(file_read_at(AT_FDCWD, in_dir("fifo"), buf, sizeof(buf), 0, &len), -EINVAL);
        /* With a writer holding it open, a blocking read would wait for data. */
        int w = open(in_dir("fifo"), O_RDWR | O_NONBLOCK);
        assert_true(w >= 0);
        assert_int_equal(file_read_at(AT_FDCWD, in_dir("fifo"), buf, sizeof(buf), 0, &len), -EINVAL);
        close(w);
        assert_int_equal(file_read_at(AT_FDCWD, "/dev/zero", buf, sizeof(buf), FILE_READ_HEAD, &len), -EINVAL);
        assert_int_equal(symlink("/dev/zero", in_dir("zero")), 0);
        assert_int_equal(file_read_at(AT_FDCWD, in_dir("zero"), buf, sizeof(buf), 0, &len), -EINVAL);
        assert_int_equal(file_read_at(AT_FDCWD, dir, buf, sizeof(buf), 0, &len), -EISDIR);
        assert_int_equal(file_read_at(AT_FDCWD, in_dir("missing"), buf, sizeof(buf), 0, &len), -ENOENT);
        assert_int_equal(len, 99);
}

static void file_read_at__procfs__reads(void **state) {
        char buf[64];
        size_t len = 0;
        /* procfs says its files are empty (st_size 0); they are not. */
        assert_int_equal(file_read_at(AT_FDCWD, "/proc/self/stat", buf, sizeof(buf), FILE_READ_HEAD, &len), 0);
        assert_true(len > 0);
}

static void file_read_text__text__whole_string(void **state) {
        char *text = NULL, err[128] = "";
        size_t len = 0;
        write_bytes("small", "a = 1\n", 6);
        assert_int_equal(file_read_text(in_dir("small"), 1024, &text, &len, err, sizeof(err)), 0);
        assert_int_equal(len, 6);
        assert_string_equal(text, "a = 1\n");
        free(text);

        /* Longer than the first read, and exactly at the cap. */
        char *big = malloc(20000);
        assert_non_null(big);
        memset(big, 'x', 20000);
        write_bytes("big", big, 20000);
        assert_int_equal(file_read_text(in_dir("big"), 20000, &text, &len, err, sizeof(err)), 0);
        assert_int_equal(len, 20000);
        assert_int_equal(strlen(text), 20000);
        free(text);
        free(big);

        write_bytes("empty", "", 0);
        assert_int_equal(file_read_text(in_dir("empty"), 10, &text, &len, err, sizeof(err)), 0);
        assert_int_equal(len, 0);
        assert_string_equal(text, "");
        free(text);

        /* procfs: a size of 0 that is not the size. */
        assert_int_equal(file_read_text("/proc/self/status", 1 << 20, &text, &len, err, sizeof(err)), 0);
        assert_true(len > 0 && strncmp(text, "Name:", 5) == 0);
        free(text);
}

static void file_read_text__too_long__efbig(void **state) {
        char *text = NULL, err[128] = "";
        size_t len = 0;
        write_bytes("k", "12345678901", 11);
        assert_int_equal(file_read_text(in_dir("k"), 10, &text, &len, err, sizeof(err)), -EFBIG);
        assert_string_equal(err, "is larger than 10 bytes");
        assert_null(text);

        /* 300 MB of NULs (sparse): refused for its size, read no further than the cap. */
        int fd = open(in_dir("huge"), O_WRONLY | O_CREAT, 0600);
        assert_true(fd >= 0);
        assert_int_equal(ftruncate(fd, 300 * 1000 * 1000), 0);
        close(fd);
        assert_int_equal(file_read_text(in_dir("huge"), 1024 * 1024, &text, &len, err, sizeof(err)), -EFBIG);
        assert_string_equal(err, "is larger than 1 MiB");
        assert_null(text);
}

static void file_read_text__nul_byte__line_named(void **state) {
        char *text = NULL, err[128] = "";
        size_t len = 0;
        write_bytes("nul", "a = 1\nb = 2\nc\0 = 3\n", 19);
        assert_int_equal(file_read_text(in_dir("nul"), 1024, &text, &len, err, sizeof(err)), -EINVAL);
        assert_string_equal(err, "line 3 holds a NUL byte: not a text file");
        assert_null(text);
}

static void file_read_text__not_regular__named(void **state) {
        char *text = NULL, err[128] = "";
        size_t len = 0;
        assert_int_equal(mkfifo(in_dir("fifo"), 0600), 0);
        assert_int_equal(file_read_text(in_dir("fifo"), 1024, &text, &len, err, sizeof(err)), -EINVAL);
        assert_string_equal(err, "is a FIFO, not a regular file");
        assert_int_equal(file_read_text("/dev/zero", 1024, &text, &len, err, sizeof(err)), -EINVAL);
        assert_string_equal(err, "is a character device, not a regular file");
        assert_int_equal(file_read_text(dir, 1024, &text, &len, err, sizeof(err)), -EISDIR);
        assert_string_equal(err, "Is a directory");
        assert_int_equal(file_read_text(in_dir("missing"), 1024, &text, &len, err, sizeof(err)), -ENOENT);
        assert_string_equal(err, "No such file or directory");
        assert_null(text);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test_setup_teardown(file_read_at__regular__whole_or_efbig, dir_setup, dir_teardown),
                cmocka_unit_test_setup_teardown(file_read_at__not_regular__refused_at_once, dir_setup, dir_teardown),
                cmocka_unit_test(file_read_at__procfs__reads),
                cmocka_unit_test_setup_teardown(file_read_text__text__whole_string, dir_setup, dir_teardown),
                cmocka_unit_test_setup_teardown(file_read_text__too_long__efbig, dir_setup, dir_teardown),
                cmocka_unit_test_setup_teardown(file_read_text__nul_byte__line_named, dir_setup, dir_teardown),
                cmocka_unit_test_setup_teardown(file_read_text__not_regular__named, dir_setup, dir_teardown),
        };
        return cmocka_run_group_tests_name("file", tests, NULL, NULL);
}
