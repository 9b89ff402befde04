/* The REST API and /healthz: route handlers (web/routes.h) that read only
 * the web_context and the request's path and parameters, and answer JSON.
 * Each checks every parameter before it does anything. */
#pragma once

#include "web/context.h"
#include "web/reply.h"
#include "web/request.h"

/* /healthz: 200 while ticks are fresh ("ok", or "degraded" while the store
 * cannot write), 503 when stalled or before the first tick. */
void api_healthz(const struct web_context *ctx, const struct web_request *req, struct web_reply *reply);
/* /api/v1/devices: the inventory. */
void api_devices(const struct web_context *ctx, const struct web_request *req, struct web_reply *reply);
/* /api/v1/devices/{index}: one device and its current values; the index
 * is the last segment of req->path. */
void api_device(const struct web_context *ctx, const struct web_request *req, struct web_reply *reply);
/* /api/v1/latest: every current value, filtered by metric= and labels;
 * the series of held cores and devices carry pod, namespace and container
 * labels, which filter too. */
void api_latest(const struct web_context *ctx, const struct web_request *req, struct web_reply *reply);
/* /api/v1/query_range: stored history (web/params.h for the parameters).
 * Runs on a query worker thread, after api_query_range_admit. */
void api_query_range(const struct web_context *ctx, const struct web_request *req, struct web_reply *reply);
/* Its admission check, before any work: 400 for a bad parameter; 422 when
 * the series it matches (among the running backend's) exceed
 * max_query_series, or those series times its points per series exceed
 * max_query_points. */
void api_query_range_admit(const struct web_context *ctx, const struct web_request *req, struct web_reply *reply);
/* /api/v1/series: every stored series' labels, filtered by metric= and labels. */
void api_series(const struct web_context *ctx, const struct web_request *req, struct web_reply *reply);
/* /api/v1/pods: which Kubernetes containers hold which NeuronCores and
 * devices, as the kubelet last answered, and whether it answers. */
void api_pods(const struct web_context *ctx, const struct web_request *req, struct web_reply *reply);
/* /api/v1/status: version, backend, interval, uptime, store and collectors. */
void api_status(const struct web_context *ctx, const struct web_request *req, struct web_reply *reply);
/* /api/v1/runtimes: the Neuron runtimes and the cores each holds. */
void api_runtimes(const struct web_context *ctx, const struct web_request *req, struct web_reply *reply);
/* /api/v1/health: the worst device state, counts per state, the devices
 * not healthy with their reasons and actions, the last events. */
void api_health(const struct web_context *ctx, const struct web_request *req, struct web_reply *reply);
/* /api/v1/events: stored health events, by start, end (Unix seconds, RFC
 * 3339, now or -<duration>), device, kind, severity and limit. Runs on a
 * query worker thread. */
void api_events(const struct web_context *ctx, const struct web_request *req, struct web_reply *reply);
/* Any other path under /api: 404. */
void api_not_found(const struct web_context *ctx, const struct web_request *req, struct web_reply *reply);
