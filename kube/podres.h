/* One call of the kubelet's pod-resources API, v1.PodResourcesLister/List
 * (kube/podresources.proto), over the kubelet's unix socket, with gRPC's C
 * core library and protobuf-c. gRPC's library is loaded (dlopen) and
 * started by the first call that finds a socket; a missing library is an
 * error of that call (-ENOPKG), not of the daemon.
 *
 * Not thread safe with itself: one thread makes the calls, then
 * podres_shutdown(). Never logs. */
#pragma once

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "lib/pod.h"

/* The kubelet's own limit on a message of this API (podresources'
 * DefaultMaxMsgSize), which a node full of pods may approach. */
#define PODRES_MAX_MESSAGE_BYTES (16 * 1024 * 1024)

/* Stops gRPC's library if a call started it; the next call starts it
 * again. */
void podres_shutdown(void);

/* Asks the kubelet listening at socket_path which devices every container
 * holds and adds the Neuron ones to m (pod_map_add; IDs it refuses are
 * counted in m->bad_ids and skipped).
 * Waits at most timeout_ms; gives up early, with -ECANCELED, once *stop is
 * true. Returns the number of Neuron device IDs added, or a negative errno
 * with the reason in err: -ENOENT (no socket there), -ENOTSOCK, -EACCES
 * (no permission to connect), -ECONNREFUSED (nothing answers),
 * -ETIMEDOUT, -EOPNOTSUPP (a kubelet without this API), -EBADMSG (an
 * answer that does not decode), -EIO (another gRPC error), -ENOPKG (gRPC's
 * library cannot be loaded), -ENOMEM. */
int podres_list(const char *socket_path, int64_t timeout_ms, const atomic_bool *stop, struct pod_map *m, char *err,
                size_t errlen);
