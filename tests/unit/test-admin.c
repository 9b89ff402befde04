#include "config.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "daemon/settings.h"
#include "web/admin.h"

static bool loopback(const char *text) {
        struct sockaddr_storage ss = { 0 };
        if (strchr(text, ':')) {
                struct sockaddr_in6 *in6 = (struct sockaddr_in6 *) &ss;
                in6->sin6_family = AF_INET6;
                assert_int_equal(inet_pton(AF_INET6, text, &in6->sin6_addr), 1);
        } else {
                struct sockaddr_in *in = (struct sockaddr_in *) &ss;
                in->sin_family = AF_INET;
                assert_int_equal(inet_pton(AF_INET, text, &in->sin_addr), 1);
        }
        return admin_is_loopback((const struct sockaddr *) &ss);
}

static void admin_is_loopback__addresses__only_loopback_passes(void **state) {
        assert_true(loopback("127.0.0.1"));
        assert_true(loopback("127.200.3.4"));
        assert_true(loopback("::1"));
        assert_true(loopback("::ffff:127.0.0.1"));
        assert_false(loopback("10.0.0.1"));
        assert_false(loopback("128.0.0.1"));
        assert_false(loopback("0.0.0.0"));
        assert_false(loopback("::"));
        assert_false(loopback("::ffff:10.1.2.3"));
        assert_false(loopback("2001:db8::1"));
        assert_false(loopback("fe80::1"));
        assert_false(admin_is_loopback(NULL));
}

/* The switch: off by default, on with the flag or `admin = true`. */
static void settings_load__admin__off_unless_enabled(void **state) {
        struct settings s;
        char err[256];
        char *plain[] = { "neurond", NULL };
        char *flag[] = { "neurond", "--enable-admin", NULL };

        assert_int_equal(settings_load(1, plain, &s, err, sizeof(err)), SETTINGS_RUN);
        assert_false(s.admin);
        assert_int_equal(settings_load(2, flag, &s, err, sizeof(err)), SETTINGS_RUN);
        assert_true(s.admin);

        char path[] = "/tmp/neurond-test-admin-XXXXXX";
        int fd = mkstemp(path);
        assert_true(fd >= 0);
        FILE *f = fdopen(fd, "w");
        fputs("[neurond]\nadmin = maybe\n", f);
        fclose(f);
        char *bad[] = { "neurond", "--config", path, NULL };
        assert_int_equal(settings_load(3, bad, &s, err, sizeof(err)), -EINVAL);
        assert_non_null(strstr(err, "admin: 'maybe' is not true or false"));
        unlink(path);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(admin_is_loopback__addresses__only_loopback_passes),
                cmocka_unit_test(settings_load__admin__off_unless_enabled),
        };
        return cmocka_run_group_tests_name("admin", tests, NULL, NULL);
}
