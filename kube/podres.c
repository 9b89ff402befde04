#include "config.h"

#include <errno.h>
#include <grpc/byte_buffer_reader.h>
#include <grpc/grpc.h>
#include <grpc/grpc_security.h>
#include <grpc/support/alloc.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "kube/podres.h"
#include "kube/podresources.pb-c.h"
#include "lib/dynlib.h"

/* How often a call in flight looks at the stop flag. */
#define PODRES_STOP_POLL_MS 50

/* gRPC's library is loaded, and started, by the first call that finds a
 * socket: linked in, its 50 libraries (abseil, OpenSSL, ...) would cost
 * every daemon about 7 MiB of resident memory (bench/RESULTS.md), and a
 * host without a kubelet never calls it. These are the functions this file
 * calls, by their declarations in gRPC's headers. */
#define GRPC_FUNCTIONS(X)                                                                                              \
        X(gpr_free)                                                                                                    \
        X(gpr_inf_future)                                                                                              \
        X(gpr_now)                                                                                                     \
        X(gpr_time_add)                                                                                                \
        X(gpr_time_from_millis)                                                                                        \
        X(grpc_byte_buffer_destroy)                                                                                    \
        X(grpc_byte_buffer_reader_destroy)                                                                             \
        X(grpc_byte_buffer_reader_init)                                                                                \
        X(grpc_byte_buffer_reader_readall)                                                                             \
        X(grpc_call_cancel)                                                                                            \
        X(grpc_call_start_batch)                                                                                       \
        X(grpc_call_unref)                                                                                             \
        X(grpc_channel_create)                                                                                         \
        X(grpc_channel_create_call)                                                                                    \
        X(grpc_channel_credentials_release)                                                                            \
        X(grpc_channel_destroy)                                                                                        \
        X(grpc_completion_queue_create_for_next)                                                                       \
        X(grpc_completion_queue_destroy)                                                                               \
        X(grpc_completion_queue_next)                                                                                  \
        X(grpc_completion_queue_shutdown)                                                                              \
        X(grpc_empty_slice)                                                                                            \
        X(grpc_init)                                                                                                   \
        X(grpc_insecure_credentials_create)                                                                            \
        X(grpc_metadata_array_destroy)                                                                                 \
        X(grpc_metadata_array_init)                                                                                    \
        X(grpc_raw_byte_buffer_create)                                                                                 \
        X(grpc_shutdown)                                                                                               \
        X(grpc_slice_from_static_string)                                                                               \
        X(grpc_slice_to_c_string)                                                                                      \
        X(grpc_slice_unref)

#define GRPC_POINTER(name) __typeof__(name) *name;
static struct { GRPC_FUNCTIONS(GRPC_POINTER) } g;
static bool grpc_started;

/* Loads gRPC's library (once; it stays) and starts it. Returns 0, or
 * -ENOPKG with the reason in err. */
static int start_grpc(char *err, size_t errlen) {
#define GRPC_SYMBOL(name) { #name, (void **) &g.name },
        static const struct dynlib_symbol symbols[] = { GRPC_FUNCTIONS(GRPC_SYMBOL) };
#undef GRPC_SYMBOL
        static void *library;

        if (grpc_started)
                return 0;
        if (!library)
                library = dynlib_load(GRPC_SONAME, "gRPC's library", symbols, sizeof(symbols) / sizeof(symbols[0]), err,
                                      errlen);
        if (!library)
                return -ENOPKG;
        g.grpc_init();
        grpc_started = true;
        return 0;
}

void podres_shutdown(void) {
        if (grpc_started)
                g.grpc_shutdown();
        grpc_started = false;
}

/* What is at the socket's path, before gRPC is asked: gRPC's own errors
 * for these are less plain, and a missing socket (no kubelet on this host)
 * needs no channel at all. */
static int check_socket(const char *path, char *err, size_t errlen) {
        struct stat st;

        if (stat(path, &st) < 0) {
                int r = -errno;
                snprintf(err, errlen, "%s: %s", path, strerror(-r));
                return r;
        }
        if (!S_ISSOCK(st.st_mode)) {
                snprintf(err, errlen, "%s is not a socket", path);
                return -ENOTSOCK;
        }
        /* Connecting needs write permission on the socket; the kubelet's is
         * root's, mode 0755. */
        if (access(path, W_OK) < 0) {
                int r = -errno;
                snprintf(err, errlen, "%s: %s (connecting needs write permission; the kubelet's socket is root's)",
                         path, strerror(-r));
                return r;
        }
        return 0;
}

static int status_errno(grpc_status_code status) {
        switch (status) {
        case GRPC_STATUS_OK:
                return 0;
        case GRPC_STATUS_DEADLINE_EXCEEDED:
                return -ETIMEDOUT;
        case GRPC_STATUS_UNAVAILABLE:
                return -ECONNREFUSED;
        case GRPC_STATUS_UNIMPLEMENTED:
                return -EOPNOTSUPP;
        case GRPC_STATUS_CANCELLED:
                return -ECANCELED;
        default:
                return -EIO;
        }
}

/* Adds every Neuron device ID of the answer to m. Returns how many, or
 * -EBADMSG or -ENOMEM. */
static int add_answer(grpc_byte_buffer *answer, struct pod_map *m, char *err, size_t errlen) {
        grpc_byte_buffer_reader reader;
        int added = 0;

        if (!answer || !g.grpc_byte_buffer_reader_init(&reader, answer)) {
                snprintf(err, errlen, "the kubelet's answer has no message");
                return -EBADMSG;
        }
        grpc_slice all = g.grpc_byte_buffer_reader_readall(&reader);
        g.grpc_byte_buffer_reader_destroy(&reader);
        V1__ListPodResourcesResponse *list =
                v1__list_pod_resources_response__unpack(NULL, GRPC_SLICE_LENGTH(all), GRPC_SLICE_START_PTR(all));
        g.grpc_slice_unref(all);
        if (!list) {
                snprintf(err, errlen, "the kubelet's answer is not a ListPodResourcesResponse");
                return -EBADMSG;
        }
        for (size_t p = 0; p < list->n_pod_resources && added >= 0; p++) {
                const V1__PodResources *pod = list->pod_resources[p];
                for (size_t c = 0; c < pod->n_containers && added >= 0; c++) {
                        const V1__ContainerResources *container = pod->containers[c];
                        for (size_t d = 0; d < container->n_devices && added >= 0; d++) {
                                const V1__ContainerDevices *devices = container->devices[d];
                                for (size_t i = 0; i < devices->n_device_ids && added >= 0; i++) {
                                        int r = pod_map_add(m, pod->namespace_, pod->name, container->name,
                                                            devices->resource_name, devices->device_ids[i]);
                                        if (r == -ENOMEM)
                                                added = r;
                                        else if (r > 0)
                                                added++;
                                }
                        }
                }
        }
        v1__list_pod_resources_response__free_unpacked(list, NULL);
        if (added < 0)
                snprintf(err, errlen, "%s", strerror(-added));
        return added;
}

int podres_list(const char *socket_path, int64_t timeout_ms, const atomic_bool *stop, struct pod_map *m, char *err,
                size_t errlen) {
        char target[PATH_MAX + 8];
        grpc_metadata_array initial_metadata, trailing_metadata;
        grpc_byte_buffer *answer = NULL;
        grpc_status_code status = GRPC_STATUS_UNKNOWN;
        grpc_slice details = { 0 }; /* empty, as grpc_empty_slice() makes it */
        bool cancelled = false;

        int r = check_socket(socket_path, err, errlen);
        if (r < 0)
                return r;
        snprintf(target, sizeof(target), "unix:%s", socket_path);
        r = start_grpc(err, errlen);
        if (r < 0)
                return r;

        /* A channel per call: the kubelet replaces its socket when it
         * restarts, and a refresh every few seconds does not need a
         * connection kept open, with gRPC's reconnection back-off, between
         * them. The kubelet's messages may be as large as its own limit. */
        grpc_arg args[] = {
                { .type = GRPC_ARG_INTEGER,
                  .key = GRPC_ARG_MAX_RECEIVE_MESSAGE_LENGTH,
                  .value.integer = PODRES_MAX_MESSAGE_BYTES },
                { .type = GRPC_ARG_INTEGER, .key = GRPC_ARG_ENABLE_RETRIES, .value.integer = 0 },
                { .type = GRPC_ARG_INTEGER, .key = GRPC_ARG_USE_LOCAL_SUBCHANNEL_POOL, .value.integer = 1 },
        };
        grpc_channel_args channel_args = { .num_args = sizeof(args) / sizeof(args[0]), .args = args };
        grpc_channel_credentials *credentials = g.grpc_insecure_credentials_create();
        grpc_channel *channel = g.grpc_channel_create(target, credentials, &channel_args);
        g.grpc_channel_credentials_release(credentials);
        grpc_completion_queue *queue = g.grpc_completion_queue_create_for_next(NULL);
        gpr_timespec deadline =
                g.gpr_time_add(g.gpr_now(GPR_CLOCK_MONOTONIC), g.gpr_time_from_millis(timeout_ms, GPR_TIMESPAN));
        grpc_call *call = g.grpc_channel_create_call(channel, NULL, GRPC_PROPAGATE_DEFAULTS, queue,
                                                     g.grpc_slice_from_static_string("/v1.PodResourcesLister/List"),
                                                     NULL, deadline, NULL);

        /* The request, ListPodResourcesRequest, has no fields: it is
         * encoded as zero bytes. */
        grpc_slice empty = g.grpc_empty_slice();
        grpc_byte_buffer *request = g.grpc_raw_byte_buffer_create(&empty, 1);
        g.grpc_metadata_array_init(&initial_metadata);
        g.grpc_metadata_array_init(&trailing_metadata);
        grpc_op ops[6] = {
                { .op = GRPC_OP_SEND_INITIAL_METADATA },
                { .op = GRPC_OP_SEND_MESSAGE, .data.send_message.send_message = request },
                { .op = GRPC_OP_SEND_CLOSE_FROM_CLIENT },
                { .op = GRPC_OP_RECV_INITIAL_METADATA,
                  .data.recv_initial_metadata.recv_initial_metadata = &initial_metadata },
                { .op = GRPC_OP_RECV_MESSAGE, .data.recv_message.recv_message = &answer },
                { .op = GRPC_OP_RECV_STATUS_ON_CLIENT,
                  .data.recv_status_on_client = { .trailing_metadata = &trailing_metadata,
                                                  .status = &status,
                                                  .status_details = &details } },
        };
        if (g.grpc_call_start_batch(call, ops, sizeof(ops) / sizeof(ops[0]), call, NULL) != GRPC_CALL_OK) {
                snprintf(err, errlen, "gRPC refused to start the call");
                r = -EIO;
                goto finish;
        }
        /* The batch always completes: with the answer, an error, the
         * deadline, or the cancel below. */
        for (;;) {
                gpr_timespec step = g.gpr_time_add(g.gpr_now(GPR_CLOCK_MONOTONIC),
                                                   g.gpr_time_from_millis(PODRES_STOP_POLL_MS, GPR_TIMESPAN));
                grpc_event event = g.grpc_completion_queue_next(queue, step, NULL);
                if (event.type == GRPC_OP_COMPLETE)
                        break;
                if (!cancelled && atomic_load(stop)) {
                        g.grpc_call_cancel(call, NULL);
                        cancelled = true;
                }
        }
        r = cancelled ? -ECANCELED : status_errno(status);
        if (r == 0) {
                r = add_answer(answer, m, err, errlen);
        } else {
                char *text = g.grpc_slice_to_c_string(details);
                snprintf(err, errlen, "%s: %s", socket_path, cancelled ? "stopped" : text);
                g.gpr_free(text);
        }

finish:
        g.grpc_call_unref(call);
        g.grpc_completion_queue_shutdown(queue);
        while (g.grpc_completion_queue_next(queue, g.gpr_inf_future(GPR_CLOCK_REALTIME), NULL).type !=
               GRPC_QUEUE_SHUTDOWN)
                ;
        g.grpc_completion_queue_destroy(queue);
        g.grpc_channel_destroy(channel);
        g.grpc_byte_buffer_destroy(request);
        g.grpc_byte_buffer_destroy(answer);
        g.grpc_metadata_array_destroy(&initial_metadata);
        g.grpc_metadata_array_destroy(&trailing_metadata);
        g.grpc_slice_unref(details);
        return r;
}
