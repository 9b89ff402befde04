#include "config.h"

#include <stdio.h>
#include <string.h>

#include "web/admin.h"
#include "web/api.h"
#include "web/files.h"
#include "web/routes.h"
#include "web/scrape.h"

/* The last two columns: run the handler at once, or queued after an admission check. */
#define AT_ONCE false, NULL
#define QUEUED(admit) true, admit

/* clang-format off */
const struct route routes_table[] = {
        { "/metrics",             ROUTE_EXACT,   ROUTE_READ, ROUTE_AUTH_NORMAL,  ROUTE_PARAMS_IGNORED, scrape_serve,    AT_ONCE },
        { "/healthz",             ROUTE_EXACT,   ROUTE_READ, ROUTE_AUTH_HEALTHZ, ROUTE_PARAMS_READ,    api_healthz,     AT_ONCE },
        { "/api/v1/devices",      ROUTE_EXACT,   ROUTE_READ, ROUTE_AUTH_NORMAL,  ROUTE_PARAMS_READ,    api_devices,     AT_ONCE },
        { "/api/v1/devices/",     ROUTE_SEGMENT, ROUTE_READ, ROUTE_AUTH_NORMAL,  ROUTE_PARAMS_READ,    api_device,      AT_ONCE },
        { "/api/v1/latest",       ROUTE_EXACT,   ROUTE_READ, ROUTE_AUTH_NORMAL,  ROUTE_PARAMS_READ,    api_latest,      AT_ONCE },
        { "/api/v1/query_range",  ROUTE_EXACT,   ROUTE_READ, ROUTE_AUTH_NORMAL,  ROUTE_PARAMS_READ,    api_query_range,
                                                                                                        QUEUED(api_query_range_admit) },
        { "/api/v1/runtimes",     ROUTE_EXACT,   ROUTE_READ, ROUTE_AUTH_NORMAL,  ROUTE_PARAMS_READ,    api_runtimes,    AT_ONCE },
        { "/api/v1/series",       ROUTE_EXACT,   ROUTE_READ, ROUTE_AUTH_NORMAL,  ROUTE_PARAMS_READ,    api_series,      QUEUED(NULL) },
        { "/api/v1/pods",         ROUTE_EXACT,   ROUTE_READ, ROUTE_AUTH_NORMAL,  ROUTE_PARAMS_READ,    api_pods,        AT_ONCE },
        { "/api/v1/status",       ROUTE_EXACT,   ROUTE_READ, ROUTE_AUTH_NORMAL,  ROUTE_PARAMS_READ,    api_status,      AT_ONCE },
        { "/api/v1/health",       ROUTE_EXACT,   ROUTE_READ, ROUTE_AUTH_NORMAL,  ROUTE_PARAMS_READ,    api_health,      AT_ONCE },
        { "/api/v1/events",       ROUTE_EXACT,   ROUTE_READ, ROUTE_AUTH_NORMAL,  ROUTE_PARAMS_READ,    api_events,      QUEUED(NULL) },
        { "/api/v1/admin/faults", ROUTE_EXACT,   ROUTE_GET | ROUTE_HEAD | ROUTE_POST | ROUTE_DELETE,
                                                             ROUTE_AUTH_ADMIN,   ROUTE_PARAMS_READ,    admin_faults,    AT_ONCE },
        { "/api/v1/admin/ticks",  ROUTE_EXACT,   ROUTE_GET | ROUTE_HEAD | ROUTE_POST,
                                                             ROUTE_AUTH_ADMIN,   ROUTE_PARAMS_READ,    admin_ticks,     QUEUED(NULL) },
        /* Any other API path is a JSON 404, never a file. */
        { "/api",                 ROUTE_SUBTREE, ROUTE_READ, ROUTE_AUTH_NORMAL,  ROUTE_PARAMS_IGNORED, api_not_found,   AT_ONCE },
        /* The dashboard: a file below the web root, or 404. */
        { "/",                    ROUTE_ANY,     ROUTE_READ, ROUTE_AUTH_NORMAL,  ROUTE_PARAMS_IGNORED, files_serve,     AT_ONCE },
};
/* clang-format on */
const size_t routes_count = sizeof(routes_table) / sizeof(routes_table[0]);

static bool route_matches(const struct route *route, const char *path) {
        size_t len = strlen(route->path);

        switch (route->match) {
        case ROUTE_EXACT:
                return strcmp(path, route->path) == 0;
        case ROUTE_SEGMENT:
                return strncmp(path, route->path, len) == 0 && path[len] && !strchr(path + len, '/');
        case ROUTE_SUBTREE:
                return strncmp(path, route->path, len) == 0 && (path[len] == '\0' || path[len] == '/');
        case ROUTE_ANY:
                return true;
        }
        return false;
}

const struct route *routes_find(const char *path) {
        for (size_t i = 0; i < routes_count - 1; i++)
                if (route_matches(&routes_table[i], path))
                        return &routes_table[i];
        return &routes_table[routes_count - 1];
}

static const struct {
        unsigned bit;
        const char *name;
} methods[] = {
        { ROUTE_GET, "GET" },       { ROUTE_HEAD, "HEAD" },       { ROUTE_POST, "POST" },
        { ROUTE_DELETE, "DELETE" }, { ROUTE_OPTIONS, "OPTIONS" },
};

static unsigned method_bit(const char *method) {
        for (size_t i = 0; i < sizeof(methods) / sizeof(methods[0]); i++)
                if (strcmp(method, methods[i].name) == 0)
                        return methods[i].bit;
        return 0;
}

/* The methods a row serves: "GET, HEAD" for a header, "GET or HEAD" in
 * prose. OPTIONS is not listed, as it only ever answers a preflight. */
static void method_list(unsigned bits, bool prose, char *out, size_t size) {
        size_t len = 0, n = 0, total = 0;

        bits &= ~(unsigned) ROUTE_OPTIONS;
        for (size_t i = 0; i < sizeof(methods) / sizeof(methods[0]); i++)
                total += (bits & methods[i].bit) != 0;
        out[0] = '\0';
        for (size_t i = 0; i < sizeof(methods) / sizeof(methods[0]) && len < size; i++) {
                if (!(bits & methods[i].bit))
                        continue;
                const char *sep = n == 0 ? "" : prose && n == total - 1 ? " or " : ", ";
                len += (size_t) snprintf(out + len, size - len, "%s%s", sep, methods[i].name);
                n++;
        }
}

bool routes_refuse_method(const struct route *route, const char *method, const struct web_context *ctx,
                          struct web_reply *reply) {
        unsigned bit = method_bit(method);
        char list[sizeof(reply->allow)], prose[sizeof(reply->allow)];

        if (bit && bit != ROUTE_OPTIONS && (route->methods & bit))
                return false;
        method_list(route->methods, false, list, sizeof(list));
        if (bit == ROUTE_OPTIONS && (route->methods & ROUTE_OPTIONS) && ctx->cors_origin && *ctx->cors_origin) {
                reply_preflight(reply, list);
                return true;
        }
        method_list(route->methods, true, prose, sizeof(prose));
        reply_error(reply, 405, "bad_data", "method %.16s not allowed; use %s", method, prose);
        snprintf(reply->allow, sizeof(reply->allow), "%s", list);
        return true;
}

/* The client's address, for the back-off of web/auth.h. */
static const struct sockaddr *client_address(struct MHD_Connection *conn) {
        const union MHD_ConnectionInfo *info =
                conn ? MHD_get_connection_info(conn, MHD_CONNECTION_INFO_CLIENT_ADDRESS) : NULL;
        return info ? info->client_addr : NULL;
}

enum route_access routes_check_access(const struct route *route, const struct web_context *ctx,
                                      const struct web_request *req, struct auth_attempt *attempt,
                                      struct web_reply *reply) {
        bool open = !ctx->auth || (route->auth == ROUTE_AUTH_HEALTHZ && ctx->healthz_open);
        enum auth_verdict verdict = AUTH_GRANTED;

        if (!open && req->auth != AUTH_UNCHECKED)
                verdict = req->auth;
        else if (!open)
                verdict = auth_check(
                        ctx->auth,
                        MHD_lookup_connection_value(req->conn, MHD_HEADER_KIND, MHD_HTTP_HEADER_AUTHORIZATION),
                        client_address(req->conn), attempt);
        if (verdict == AUTH_VERIFY)
                return ROUTE_ACCESS_VERIFY;
        if (verdict != AUTH_GRANTED) {
                reply_unauthorized(ctx, reply);
                return ROUTE_ACCESS_REFUSED;
        }
        return route->auth == ROUTE_AUTH_ADMIN && admin_refuse(ctx, req, reply) ? ROUTE_ACCESS_REFUSED
                                                                                : ROUTE_ACCESS_GRANTED;
}
