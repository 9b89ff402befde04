/* Pod attribution's refresh thread: every interval it asks the kubelet's
 * pod-resources API (kube/podres.h) which containers hold which Neuron
 * cores and devices, maps the answer onto this host's cores (lib/pod.h)
 * and publishes it in a pod_slot, so neither a missing, slow nor vanishing
 * kubelet ever holds up the tick loop or a scrape.
 *
 * A refresh that fails publishes a map with its error; it keeps the last
 * answer's grants while that answer is younger than PODWATCH_KEEP_INTERVALS
 * intervals (a kubelet restart does not flap every label), then has none.
 * gRPC's library is started the first time the socket exists, so a host
 * without a kubelet never runs it. Never logs: the refreshed callback
 * lets the daemon do that. */
#pragma once

#include <stddef.h>
#include <stdint.h>

#include "lib/pod.h"
#include "lib/snapshot.h"

/* A call may take the interval, and never more than this. */
#define PODWATCH_TIMEOUT_MAX_MS 5000
#define PODWATCH_KEEP_INTERVALS 3

struct podwatch_options {
        const char *socket_path; /* the kubelet's pod-resources socket; borrowed */
        int64_t interval_ms;     /* between the starts of two refreshes */
        /* This host's cores are those of the series of set (the loop's
         * first, read at start), then of each newer set a refresh finds in
         * the latest snapshot: the driver's devices may appear later. */
        const struct series_set *set;
        struct snapshot_slot *latest; /* borrowed until podwatch_stop() */
        struct pod_slot *slot;        /* where each refresh's map goes; borrowed */
        /* Called on the refresh thread after each refresh with the map it
         * published and the one before (NULL the first time). May be NULL. */
        void (*refreshed)(const struct pod_map *previous, const struct pod_map *current, void *userdata);
        void *userdata;
};

struct podwatch;

/* Starts the thread; its first refresh begins at once. Returns 0 or a
 * negative errno. */
int podwatch_start(const struct podwatch_options *options, struct podwatch **ret);

/* Stops the thread (a call in flight is cancelled) and frees w. NULL-safe. */
void podwatch_stop(struct podwatch *w);
