#include "config.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "lib/log.h"

/* stderr goes to a temporary file for each case; read_back() returns what
 * was written to it. */
struct capture {
        char path[64];
        int saved_stderr;
        char text[4096];
};

static int capture_setup(void **state) {
        struct capture *c = calloc(1, sizeof(*c));
        assert_non_null(c);
        snprintf(c->path, sizeof(c->path), "/tmp/test-log.XXXXXX");
        int fd = mkstemp(c->path);
        assert_true(fd >= 0);
        c->saved_stderr = dup(STDERR_FILENO);
        assert_true(dup2(fd, STDERR_FILENO) >= 0);
        close(fd);
        unsetenv("JOURNAL_STREAM");
        *state = c;
        return 0;
}

static int capture_teardown(void **state) {
        struct capture *c = *state;
        dup2(c->saved_stderr, STDERR_FILENO);
        close(c->saved_stderr);
        unlink(c->path);
        free(c);
        unsetenv("JOURNAL_STREAM");
        return 0;
}

static const char *read_back(struct capture *c) {
        FILE *f = fopen(c->path, "re");
        assert_non_null(f);
        size_t n = fread(c->text, 1, sizeof(c->text) - 1, f);
        c->text[n] = '\0';
        fclose(f);
        return c->text;
}

static void log_msg__plain_stderr__level_and_collector_prefix(void **state) {
        struct capture *c = *state;

        log_init(LOG_LEVEL_INFO);
        log_error("database %s is gone", "x.db");
        log_collector(LOG_LEVEL_WARNING, "sysfs", "read failed: %s", "No such device");
        assert_string_equal(read_back(c), "neurond: error: database x.db is gone\n"
                                          "neurond: warning: collector sysfs: read failed: No such device\n");
}

static void log_msg__above_max_level__dropped(void **state) {
        struct capture *c = *state;

        log_init(LOG_LEVEL_WARNING);
        log_info("not shown");
        log_debug("not shown either");
        log_warning("shown");
        log_set_level(LOG_LEVEL_DEBUG);
        log_debug("shown after the level changed");
        assert_string_equal(read_back(c), "neurond: warning: shown\nneurond: debug: shown after the level changed\n");
}

static void log_msg__journal_stream_of_another_file__plain(void **state) {
        struct capture *c = *state;

        /* An inherited JOURNAL_STREAM that does not name our stderr. */
        setenv("JOURNAL_STREAM", "1:1", 1);
        log_init(LOG_LEVEL_INFO);
        log_info("hello");
        assert_string_equal(read_back(c), "neurond: info: hello\n");
}

static void log_msg__journal_unreachable__priority_prefix(void **state) {
        struct capture *c = *state;
        struct stat st;
        char stream[64];

        /* With a journal listening the message would go there instead. */
        if (access("/run/systemd/journal/socket", F_OK) == 0)
                skip();
        assert_int_equal(fstat(STDERR_FILENO, &st), 0);
        snprintf(stream, sizeof(stream), "%llu:%llu", (unsigned long long) st.st_dev, (unsigned long long) st.st_ino);
        setenv("JOURNAL_STREAM", stream, 1);
        log_init(LOG_LEVEL_INFO);
        log_error("disk full");
        log_collector(LOG_LEVEL_WARNING, "host", "slow read");
        assert_string_equal(read_back(c), "<3>disk full\n<4>collector host: slow read\n");
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test_setup_teardown(log_msg__plain_stderr__level_and_collector_prefix, capture_setup,
                                                capture_teardown),
                cmocka_unit_test_setup_teardown(log_msg__above_max_level__dropped, capture_setup, capture_teardown),
                cmocka_unit_test_setup_teardown(log_msg__journal_stream_of_another_file__plain, capture_setup,
                                                capture_teardown),
                cmocka_unit_test_setup_teardown(log_msg__journal_unreachable__priority_prefix, capture_setup,
                                                capture_teardown),
        };
        return cmocka_run_group_tests_name("log", tests, NULL, NULL);
}
