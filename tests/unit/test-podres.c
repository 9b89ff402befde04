#include "config.h"

#include <errno.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cmocka.h>

#include "kube/podres.h"

/* The answers of a kubelet that is there are tested with a real gRPC
 * server (tests/integration/pods-*.sh); these are the ways it is not. */

struct fixture {
        char dir[64];
        char path[96];
        int fd; /* a socket bound at path, or -1 */
};

static int setup(void **state) {
        struct fixture *f = calloc(1, sizeof(*f));
        snprintf(f->dir, sizeof(f->dir), "/tmp/test-podres.XXXXXX");
        if (!mkdtemp(f->dir))
                return -1;
        snprintf(f->path, sizeof(f->path), "%s/kubelet.sock", f->dir);
        f->fd = -1;
        *state = f;
        return 0;
}

static int teardown(void **state) {
        struct fixture *f = *state;
        if (f->fd >= 0)
                close(f->fd);
        unlink(f->path);
        rmdir(f->dir);
        free(f);
        podres_shutdown();
        return 0;
}

/* A unix socket at the fixture's path: listening (connections are
 * accepted by the kernel and never answered) or only bound (connections
 * are refused). */
static void bind_socket(struct fixture *f, bool listening) {
        struct sockaddr_un addr = { .sun_family = AF_UNIX };
        snprintf(addr.sun_path, sizeof(addr.sun_path), "%s", f->path);
        f->fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
        assert_true(f->fd >= 0);
        assert_int_equal(bind(f->fd, (struct sockaddr *) &addr, sizeof(addr)), 0);
        if (listening)
                assert_int_equal(listen(f->fd, 4), 0);
}

static int list(struct fixture *f, int64_t timeout_ms, atomic_bool *stop, char *err, size_t errlen) {
        atomic_bool no = false;
        struct pod_map *m = pod_map_new();
        int r = podres_list(f->path, timeout_ms, stop ? stop : &no, m, err, errlen);
        assert_int_equal(m->n_grants, 0);
        pod_map_unref(m);
        return r;
}

static void podres_list__no_socket__enoent(void **state) {
        struct fixture *f = *state;
        char err[256];
        assert_int_equal(list(f, 1000, NULL, err, sizeof(err)), -ENOENT);
        assert_non_null(strstr(err, f->path));
}

static void podres_list__a_file__enotsock(void **state) {
        struct fixture *f = *state;
        char err[256];
        FILE *file = fopen(f->path, "w");
        fclose(file);
        assert_int_equal(list(f, 1000, NULL, err, sizeof(err)), -ENOTSOCK);
        assert_non_null(strstr(err, "not a socket"));
}

static void podres_list__nobody_listens__econnrefused(void **state) {
        struct fixture *f = *state;
        char err[256];
        bind_socket(f, false);
        /* Refused at once; the deadline only bounds a hang, and gRPC's start
         * under valgrind on a busy machine can take seconds. */
        assert_int_equal(list(f, 60 * 1000, NULL, err, sizeof(err)), -ECONNREFUSED);
}

static void podres_list__listener_never_answers__etimedout(void **state) {
        struct fixture *f = *state;
        char err[256];
        bind_socket(f, true);
        assert_int_equal(list(f, 200, NULL, err, sizeof(err)), -ETIMEDOUT);
}

static void *set_later(void *arg) {
        usleep(100 * 1000);
        atomic_store((atomic_bool *) arg, true);
        return NULL;
}

static void podres_list__stopped_while_waiting__ecanceled(void **state) {
        struct fixture *f = *state;
        char err[256];
        atomic_bool stop = false;
        pthread_t thread;
        bind_socket(f, true);
        /* A deadline far beyond any test's patience: only the stop ends it. */
        pthread_create(&thread, NULL, set_later, &stop);
        assert_int_equal(list(f, 3600 * 1000, &stop, err, sizeof(err)), -ECANCELED);
        pthread_join(thread, NULL);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test_setup_teardown(podres_list__no_socket__enoent, setup, teardown),
                cmocka_unit_test_setup_teardown(podres_list__a_file__enotsock, setup, teardown),
                cmocka_unit_test_setup_teardown(podres_list__nobody_listens__econnrefused, setup, teardown),
                cmocka_unit_test_setup_teardown(podres_list__listener_never_answers__etimedout, setup, teardown),
                cmocka_unit_test_setup_teardown(podres_list__stopped_while_waiting__ecanceled, setup, teardown),
        };
        return cmocka_run_group_tests_name("podres", tests, NULL, NULL);
}
