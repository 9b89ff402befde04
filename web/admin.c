#include "config.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>

#include "lib/log.h"
#include "lib/parse.h"
#include "web/admin.h"
#include "web/queue.h"

#define FAULTS_LIST_MAX 64

bool admin_is_loopback(const struct sockaddr *sa) {
        if (!sa)
                return false;
        if (sa->sa_family == AF_INET) {
                const struct sockaddr_in *in = (const struct sockaddr_in *) sa;
                return (ntohl(in->sin_addr.s_addr) >> 24) == 127;
        }
        if (sa->sa_family == AF_INET6) {
                const struct in6_addr *a = &((const struct sockaddr_in6 *) sa)->sin6_addr;
                return IN6_IS_ADDR_LOOPBACK(a) || (IN6_IS_ADDR_V4MAPPED(a) && a->s6_addr[12] == 127);
        }
        return false;
}

/* Writes the client's address to addr; true when it is on loopback. */
static bool client_address(struct MHD_Connection *conn, char *addr, size_t size) {
        const union MHD_ConnectionInfo *info = MHD_get_connection_info(conn, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
        const struct sockaddr *sa = info ? info->client_addr : NULL;

        snprintf(addr, size, "?");
        if (sa && sa->sa_family == AF_INET)
                inet_ntop(AF_INET, &((const struct sockaddr_in *) sa)->sin_addr, addr, (socklen_t) size);
        else if (sa && sa->sa_family == AF_INET6)
                inet_ntop(AF_INET6, &((const struct sockaddr_in6 *) sa)->sin6_addr, addr, (socklen_t) size);
        return admin_is_loopback(sa);
}

static void reply_json(struct web_reply *reply, unsigned status) {
        reply->status = status;
        reply->content_type = "application/json";
}

/* The start of a successful answer, with the latest tick. */
static void answer_success(const struct web_context *ctx, struct buf *b) {
        struct snapshot *snap = snapshot_slot_get(ctx->latest);
        reply_json_success(b, snap);
        snapshot_unref(snap);
}

static void list_faults(const struct web_context *ctx, struct web_reply *reply) {
        const struct fault_control *fc = &ctx->faults;
        struct fault_entry faults[FAULTS_LIST_MAX];
        size_t n = fc->ops->list(fc->impl, faults, FAULTS_LIST_MAX);
        struct buf *b = &reply->body;

        answer_success(ctx, b);
        buf_puts(b, "{\"faults\":[");
        for (size_t i = 0; i < n && i < FAULTS_LIST_MAX; i++) {
                buf_puts(b, i ? ",{\"fault\":" : "{\"fault\":");
                json_string(b, faults[i].spec);
                buf_printf(b, ",\"state\":\"%s\"", faults[i].pending ? "queued" : "active");
                if (!faults[i].pending) {
                        buf_printf(b, ",\"start_ms\":%lld,\"end_ms\":", (long long) faults[i].start_ms);
                        if (faults[i].end_ms == INT64_MAX)
                                buf_puts(b, "null");
                        else
                                buf_printf(b, "%lld", (long long) faults[i].end_ms);
                }
                buf_puts(b, "}");
        }
        buf_puts(b, "]}}\n");
        reply_json(reply, 200);
}

static void inject_fault(const struct web_context *ctx, const struct web_request *req, const char *client,
                         struct web_reply *reply) {
        const struct fault_control *fc = &ctx->faults;
        const char *text = NULL;
        char err[256], canonical[FAULT_SPEC_MAX];

        for (size_t i = 0; i < req->n_params && !text; i++)
                if (strcmp(req->params[i].key, "fault") == 0)
                        text = req->params[i].value;

        if (!text || !*text) {
                reply_error(reply, 400, "bad_data", "parameter 'fault': missing (e.g. fault=device_down:3+30s)");
                return;
        }
        /* A '+' in a query string arrives as a space unless sent as %2B:
         * take the space for the '+' it was meant to be. */
        char spec[FAULT_SPEC_MAX];
        snprintf(spec, sizeof(spec), "%s", text);
        for (char *p = spec; *p; p++)
                if (*p == ' ')
                        *p = '+';
        if (strlen(text) >= sizeof(spec)) {
                reply_error(reply, 400, "bad_data", "parameter 'fault': too long");
                return;
        }
        if (fc->ops->inject(fc->impl, spec, canonical, sizeof(canonical), err, sizeof(err)) < 0) {
                reply_error(reply, 400, "bad_data", "parameter 'fault': %s", err);
                return;
        }
        log_info("admin: %s injected fault %s", client, canonical);
        answer_success(ctx, &reply->body);
        buf_puts(&reply->body, "{\"fault\":");
        json_string(&reply->body, canonical);
        buf_puts(&reply->body, "}}\n");
        reply_json(reply, 200);
}

static bool is_read(const struct web_request *req) {
        return strcmp(req->method, MHD_HTTP_METHOD_GET) == 0 || strcmp(req->method, MHD_HTTP_METHOD_HEAD) == 0;
}

/* Browsers send Origin with cross-site form posts; curl and scripts do
 * not. Refusing it keeps a web page from injecting faults or driving the
 * clock. */
static bool refuse_web_page(const struct web_request *req, bool reads, const char *client, struct web_reply *reply) {
        if (reads || !MHD_lookup_connection_value(req->conn, MHD_HEADER_KIND, "Origin"))
                return false;
        log_warning("admin: refused %s %.100s from %s carrying an Origin header", req->method, req->path, client);
        reply_error(reply, 403, "forbidden", "the admin endpoint refuses requests from web pages (Origin header)");
        return true;
}

bool admin_refuse(const struct web_context *ctx, const struct web_request *req, struct web_reply *reply) {
        char client[64];

        if (!ctx->admin) {
                reply_error(reply, 404, "not_found", "no such API endpoint: %.200s", req->path);
                return true;
        }
        if (!client_address(req->conn, client, sizeof(client))) {
                log_warning("admin: refused %s %.100s from %s (loopback only)", req->method, req->path, client);
                reply_error(reply, 403, "forbidden", "the admin endpoint answers loopback clients only");
                return true;
        }
        return false;
}

void admin_faults(const struct web_context *ctx, const struct web_request *req, struct web_reply *reply) {
        char client[64];

        client_address(req->conn, client, sizeof(client));
        if (!ctx->faults.ops) {
                reply_error(reply, 404, "not_found", "fault injection needs the model backend");
                return;
        }
        bool reads = is_read(req);
        if (refuse_web_page(req, reads, client, reply))
                return;
        if (reads) {
                list_faults(ctx, reply);
        } else if (strcmp(req->method, MHD_HTTP_METHOD_POST) == 0) {
                inject_fault(ctx, req, client, reply);
        } else {
                /* DELETE: the route allows no other method. */
                ctx->faults.ops->clear(ctx->faults.impl);
                log_info("admin: %s cleared every fault", client);
                answer_success(ctx, &reply->body);
                buf_puts(&reply->body, "{}}\n");
                reply_json(reply, 200);
        }
}

/* The most ticks one request may ask for: a month of ticks at 2 minutes,
 * and at most minutes of work on the largest model. */
#define TICKS_RUN_MAX 100000

static bool ticks_cancelled(const void *job) {
        return job && queue_job_cancelled(job);
}

void admin_ticks(const struct web_context *ctx, const struct web_request *req, struct web_reply *reply) {
        const char *run = NULL, *hold = NULL;
        uint64_t n = 0;
        bool held = false;
        char client[64];
        struct tick_state st;
        int r = 0;

        client_address(req->conn, client, sizeof(client));
        bool reads = is_read(req);
        if (refuse_web_page(req, reads, client, reply))
                return;
        for (size_t i = 0; i < req->n_params; i++) {
                const char **slot = strcmp(req->params[i].key, "run") == 0    ? &run
                                    : strcmp(req->params[i].key, "hold") == 0 ? &hold
                                                                              : NULL;
                if (!slot || reads) {
                        reply_error(reply, 400, "bad_data", "parameter '%.64s': %s", req->params[i].key,
                                    reads ? "GET takes no parameters" : "not a parameter (run=N, hold=BOOL)");
                        return;
                }
                if (*slot) {
                        reply_error(reply, 400, "bad_data", "parameter '%.64s' given more than once",
                                    req->params[i].key);
                        return;
                }
                *slot = req->params[i].value;
        }
        if (!reads && !run == !hold) {
                reply_error(reply, 400, "bad_data", "give one of run=N (1 to %d ticks) or hold=true|false",
                            TICKS_RUN_MAX);
                return;
        }
        if (run && parse_uint_range(run, 1, TICKS_RUN_MAX, &n) < 0) {
                reply_error(reply, 400, "bad_data", "parameter 'run': '%.32s' is not a number of ticks from 1 to %d",
                            run, TICKS_RUN_MAX);
                return;
        }
        if (hold && parse_bool(hold, &held) < 0) {
                reply_error(reply, 400, "bad_data", "parameter 'hold': '%.32s' is not true or false", hold);
                return;
        }
        if (!ctx->ticks) {
                reply_error(reply, 404, "not_found", "driven ticks need the admin setting");
                return;
        }
        if (hold) {
                r = tick_control_hold(ctx->ticks, held, ticks_cancelled, req->job);
                log_info("admin: %s %s the timer", client, held ? "held" : "released");
        } else if (run) {
                r = tick_control_run(ctx->ticks, n, ticks_cancelled, req->job, &st);
        }
        if (r == -ESHUTDOWN || r == -ECANCELED) {
                if (hold)
                        reply_error(reply, 503, "unavailable",
                                    "the daemon is stopping: the loop did not take the hold");
                else
                        reply_error(reply, 503, "unavailable", "the daemon is stopping: %s of %llu ticks ran",
                                    r == -ESHUTDOWN ? "not all" : "some", (unsigned long long) n);
                return;
        }
        tick_control_get(ctx->ticks, &st);
        struct snapshot *snap = snapshot_slot_get(ctx->latest);
        struct buf *b = &reply->body;
        reply_json_success(b, snap);
        buf_printf(b, "{\"held\":%s,\"pending\":%llu,\"timestamp\":", st.held ? "true" : "false",
                   (unsigned long long) st.pending);
        if (snap)
                buf_printf(b, "%lld.%03lld", (long long) (snap->timestamp_ms / 1000),
                           (long long) (snap->timestamp_ms % 1000));
        else
                buf_puts(b, "null");
        buf_puts(b, "}}\n");
        snapshot_unref(snap);
        reply_json(reply, 200);
}
