#include "config.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>

#include "lib/log.h"
#include "web/admin.h"

#define FAULTS_PATH ADMIN_PREFIX "/faults"
#define FAULTS_LIST_MAX 64

bool admin_owns(const char *url) {
        size_t n = strlen(ADMIN_PREFIX);
        return strncmp(url, ADMIN_PREFIX, n) == 0 && (url[n] == '\0' || url[n] == '/');
}

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

static bool client_is_loopback(struct MHD_Connection *conn, char *addr, size_t size) {
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

static void inject_fault(const struct fault_control *fc, struct MHD_Connection *conn, const char *client,
                         struct web_reply *reply) {
        const char *text = MHD_lookup_connection_value(conn, MHD_GET_ARGUMENT_KIND, "fault");
        char err[256], canonical[FAULT_SPEC_MAX];

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

void admin_request(const struct web_context *ctx, struct MHD_Connection *conn, const char *url, const char *method,
                   struct web_reply *reply) {
        char client[64];

        if (!ctx->admin) {
                reply_error(reply, 404, "not_found", "no such API endpoint: %.200s", url);
                return;
        }
        if (!client_is_loopback(conn, client, sizeof(client))) {
                log_warning("admin: refused %s %.100s from %s (loopback only)", method, url, client);
                reply_error(reply, 403, "forbidden", "the admin endpoint answers loopback clients only");
                return;
        }
        if (strcmp(url, FAULTS_PATH) != 0) {
                reply_error(reply, 404, "not_found", "no such API endpoint: %.200s (try " FAULTS_PATH ")", url);
                return;
        }
        if (!ctx->faults.ops) {
                reply_error(reply, 404, "not_found", "fault injection needs the model backend");
                return;
        }
        bool reads = strcmp(method, MHD_HTTP_METHOD_GET) == 0 || strcmp(method, MHD_HTTP_METHOD_HEAD) == 0;
        /* Browsers send Origin with cross-site form posts; curl and scripts
         * do not. Refusing it keeps a web page from injecting faults. */
        if (!reads && MHD_lookup_connection_value(conn, MHD_HEADER_KIND, "Origin")) {
                log_warning("admin: refused %s %.100s from %s carrying an Origin header", method, url, client);
                reply_error(reply, 403, "forbidden",
                            "the admin endpoint refuses requests from web pages (Origin header)");
                return;
        }
        if (reads) {
                list_faults(&ctx->faults, reply);
        } else if (strcmp(method, MHD_HTTP_METHOD_POST) == 0) {
                inject_fault(&ctx->faults, conn, client, reply);
        } else if (strcmp(method, MHD_HTTP_METHOD_DELETE) == 0) {
                ctx->faults.ops->clear(ctx->faults.impl);
                log_info("admin: %s cleared every fault", client);
                buf_puts(&reply->body, "{\"status\":\"success\",\"data\":{}}\n");
                reply_json(reply, 200);
        } else {
                reply_error(reply, 405, "bad_data", "method %.16s not allowed; use GET, POST or DELETE", method);
                snprintf(reply->allow, sizeof(reply->allow), "GET, HEAD, POST, DELETE");
        }
}
