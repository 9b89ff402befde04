/* Allocation failure paths: every allocation that the code under test
 * makes is failed in turn, and the function must report -ENOMEM (or its
 * documented failure), leave its out-parameter alone and free everything it
 * had taken. The program is linked with --wrap=malloc,calloc,realloc, so
 * only calls from libneurond.a (and this file) come here; SQLite's,
 * libmicrohttpd's and cmocka's own allocations, made inside their shared
 * libraries, are not failed. */
#include "config.h"

#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "collectors/collector.h"
#include "daemon/loop.h"
#include "lib/snapshot.h"
#include "tests/fakes/fake-collector.h"
#include "lib/buf.h"
#include "web/expo.h"

void *__real_malloc(size_t size);
void *__real_calloc(size_t n, size_t size);
void *__real_realloc(void *p, size_t size);
void *__wrap_malloc(size_t size);
void *__wrap_calloc(size_t n, size_t size);
void *__wrap_realloc(void *p, size_t size);

/* The allocator hook: the n-th allocation from now fails (0: none). */
static long alloc_fail_at;
static long alloc_count;

static bool alloc_should_fail(void) {
        if (alloc_fail_at <= 0)
                return false;
        return ++alloc_count == alloc_fail_at;
}

void *__wrap_malloc(size_t size) {
        return alloc_should_fail() ? NULL : __real_malloc(size);
}

void *__wrap_calloc(size_t n, size_t size) {
        return alloc_should_fail() ? NULL : __real_calloc(n, size);
}

void *__wrap_realloc(void *p, size_t size) {
        return alloc_should_fail() ? NULL : __real_realloc(p, size);
}

static void fail_nth(long n) {
        alloc_fail_at = n;
        alloc_count = 0;
}

/* Runs attempt() failing its 1st, 2nd ... allocation until it succeeds
 * with none failed; each failing run must return -ENOMEM. Returns the
 * number of allocations the successful run made. */
static long each_allocation_fails(int (*attempt)(void *), void *arg) {
        for (long n = 1;; n++) {
                fail_nth(n);
                int r = attempt(arg);
                long made = alloc_count;
                fail_nth(0);
                if (made < n) {
                        /* Fewer allocations than n: nothing failed, it must work. */
                        assert_int_equal(r, 0);
                        return n - 1;
                }
                assert_int_equal(r, -ENOMEM);
        }
}

static int attempt_model_open(void *arg) {
        struct collector *c = NULL;
        char err[256];
        int r = collector_open_spec(arg, &c, err, sizeof(err));
        if (r < 0) {
                assert_null(c);
                return r;
        }
        collector_close(c);
        return 0;
}

static void collector_open_spec__each_allocation_fails__enomem(void **state) {
        long made = each_allocation_fails(attempt_model_open, (void *) "model:trn1.32xlarge");
        assert_true(made > 3);
}

static int attempt_expo_new(void *arg) {
        const struct collector *c = arg;
        struct expo *e = NULL;
        /* With the instance: instance_info, neuron_hardware_info, labels on every series. */
        const struct expo_instance instance = { .inv = &c->inv, .labels_on_every_series = true };
        int r = expo_new_with(c->inv.series, c->inv.n_series, &instance, &e);
        if (r < 0) {
                assert_null(e);
                return r;
        }
        expo_free(e);
        return 0;
}

static void expo_new__each_allocation_fails__enomem(void **state) {
        struct collector *c = NULL;
        char err[256];
        assert_int_equal(collector_open_spec("model:trn1.2xlarge", &c, err, sizeof(err)), 0);
        assert_true(each_allocation_fails(attempt_expo_new, c) > 3);
        collector_close(c);
}

static int attempt_loop_init(void *arg) {
        struct collector *const *collectors = arg;
        struct snapshot_slot slot;
        struct loop l;
        int r = loop_init(&l, collectors, 1, NULL, &slot, 1000);
        if (r < 0)
                return r;
        loop_done(&l);
        return 0;
}

static void loop_init__each_allocation_fails__enomem(void **state) {
        struct fake_collector *fake = NULL;
        assert_int_equal(fake_collector_new(&fake), 0);
        struct collector *collectors[] = { &fake->base };
        /* The offsets, the series, and the series set with its copy. */
        assert_int_equal(each_allocation_fails(attempt_loop_init, collectors), 4);
        fake_collector_free(fake);
}

/* A refresh that fails leaves the inventory as it was: no runtime listed
 * before the first, the same series. */
static int attempt_model_refresh(void *arg) {
        struct collector *c = NULL;
        char err[256];
        long fail_at = alloc_fail_at;
        fail_nth(0);
        assert_int_equal(collector_open_spec(arg, &c, err, sizeof(err)), 0);
        size_t n_series = c->inv.n_series;
        fail_nth(fail_at);
        int r = c->ops->refresh(c, INT64_C(1767225600000));
        long made = alloc_count;
        fail_nth(0);
        alloc_count = made;
        if (r < 0) {
                assert_int_equal(c->inv.n_runtimes, 0);
                assert_int_equal(c->inv.n_series, n_series);
        } else {
                assert_int_equal(r, 1);
                assert_true(c->inv.n_runtimes > 0 && c->inv.n_series > n_series);
        }
        collector_close(c);
        return r < 0 ? r : 0;
}

static void model_refresh__each_allocation_fails__enomem_and_inventory_kept(void **state) {
        assert_true(each_allocation_fails(attempt_model_refresh, (void *) "model:trn1.32xlarge,scenario=inference") >
                    3);
}

static int attempt_fake_new(void *arg) {
        struct fake_collector *fake = NULL;
        int r = fake_collector_new(&fake);
        if (r < 0)
                return r;
        fake_collector_free(fake);
        return 0;
}

static void inventory_add_series__allocation_fails__enomem(void **state) {
        assert_int_equal(each_allocation_fails(attempt_fake_new, NULL), 3);
}

static void snapshot_new__allocation_fails__null(void **state) {
        fail_nth(1);
        assert_null(snapshot_new(100));
        fail_nth(0);
}

static void loop_tick__snapshot_allocation_fails__enomem_and_previous_kept(void **state) {
        struct fake_collector *fake = NULL;
        struct snapshot_slot slot;
        struct loop l;
        assert_int_equal(fake_collector_new(&fake), 0);
        struct collector *collectors[] = { &fake->base };
        snapshot_slot_init(&slot);
        assert_int_equal(loop_init(&l, collectors, 1, NULL, &slot, 1000), 0);
        fail_nth(1);
        assert_int_equal(loop_tick(&l), -ENOMEM);
        fail_nth(0);
        assert_null(snapshot_slot_get(&slot));
        assert_int_equal(fake->reads, 0);
        loop_done(&l);
        snapshot_slot_destroy(&slot);
        fake_collector_free(fake);
}

static void buf__growth_fails__failed_and_stays_failed(void **state) {
        struct buf b = { 0 };
        buf_puts(&b, "first");
        assert_false(b.failed);
        fail_nth(1);
        buf_reserve(&b, 100000);
        fail_nth(0);
        assert_true(b.failed);
        buf_puts(&b, "second");
        buf_printf(&b, "%d", 3);
        assert_true(b.failed);
        buf_free(&b);
        assert_false(b.failed);
        assert_null(b.data);
}

static void expo_render__output_growth_fails__buffer_marked_failed(void **state) {
        struct collector *c = NULL;
        struct expo *e = NULL;
        struct buf out = { 0 };
        char err[256];
        static const char *const names[] = { "backend" };
        struct expo_self self = { .version = "t", .backend = "model", .n_collectors = 1, .collector_names = names };
        assert_int_equal(collector_open_spec("model:trn1.2xlarge", &c, err, sizeof(err)), 0);
        assert_int_equal(expo_new(c->inv.series, c->inv.n_series, &e), 0);
        struct snapshot *snap = snapshot_new(c->inv.n_series);
        assert_non_null(snap);
        /* The HTTP layer answers 500 for a failed buffer; here: it is marked. */
        fail_nth(1);
        expo_render(e, snap, &self, ACCEPT_TEXT, &out);
        fail_nth(0);
        assert_true(out.failed);
        buf_free(&out);
        snapshot_unref(snap);
        expo_free(e);
        collector_close(c);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(collector_open_spec__each_allocation_fails__enomem),
                cmocka_unit_test(expo_new__each_allocation_fails__enomem),
                cmocka_unit_test(loop_init__each_allocation_fails__enomem),
                cmocka_unit_test(model_refresh__each_allocation_fails__enomem_and_inventory_kept),
                cmocka_unit_test(inventory_add_series__allocation_fails__enomem),
                cmocka_unit_test(snapshot_new__allocation_fails__null),
                cmocka_unit_test(loop_tick__snapshot_allocation_fails__enomem_and_previous_kept),
                cmocka_unit_test(buf__growth_fails__failed_and_stays_failed),
                cmocka_unit_test(expo_render__output_growth_fails__buffer_marked_failed),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
