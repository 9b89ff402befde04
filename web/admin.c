#include "config.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>

#include "lib/log.h"
#include "web/admin.h"

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

static void list_faults(const struct fault_control *fc, struct web_reply *reply) {
        struct fault_entry faults[FAULTS_LIST_MAX];
        size_t n = fc->ops->list(fc->impl, faults, FAULTS_LIST_MAX);
        struct buf *b = &reply->body;

        buf_puts(b, "{\"status\":\"success\",\"data\":{\"faults\":[");
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

static void inject_fault(const struct fault_control *fc, const struct web_request *req, const char *client,
                         struct web_reply *reply) {
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
        buf_puts(&reply->body, "{\"status\":\"success\",\"data\":{\"fault\":");
        json_string(&reply->body, canonical);
        buf_puts(&reply->body, "}}\n");
        reply_json(reply, 200);
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
        bool reads = strcmp(req->method, MHD_HTTP_METHOD_GET) == 0 || strcmp(req->method, MHD_HTTP_METHOD_HEAD) == 0;
        /* Browsers send Origin with cross-site form posts; curl and scripts
         * do not. Refusing it keeps a web page from injecting faults. */
        if (!reads && MHD_lookup_connection_value(req->conn, MHD_HEADER_KIND, "Origin")) {
                log_warning("admin: refused %s %.100s from %s carrying an Origin header", req->method, req->path,
                            client);
                reply_error(reply, 403, "forbidden",
                            "the admin endpoint refuses requests from web pages (Origin header)");
                return;
        }
        if (reads) {
                list_faults(&ctx->faults, reply);
        } else if (strcmp(req->method, MHD_HTTP_METHOD_POST) == 0) {
                inject_fault(&ctx->faults, req, client, reply);
        } else {
                /* DELETE: the route allows no other method. */
                ctx->faults.ops->clear(ctx->faults.impl);
                log_info("admin: %s cleared every fault", client);
                buf_puts(&reply->body, "{\"status\":\"success\",\"data\":{}}\n");
                reply_json(reply, 200);
        }
}
