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

#include "lib/pod.h"

#define CORE "aws.amazon.com/neuroncore"
#define DEVICE "aws.amazon.com/neuron"

/* Two devices of two cores each: device 0 has cores 0 and 1, device 1
 * cores 2 and 3. */
static const struct pod_core two_by_two[] = { { 0, 0 }, { 0, 1 }, { 1, 2 }, { 1, 3 } };

static void assert_holder(const struct pod_holder *h, const char *namespace, const char *pod, const char *container) {
        assert_non_null(h);
        assert_string_equal(h->namespace, namespace);
        assert_string_equal(h->pod, pod);
        assert_string_equal(h->container, container);
}

static void pod_map_add__neuron_resources__granted_by_index(void **state) {
        struct pod_map *m = pod_map_new();
        assert_int_equal(pod_map_add(m, "ml", "train-0", "worker", CORE, "3"), 1);
        assert_int_equal(pod_map_add(m, "ml", "train-0", "worker", DEVICE, "1"), 1);
        assert_int_equal(pod_map_add(m, "ml", "infer-0", "server", "aws.amazon.com/neurondevice", "0"), 1);
        assert_int_equal(m->n_grants, 3);
        /* One holder per container, however many IDs it holds. */
        assert_int_equal(m->n_holders, 2);
        assert_int_equal(m->grants[0].unit, POD_UNIT_CORE);
        assert_int_equal(m->grants[0].index, 3);
        assert_int_equal(m->grants[1].unit, POD_UNIT_DEVICE);
        assert_int_equal(m->grants[1].holder, 0);
        assert_int_equal(m->grants[2].unit, POD_UNIT_DEVICE);
        assert_holder(&m->holders[m->grants[2].holder], "ml", "infer-0", "server");
        assert_int_equal(m->bad_ids, 0);
        pod_map_unref(m);
}

static void pod_map_add__other_resource__ignored(void **state) {
        struct pod_map *m = pod_map_new();
        assert_int_equal(pod_map_add(m, "ml", "train-0", "worker", "nvidia.com/gpu", "GPU-0b1c"), 0);
        assert_int_equal(pod_map_add(m, "ml", "train-0", "worker", "aws.amazon.com/neuroncores", "0"), 0);
        assert_int_equal(m->n_grants, 0);
        assert_int_equal(m->n_holders, 0);
        assert_int_equal(m->bad_ids, 0);
        pod_map_unref(m);
}

static void pod_map_add__id_not_an_index__counted_and_skipped(void **state) {
        struct pod_map *m = pod_map_new();
        assert_int_equal(pod_map_add(m, "ml", "train-0", "worker", CORE, "neuron0-core1"), -EINVAL);
        assert_int_equal(pod_map_add(m, "ml", "train-0", "worker", CORE, "-1"), -EINVAL);
        assert_int_equal(pod_map_add(m, "ml", "train-0", "worker", CORE, ""), -EINVAL);
        assert_int_equal(pod_map_add(m, "ml", "train-0", "worker", DEVICE, "4294967296"), -EINVAL);
        assert_int_equal(m->bad_ids, 4);
        assert_int_equal(m->n_grants, 0);
        assert_int_equal(m->n_holders, 0);
        pod_map_unref(m);
}

static void pod_map_add__names_longer_than_kubernetes_allows__refused(void **state) {
        char long_pod[POD_NAME_MAX + 1], long_label[POD_LABEL_MAX + 1];
        memset(long_pod, 'p', sizeof(long_pod) - 1);
        long_pod[sizeof(long_pod) - 1] = '\0';
        memset(long_label, 'c', sizeof(long_label) - 1);
        long_label[sizeof(long_label) - 1] = '\0';

        struct pod_map *m = pod_map_new();
        assert_int_equal(pod_map_add(m, "ml", long_pod, "worker", CORE, "0"), -EINVAL);
        assert_int_equal(pod_map_add(m, long_label, "train-0", "worker", CORE, "0"), -EINVAL);
        assert_int_equal(pod_map_add(m, "ml", "train-0", long_label, CORE, "0"), -EINVAL);
        /* The longest names Kubernetes allows fit. */
        long_pod[POD_NAME_MAX - 1] = '\0';
        long_label[POD_LABEL_MAX - 1] = '\0';
        assert_int_equal(pod_map_add(m, long_label, long_pod, long_label, CORE, "0"), 1);
        assert_int_equal(m->bad_ids, 3);
        pod_map_unref(m);
}

static void pod_map_core_holder__core_and_device_grants__each_core_its_holder(void **state) {
        struct pod_map *m = pod_map_new();
        pod_map_add(m, "ml", "train-0", "worker", CORE, "1");
        pod_map_add(m, "ml", "infer-0", "server", DEVICE, "1");
        assert_int_equal(pod_map_index(m, two_by_two, 4), 0);
        assert_null(pod_map_core_holder(m, 0));
        assert_holder(pod_map_core_holder(m, 1), "ml", "train-0", "worker");
        /* A device assigned whole holds its cores. */
        assert_holder(pod_map_core_holder(m, 2), "ml", "infer-0", "server");
        assert_holder(pod_map_core_holder(m, 3), "ml", "infer-0", "server");
        assert_holder(pod_map_device_holder(m, 1), "ml", "infer-0", "server");
        /* One core of two: the device is nobody's. */
        assert_null(pod_map_device_holder(m, 0));
        pod_map_unref(m);
}

static void pod_map_core_holder__core_of_a_device_held_by_another__its_own(void **state) {
        struct pod_map *m = pod_map_new();
        pod_map_add(m, "ml", "infer-0", "server", DEVICE, "1");
        pod_map_add(m, "ml", "train-0", "worker", CORE, "3");
        assert_int_equal(pod_map_index(m, two_by_two, 4), 0);
        assert_holder(pod_map_core_holder(m, 2), "ml", "infer-0", "server");
        assert_holder(pod_map_core_holder(m, 3), "ml", "train-0", "worker");
        assert_holder(pod_map_device_holder(m, 1), "ml", "infer-0", "server");
        pod_map_unref(m);
}

static void pod_map_device_holder__every_core_one_container__device_held(void **state) {
        struct pod_map *m = pod_map_new();
        pod_map_add(m, "ml", "train-0", "worker", CORE, "2");
        pod_map_add(m, "ml", "train-0", "worker", CORE, "3");
        pod_map_add(m, "ml", "train-0", "worker", CORE, "0");
        pod_map_add(m, "ml", "train-0", "sidecar", CORE, "1");
        assert_int_equal(pod_map_index(m, two_by_two, 4), 0);
        assert_holder(pod_map_device_holder(m, 1), "ml", "train-0", "worker");
        /* Two containers of one pod share device 0: neither holds it. */
        assert_null(pod_map_device_holder(m, 0));
        assert_holder(pod_map_core_holder(m, 1), "ml", "train-0", "sidecar");
        pod_map_unref(m);
}

static void pod_map_index__indexes_this_host_lacks__left_out(void **state) {
        struct pod_map *m = pod_map_new();
        pod_map_add(m, "ml", "train-0", "worker", CORE, "4");
        pod_map_add(m, "ml", "train-0", "worker", DEVICE, "2");
        assert_int_equal(pod_map_index(m, two_by_two, 4), 0);
        for (unsigned core = 0; core < 4; core++)
                assert_null(pod_map_core_holder(m, core));
        assert_null(pod_map_device_holder(m, 2));
        assert_null(pod_map_core_holder(m, 4));
        /* Still listed: the API shows what the kubelet said. */
        assert_int_equal(m->n_grants, 2);
        pod_map_unref(m);
}

static void pod_map_core_holder__unindexed_or_null_map__nobody(void **state) {
        struct pod_map *m = pod_map_new();
        pod_map_add(m, "ml", "train-0", "worker", CORE, "0");
        assert_null(pod_map_core_holder(m, 0));
        assert_null(pod_map_core_holder(NULL, 0));
        assert_null(pod_map_device_holder(NULL, 0));
        pod_map_unref(m);
        pod_map_unref(NULL);
}

static void pod_map_copy_grants__previous_answer__same_holders(void **state) {
        struct pod_map *a = pod_map_new(), *b = pod_map_new();
        for (unsigned i = 0; i < 3; i++) {
                char id[8];
                snprintf(id, sizeof(id), "%u", i);
                pod_map_add(a, "ml", i ? "train-1" : "train-0", "worker", CORE, id);
        }
        a->answered_ms = 1234;
        assert_int_equal(pod_map_copy_grants(b, a), 0);
        assert_int_equal(b->n_grants, 3);
        assert_int_equal(b->n_holders, 2);
        assert_int_equal(b->answered_ms, 1234);
        assert_int_equal(pod_map_index(b, two_by_two, 4), 0);
        assert_holder(pod_map_core_holder(b, 2), "ml", "train-1", "worker");
        /* The copy takes more IDs like any map. */
        assert_int_equal(pod_map_add(b, "ml", "train-2", "worker", CORE, "3"), 1);
        assert_int_equal(b->n_holders, 3);
        pod_map_unref(a);
        pod_map_unref(b);
}

static void pod_cores_from_series__inventory__each_core_once_sorted(void **state) {
        const struct series_desc series[] = {
                { .metric = METRIC_CORE_UTILIZATION, .label_values = { "1", "3" } },
                { .metric = METRIC_CORE_UTILIZATION, .label_values = { "0", "0" } },
                { .metric = METRIC_CORE_MEMORY_CATEGORY, .label_values = { "1", "3", "tensors" } },
                { .metric = METRIC_DEVICE_UP, .label_values = { "1" } },
                { .metric = METRIC_SYSTEM_MEMORY_USED },
        };
        struct pod_core *cores;
        size_t n;
        assert_int_equal(pod_cores_from_series(series, 5, &cores, &n), 0);
        assert_int_equal(n, 2);
        assert_int_equal(cores[0].core, 0);
        assert_int_equal(cores[0].device, 0);
        assert_int_equal(cores[1].core, 3);
        assert_int_equal(cores[1].device, 1);
        free(cores);
}

static void pod_series_place__labels__core_device_or_none(void **state) {
        const struct series_desc core = { .metric = METRIC_CORE_MEMORY_USED, .label_values = { "2", "17" } };
        const struct series_desc device = { .metric = METRIC_DEVICE_MEMORY_TOTAL, .label_values = { "2" } };
        const struct series_desc host = { .metric = METRIC_SYSTEM_VCPU_USAGE, .label_values = { "user" } };
        unsigned d = 99, c = 99;
        assert_int_equal(pod_series_place(&core, &d, &c), POD_PLACE_CORE);
        assert_int_equal(d, 2);
        assert_int_equal(c, 17);
        c = 99;
        assert_int_equal(pod_series_place(&device, &d, &c), POD_PLACE_DEVICE);
        assert_int_equal(c, 99);
        const struct series_desc ecc = { .metric = METRIC_DEVICE_ECC_EVENTS,
                                         .label_values = { "5", "mem_ecc_uncorrected" } };
        assert_int_equal(pod_series_place(&ecc, &d, &c), POD_PLACE_DEVICE);
        assert_int_equal(d, 5);
        assert_int_equal(pod_series_place(&host, &d, &c), POD_PLACE_NONE);
}

static void pod_slot_publish__readers_keep_their_map(void **state) {
        struct pod_slot slot;
        pod_slot_init(&slot);
        assert_null(pod_slot_get(&slot));
        assert_null(pod_slot_get(NULL));
        struct pod_map *first = pod_map_new();
        pod_map_add(first, "ml", "train-0", "worker", CORE, "0");
        pod_slot_publish(&slot, first);
        struct pod_map *read = pod_slot_get(&slot);
        assert_ptr_equal(read, first);
        pod_slot_publish(&slot, pod_map_new());
        /* The reader's reference outlives the publication of the next. */
        assert_int_equal(read->n_grants, 1);
        pod_map_unref(read);
        read = pod_slot_get(&slot);
        assert_int_equal(read->n_grants, 0);
        pod_map_unref(read);
        pod_slot_destroy(&slot);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(pod_map_add__neuron_resources__granted_by_index),
                cmocka_unit_test(pod_map_add__other_resource__ignored),
                cmocka_unit_test(pod_map_add__id_not_an_index__counted_and_skipped),
                cmocka_unit_test(pod_map_add__names_longer_than_kubernetes_allows__refused),
                cmocka_unit_test(pod_map_core_holder__core_and_device_grants__each_core_its_holder),
                cmocka_unit_test(pod_map_core_holder__core_of_a_device_held_by_another__its_own),
                cmocka_unit_test(pod_map_device_holder__every_core_one_container__device_held),
                cmocka_unit_test(pod_map_index__indexes_this_host_lacks__left_out),
                cmocka_unit_test(pod_map_core_holder__unindexed_or_null_map__nobody),
                cmocka_unit_test(pod_map_copy_grants__previous_answer__same_holders),
                cmocka_unit_test(pod_cores_from_series__inventory__each_core_once_sorted),
                cmocka_unit_test(pod_series_place__labels__core_device_or_none),
                cmocka_unit_test(pod_slot_publish__readers_keep_their_map),
        };
        return cmocka_run_group_tests_name("pod", tests, NULL, NULL);
}
