/* Which Kubernetes containers hold which NeuronCores and Neuron devices:
 * the answer of the kubelet's pod-resources API, mapped onto neurond's
 * numbering, for the series' pod, namespace and container labels.
 *
 * Neuron's device plugin hands out three resources, and its device IDs are
 * decimal indexes (AWS's own consumer of this API, the CloudWatch agent's
 * pod attribute decorator in amazon-contributing/opentelemetry-collector-
 * contrib, receiver/awscontainerinsightreceiver/internal/neuron/, looks
 * them up the same way):
 *   aws.amazon.com/neuroncore     the host-wide NeuronCore index, as
 *                                 neuron-monitor and neurond's neuroncore
 *                                 label count them;
 *   aws.amazon.com/neuron,
 *   aws.amazon.com/neurondevice   the device index, neuron<N>: the whole
 *                                 device, every core on it included.
 *
 * A pod_map is built once per refresh by one thread (pod_map_new,
 * pod_map_add for every device ID, pod_map_index), then published in a
 * pod_slot and never changed: readers on any thread take a reference. */
#pragma once

#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "lib/inventory.h"

/* Kubernetes names: a pod's is a DNS subdomain (at most 253 bytes), a
 * namespace's and a container's DNS labels (at most 63). */
#define POD_NAME_MAX 254
#define POD_LABEL_MAX 64

enum pod_unit {
        POD_UNIT_CORE,   /* aws.amazon.com/neuroncore */
        POD_UNIT_DEVICE, /* aws.amazon.com/neuron or aws.amazon.com/neurondevice */
};

/* A container that holds at least one NeuronCore or device. */
struct pod_holder {
        char namespace[POD_LABEL_MAX];
        char pod[POD_NAME_MAX];
        char container[POD_LABEL_MAX];
};

/* One device ID the kubelet reports as assigned to a container. */
struct pod_grant {
        enum pod_unit unit;
        unsigned index; /* the NeuronCore or device index */
        size_t holder;  /* in pod_map.holders */
};

/* One NeuronCore of this host: its device and its host-wide index, as the
 * series' neuron_device and neuroncore labels name them. */
struct pod_core {
        unsigned device;
        unsigned core;
};

/* Where a series is: on a NeuronCore (its neuron_device and neuroncore
 * labels), on a whole device (neuron_device, or neuron_device_index, only),
 * or neither. */
enum pod_place {
        POD_PLACE_NONE,
        POD_PLACE_DEVICE,
        POD_PLACE_CORE,
};

/* The place of series s, with the device's and core's indexes. */
enum pod_place pod_series_place(const struct series_desc *s, unsigned *ret_device, unsigned *ret_core);

/* This host's cores, from the series that carry both labels: an array
 * sorted by core, each core once, that the caller frees. Returns 0 or
 * -ENOMEM. */
int pod_cores_from_series(const struct series_desc *series, size_t n_series, struct pod_core **ret, size_t *ret_n);

struct pod_map {
        atomic_int refs;
        /* The refresh that made this map: 0, or a negative errno, with
         * error_text saying why ("" on success). */
        int error;
        char error_text[160];
        int64_t asked_ms;    /* wall-clock ms of that refresh; 0: none yet */
        int64_t answered_ms; /* wall-clock ms of the kubelet answer the grants come from; 0: none */
        size_t n_holders;
        struct pod_holder *holders;
        size_t n_grants;
        struct pod_grant *grants; /* in the kubelet's order */
        size_t bad_ids;           /* IDs of Neuron resources pod_map_add() refused */
        /* Lookups, built by pod_map_index(): the holder of each core and
         * device by index (a core's own, else its device's), or -1. */
        size_t n_core_holders, n_device_holders;
        long *core_holder;
        long *device_holder;
};

/* An empty map with one reference, or NULL when out of memory. */
struct pod_map *pod_map_new(void);

/* Adds one device ID the kubelet assigned to a container. Returns 1 when it
 * is a Neuron resource and was added, 0 when the resource is not Neuron's
 * (ignored), -EINVAL (counted in bad_ids) for a Neuron resource whose ID is
 * not a decimal index or whose names are longer than Kubernetes allows,
 * -ENOMEM. */
int pod_map_add(struct pod_map *m, const char *namespace, const char *pod, const char *container, const char *resource,
                const char *device_id);

/* Copies the grants and holders of from into m (which has none yet), for
 * a refresh that failed but keeps the previous answer. Returns 0 or
 * -ENOMEM. */
int pod_map_copy_grants(struct pod_map *m, const struct pod_map *from);

/* Builds the lookups for a host with these cores. A device is held by a
 * container when the device was assigned to it, or when every one of the
 * device's cores was assigned to the same container. Returns 0 or -ENOMEM. */
int pod_map_index(struct pod_map *m, const struct pod_core *cores, size_t n_cores);

/* The container holding NeuronCore core (a host-wide index): the one the
 * core was assigned to, else the one its device was assigned to; NULL when
 * none, or for a core pod_map_index() was not given. NULL-safe (m NULL:
 * none). */
const struct pod_holder *pod_map_core_holder(const struct pod_map *m, unsigned core);

/* The container holding device device (see pod_map_index), or NULL. */
const struct pod_holder *pod_map_device_holder(const struct pod_map *m, unsigned device);

/* The container holding what series s is about: its core (pod_map_core_
 * holder), or its device for a device's series; NULL for none, or for a
 * series of neither. */
const struct pod_holder *pod_map_series_holder(const struct pod_map *m, const struct series_desc *s);

/* The labels a held core's or device's series carry, in this order. */
#define POD_LABELS 3
extern const char *const pod_label_names[POD_LABELS]; /* "pod", "namespace", "container" */

/* The value of label i of pod_label_names for holder h. */
const char *pod_holder_label(const struct pod_holder *h, size_t i);

/* The index of name in pod_label_names, or -ENOENT. */
int pod_label_index(const char *name);

struct pod_map *pod_map_ref(struct pod_map *m);
void pod_map_unref(struct pod_map *m); /* NULL-safe */

/* The latest map, shared between its one writer and any readers. */
struct pod_slot {
        pthread_mutex_t lock;
        struct pod_map *latest; /* NULL until the first refresh */
};

void pod_slot_init(struct pod_slot *slot);
void pod_slot_destroy(struct pod_slot *slot);
/* Takes ownership of m and drops the reference to the previous map. */
void pod_slot_publish(struct pod_slot *slot, struct pod_map *m);
/* A new reference to the latest map, or NULL. NULL-safe (slot NULL: none). */
struct pod_map *pod_slot_get(struct pod_slot *slot);
