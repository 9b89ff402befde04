#include "config.h"

#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "web/admin.h"
#include "web/api.h"
#include "web/files.h"
#include "web/routes.h"
#include "web/scrape.h"

/* clang-format off */
const struct route routes_table[] = {
        { "/metrics",             ROUTE_EXACT,   ROUTE_READ, ROUTE_AUTH_NORMAL,  ROUTE_PARAMS_IGNORED, scrape_serve },
        { "/healthz",             ROUTE_EXACT,   ROUTE_READ, ROUTE_AUTH_HEALTHZ, ROUTE_PARAMS_READ,    api_healthz },
        { "/api/v1/devices",      ROUTE_EXACT,   ROUTE_READ, ROUTE_AUTH_NORMAL,  ROUTE_PARAMS_READ,    api_devices },
        { "/api/v1/devices/",     ROUTE_SEGMENT, ROUTE_READ, ROUTE_AUTH_NORMAL,  ROUTE_PARAMS_READ,    api_device },
        { "/api/v1/latest",       ROUTE_EXACT,   ROUTE_READ, ROUTE_AUTH_NORMAL,  ROUTE_PARAMS_READ,    api_latest },
        { "/api/v1/query_range",  ROUTE_EXACT,   ROUTE_READ, ROUTE_AUTH_NORMAL,  ROUTE_PARAMS_READ,    api_query_range },
        { "/api/v1/runtimes",     ROUTE_EXACT,   ROUTE_READ, ROUTE_AUTH_NORMAL,  ROUTE_PARAMS_READ,    api_runtimes },
        { "/api/v1/series",       ROUTE_EXACT,   ROUTE_READ, ROUTE_AUTH_NORMAL,  ROUTE_PARAMS_READ,    api_series },
        { "/api/v1/status",       ROUTE_EXACT,   ROUTE_READ, ROUTE_AUTH_NORMAL,  ROUTE_PARAMS_READ,    api_status },
        { "/api/v1/admin/faults", ROUTE_EXACT,   ROUTE_GET | ROUTE_HEAD | ROUTE_POST | ROUTE_DELETE,
                                                             ROUTE_AUTH_ADMIN,   ROUTE_PARAMS_READ,    admin_faults },
        /* Any other API path is a JSON 404, never a file. */
        { "/api",                 ROUTE_SUBTREE, ROUTE_READ, ROUTE_AUTH_NORMAL,  ROUTE_PARAMS_IGNORED, api_not_found },
        /* The dashboard: a file below the web root, or 404. */
        { "/",                    ROUTE_ANY,     ROUTE_READ, ROUTE_AUTH_NORMAL,  ROUTE_PARAMS_IGNORED, files_serve },
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

/* Whether the request carries valid credentials, or needs none. */
static bool has_credentials(const struct web_context *ctx, struct MHD_Connection *conn) {
        if (!ctx->auth)
                return true;
        const char *header = MHD_lookup_connection_value(conn, MHD_HEADER_KIND, MHD_HTTP_HEADER_AUTHORIZATION);
        if (!header)
                return false;
        if (strncasecmp(header, "Bearer ", 7) == 0)
                return auth_check_bearer(ctx->auth, header + 7);
        if (!auth_has_users(ctx->auth))
                return false;
        char *password = NULL;
        char *user = MHD_basic_auth_get_username_password(conn, &password);
        bool ok = user && password && auth_check_basic(ctx->auth, user, password);
        if (password) {
                explicit_bzero(password, strlen(password));
                MHD_free(password);
        }
        if (user)
                MHD_free(user);
        return ok;
}

bool routes_refuse_access(const struct route *route, const struct web_context *ctx, const struct web_request *req,
                          struct web_reply *reply) {
        bool open = route->auth == ROUTE_AUTH_HEALTHZ && ctx->healthz_open;

        if (!open && !has_credentials(ctx, req->conn)) {
                reply_unauthorized(ctx, reply);
                return true;
        }
        return route->auth == ROUTE_AUTH_ADMIN && admin_refuse(ctx, req, reply);
}
