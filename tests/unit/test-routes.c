#include "config.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>
#include <zlib.h>

#include "web-fixture.h"
#include "web/admin.h"
#include "web/api.h"
#include "web/files.h"
#include "web/routes.h"
#include "web/scrape.h"

static void routes_find__paths__first_matching_row(void **state) {
        assert_ptr_equal(routes_find("/metrics")->handler, scrape_serve);
        assert_ptr_equal(routes_find("/healthz")->handler, api_healthz);
        assert_ptr_equal(routes_find("/api/v1/devices")->handler, api_devices);
        assert_ptr_equal(routes_find("/api/v1/devices/3")->handler, api_device);
        assert_ptr_equal(routes_find("/api/v1/query_range")->handler, api_query_range);
        assert_ptr_equal(routes_find("/api/v1/series")->handler, api_series);
        assert_ptr_equal(routes_find("/api/v1/admin/faults")->handler, admin_faults);
        /* One segment only, and not an empty one. */
        assert_ptr_equal(routes_find("/api/v1/devices/3/x")->handler, api_not_found);
        assert_ptr_equal(routes_find("/api/v1/devices/")->handler, api_not_found);
        /* Exact rows take nothing below them. */
        assert_ptr_equal(routes_find("/api/v1/query_range/x")->handler, api_not_found);
        assert_ptr_equal(routes_find("/metrics/x")->handler, files_serve);
        /* Anything under /api is the API's, never a file. */
        assert_ptr_equal(routes_find("/api")->handler, api_not_found);
        assert_ptr_equal(routes_find("/api/v1/admin")->handler, api_not_found);
        assert_ptr_equal(routes_find("/apix")->handler, files_serve);
        assert_ptr_equal(routes_find("/")->handler, files_serve);
        assert_ptr_equal(routes_find("*")->handler, files_serve);
}

static void routes_table__rows__exact_methods_and_rules(void **state) {
        const struct route *admin = routes_find("/api/v1/admin/faults");
        assert_int_equal(admin->auth, ROUTE_AUTH_ADMIN);
        assert_int_equal(admin->methods, ROUTE_GET | ROUTE_HEAD | ROUTE_POST | ROUTE_DELETE);
        assert_int_equal(routes_find("/healthz")->auth, ROUTE_AUTH_HEALTHZ);
        /* Only /healthz is exempt, and only admin rows write. */
        for (size_t i = 0; i < routes_count; i++) {
                const struct route *r = &routes_table[i];
                assert_true(r->auth != ROUTE_AUTH_HEALTHZ || strcmp(r->path, "/healthz") == 0);
                assert_true(r->auth == ROUTE_AUTH_ADMIN || r->methods == ROUTE_READ);
        }
        /* A scrape config may add parameters; /metrics and files ignore them. */
        assert_int_equal(routes_find("/metrics")->params, ROUTE_PARAMS_IGNORED);
        assert_int_equal(routes_find("/")->params, ROUTE_PARAMS_IGNORED);
        assert_int_equal(routes_find("/api/v1/status")->params, ROUTE_PARAMS_READ);
}

/* How docs/api.md heads the section of a row: its path; a segment row's
 * with the segment named, "## `/api/v1/devices/{index}`"; a subtree
 * row's as "## `/api/...`". */
static bool heading_names_row(const char *heading, const struct route *r) {
        size_t len = strlen(r->path);

        if (strncmp(heading, r->path, len) != 0)
                return false;
        switch (r->match) {
        case ROUTE_EXACT:
        case ROUTE_ANY:
                return strcmp(heading + len, "") == 0;
        case ROUTE_SEGMENT:
                return heading[len] == '{' && heading[strlen(heading) - 1] == '}' && !strchr(heading + len, '/');
        case ROUTE_SUBTREE:
                return strcmp(heading + len, "/...") == 0;
        }
        return false;
}

/* The problems between the route table and the "## `...`" headings of doc:
 * a row without a section, or a section without a row. Returns how many,
 * each printed. */
static int doc_problems(const char *doc) {
        int problems = 0;
        bool seen[64] = { false };

        assert_true(routes_count <= 64);
        for (const char *h = strstr(doc, "\n## `"); h; h = strstr(h + 1, "\n## `")) {
                char heading[128];
                h += 5;
                snprintf(heading, sizeof(heading), "%.*s", (int) strcspn(h, "`\n"), h);
                const struct route *r = routes_find(heading);
                if (!heading_names_row(heading, r)) {
                        printf("# docs/api.md: section `%s` names no route\n", heading);
                        problems++;
                        continue;
                }
                seen[r - routes_table] = true;
        }
        for (size_t i = 0; i < routes_count; i++)
                if (!seen[i]) {
                        printf("# docs/api.md: no section for route %s\n", routes_table[i].path);
                        problems++;
                }
        return problems;
}

static char *read_text(const char *path) {
        FILE *f = fopen(path, "re");
        assert_non_null(f);
        char *text = calloc(1, 1 << 20);
        assert_non_null(text);
        size_t n = fread(text, 1, (1 << 20) - 1, f);
        assert_true(n < (1 << 20) - 1);
        fclose(f);
        return text;
}

static void routes_table__every_row__has_a_section_in_api_md(void **state) {
        const char *top = getenv("top_srcdir");
        char path[4096];

        snprintf(path, sizeof(path), "%s/docs/api.md", top ? top : ".");
        char *doc = read_text(path);
        assert_int_equal(doc_problems(doc), 0);
        free(doc);
}

static void doc_problems__missing_and_stray_sections__counted(void **state) {
        /* Every row but /api/v1/series, plus a section for a path no row has. */
        static const char doc[] =
                "# API\n"
                "## `/metrics`\n## `/healthz`\n## `/api/v1/devices`\n"
                "## `/api/v1/devices/{index}`\n## `/api/v1/runtimes`\n## `/api/v1/latest`\n"
                "## `/api/v1/query_range`\n## `/api/v1/pods`\n"
                "## `/api/v1/status`\n## `/api/v1/health`\n## `/api/v1/events`\n## `/api/v1/admin/faults`\n## `/api/v1/admin/ticks`\n## `/api/...`\n"
                "## `/`\n"
                "## `/api/v1/query`\n## Parameter validation\n";
        assert_int_equal(doc_problems(doc), 2);
}

static struct web_fixture *fixture_with(void (*adjust)(struct web_context *ctx)) {
        struct web_fixture *f = calloc(1, sizeof(*f));
        assert_non_null(f);
        web_fixture_init(f);
        if (adjust)
                adjust(&f->ctx);
        web_fixture_start(f);
        return f;
}

static void fixture_free(struct web_fixture *f) {
        web_fixture_free(f);
        free(f);
}

static void assert_header(struct web_fixture *f, const char *method, const char *target, const char *headers,
                          const char *name, const char *value) {
        struct web_answer a;
        char got[256];
        web_fixture_ask(f, method, target, headers, &a);
        if (!web_answer_header(&a, name, got, sizeof(got)) || strcmp(got, value) != 0)
                fail_msg("%s %s: expected %s: %s, got:\n%s", method, target, name, value, a.text);
        web_answer_free(&a);
}

static void dispatch__method_not_in_row__405_with_allow(void **state) {
        struct web_fixture *f = fixture_with(NULL);

        web_fixture_expect(f, "POST", "/metrics", NULL, 405, "method POST not allowed; use GET or HEAD");
        assert_header(f, "POST", "/metrics", NULL, "Allow", "GET, HEAD");
        web_fixture_expect(f, "PATCH", "/api/v1/status", NULL, 405, NULL);
        web_fixture_expect(f, "DELETE", "/", NULL, 405, NULL);
        web_fixture_expect(f, "PUT", "/api/v1/nope", NULL, 405, NULL);
        /* OPTIONS without CORS is a method like any other. */
        assert_header(f, "OPTIONS", "/api/v1/status", NULL, "Allow", "GET, HEAD");
        /* The admin row has its own list, and checks it before its auth rule. */
        web_fixture_expect(f, "PUT", "/api/v1/admin/faults", NULL, 405, "use GET, HEAD, POST or DELETE");
        assert_header(f, "PUT", "/api/v1/admin/faults", NULL, "Allow", "GET, HEAD, POST, DELETE");
        /* Allowed methods reach the handler. */
        web_fixture_expect(f, "GET", "/api/v1/status", NULL, 200, "\"status\":\"success\"");
        web_fixture_expect(f, "HEAD", "/api/v1/status", NULL, 200, NULL);
        fixture_free(f);
}

static void with_cors(struct web_context *ctx) {
        ctx->cors_origin = "https://grafana.example";
}

static void dispatch__options_with_cors__preflight_on_read_rows(void **state) {
        struct web_fixture *f = fixture_with(with_cors);

        web_fixture_expect(f, "OPTIONS", "/api/v1/status", NULL, 204, NULL);
        assert_header(f, "OPTIONS", "/api/v1/status", NULL, "Access-Control-Allow-Methods", "GET, HEAD");
        assert_header(f, "OPTIONS", "/metrics", NULL, "Allow", "GET, HEAD, OPTIONS");
        assert_header(f, "OPTIONS", "/", NULL, "Access-Control-Allow-Origin", "https://grafana.example");
        /* The admin row takes no preflight: a web page may not drive it. */
        web_fixture_expect(f, "OPTIONS", "/api/v1/admin/faults", NULL, 405, NULL);
        assert_header(f, "GET", "/api/v1/status", NULL, "Access-Control-Allow-Origin", "https://grafana.example");
        fixture_free(f);
}

static struct auth *test_auth;

static void with_token(struct web_context *ctx) {
        ctx->auth = test_auth;
}

static void with_token_and_open_healthz(struct web_context *ctx) {
        ctx->auth = test_auth;
        ctx->healthz_open = true;
}

static void with_token_and_admin(struct web_context *ctx) {
        ctx->auth = test_auth;
        ctx->admin = true;
}

static int make_auth(void **state) {
        char path[] = "/tmp/neurond-token-XXXXXX", err[256];
        int fd = mkstemp(path);
        assert_true(fd >= 0);
        assert_int_equal(write(fd, "s3cret\n", 7), 7);
        close(fd);
        assert_int_equal(auth_new(NULL, path, &test_auth, err, sizeof(err)), 0);
        unlink(path);
        return 0;
}

static int free_auth(void **state) {
        auth_free(test_auth);
        return 0;
}

#define TOKEN "Authorization: Bearer s3cret\r\n"

static void dispatch__auth_rule__normal_rows_need_credentials(void **state) {
        struct web_fixture *f = fixture_with(with_token);

        web_fixture_expect(f, "GET", "/metrics", NULL, 401, "authentication required");
        assert_header(f, "GET", "/metrics", NULL, "WWW-Authenticate", "Bearer realm=\"neurond\"");
        web_fixture_expect(f, "GET", "/metrics", "Authorization: Bearer wrong\r\n", 401, NULL);
        web_fixture_expect(f, "GET", "/metrics", TOKEN, 200, "neuron_device_up{neuron_device=\"0\"} 1");
        web_fixture_expect(f, "GET", "/api/v1/status", NULL, 401, NULL);
        web_fixture_expect(f, "GET", "/", NULL, 401, NULL);
        web_fixture_expect(f, "GET", "/api/v1/nope", NULL, 401, NULL);
        web_fixture_expect(f, "GET", "/api/v1/nope", TOKEN, 404, "no such API endpoint: /api/v1/nope");
        /* healthz_open is off: /healthz is a row like the others. */
        web_fixture_expect(f, "GET", "/healthz", NULL, 401, NULL);
        web_fixture_expect(f, "GET", "/healthz", TOKEN, 200, "\"status\":\"ok\"");
        /* Admin rows: credentials first, then the admin setting (off). */
        web_fixture_expect(f, "GET", "/api/v1/admin/faults", NULL, 401, NULL);
        web_fixture_expect(f, "GET", "/api/v1/admin/faults", TOKEN, 404, "no such API endpoint");
        fixture_free(f);
}

static void dispatch__healthz_open__only_healthz_exempt(void **state) {
        struct web_fixture *f = fixture_with(with_token_and_open_healthz);

        web_fixture_expect(f, "GET", "/healthz", NULL, 200, "\"status\":\"ok\"");
        web_fixture_expect(f, "GET", "/metrics", NULL, 401, NULL);
        web_fixture_expect(f, "GET", "/healthz/x", NULL, 401, NULL);
        fixture_free(f);
}

static void dispatch__admin_rule__credentials_then_setting(void **state) {
        struct web_fixture *f = fixture_with(with_token_and_admin);

        web_fixture_expect(f, "POST", "/api/v1/admin/faults?fault=device_down:1", NULL, 401, NULL);
        assert_string_equal(f->faults.injected, "");
        web_fixture_expect(f, "POST", "/api/v1/admin/faults?fault=device_down:1", TOKEN, 200,
                           "\"fault\":\"device_down:1\"");
        assert_string_equal(f->faults.injected, "device_down:1");
        fixture_free(f);
}

static void dispatch__parameters__checked_only_where_read(void **state) {
        struct web_fixture *f = fixture_with(NULL);
        char many[512] = "";

        for (int i = 0; i < 33; i++)
                snprintf(many + strlen(many), sizeof(many) - strlen(many), "%sp%d=1", i ? "&" : "?", i);
        char target[600];
        snprintf(target, sizeof(target), "/api/v1/latest%s", many);
        web_fixture_expect(f, "GET", target, NULL, 400, "more than 32 query parameters");
        snprintf(target, sizeof(target), "/metrics%s", many);
        web_fixture_expect(f, "GET", target, NULL, 200, NULL);
        snprintf(target, sizeof(target), "/%s", many);
        web_fixture_expect(f, "GET", target, NULL, 200, "hello");
        web_fixture_expect(f, "GET", "/api/v1/status?verbose=1", NULL, 400, "parameter 'verbose'");
        fixture_free(f);
}

/* The body of a, gunzipped when it says Content-Encoding: gzip (every
 * member of it), into out. */
static size_t body_text(const struct web_answer *a, char *out, size_t size) {
        char encoding[32];

        if (!web_answer_header(a, "Content-Encoding", encoding, sizeof(encoding))) {
                assert_true(a->body_len < size);
                memcpy(out, a->body, a->body_len);
                return a->body_len;
        }
        assert_string_equal(encoding, "gzip");
        z_stream zs = { .next_in = (Bytef *) a->body, .avail_in = (uInt) a->body_len };
        zs.next_out = (Bytef *) out;
        zs.avail_out = (uInt) size;
        assert_int_equal(inflateInit2(&zs, 15 + 16), Z_OK);
        int r;
        while ((r = inflate(&zs, Z_NO_FLUSH)) == Z_STREAM_END && zs.avail_in > 0)
                assert_int_equal(inflateReset(&zs), Z_OK);
        assert_int_equal(r, Z_STREAM_END);
        size_t n = size - zs.avail_out;
        inflateEnd(&zs);
        return n;
}

static void dispatch__gzip_accepted__large_bodies_compressed(void **state) {
        struct web_fixture *f = fixture_with(NULL);
        static char plain[65536], unzipped[65536];
        struct web_answer a;
        char value[128];

        /* About 2 KiB of JSON. */
        f->history.more_series = 40;
        web_fixture_ask(f, "GET", "/api/v1/series", NULL, &a);
        assert_int_equal(a.status, 200);
        assert_false(web_answer_header(&a, "Content-Encoding", value, sizeof(value)));
        size_t n = body_text(&a, plain, sizeof(plain));
        assert_true(n >= 1024);
        web_answer_free(&a);
        web_fixture_ask(f, "GET", "/api/v1/series", "Accept-Encoding: gzip\r\n", &a);
        assert_true(a.body_len < n);
        assert_int_equal(body_text(&a, unzipped, sizeof(unzipped)), n);
        assert_memory_equal(unzipped, plain, n);
        assert_true(web_answer_header(&a, "Vary", value, sizeof(value)));
        assert_string_equal(value, "Accept-Encoding");
        web_answer_free(&a);
        /* A small body is not worth it. */
        web_fixture_ask(f, "GET", "/api/v1/status", "Accept-Encoding: gzip\r\n", &a);
        assert_false(web_answer_header(&a, "Content-Encoding", value, sizeof(value)));
        web_answer_free(&a);

        /* /metrics: two gzip members, the series then neurond's own metrics. */
        web_fixture_ask(f, "GET", "/metrics",
                        "Accept: application/openmetrics-text;version=1.0.0\r\n"
                        "Accept-Encoding: gzip\r\n",
                        &a);
        assert_int_equal(a.status, 200);
        assert_true(web_answer_header(&a, "Content-Type", value, sizeof(value)));
        assert_string_equal(value, "application/openmetrics-text; version=1.0.0; charset=utf-8");
        n = body_text(&a, unzipped, sizeof(unzipped) - 1);
        unzipped[n] = '\0';
        assert_non_null(strstr(unzipped, "neuroncore_utilization_ratio{neuron_device=\"1\",neuroncore=\"2\"} 0.5\n"));
        assert_non_null(strstr(unzipped, "neurond_build_info{"));
        assert_non_null(strstr(unzipped, "# EOF\n"));
        web_answer_free(&a);
        fixture_free(f);
}

static void dispatch__every_answer__common_headers_and_counted(void **state) {
        struct web_fixture *f = fixture_with(NULL);
        const char *targets[] = { "/metrics", "/api/v1/status", "/api/v1/nope", "/", "/nope.js" };

        for (size_t i = 0; i < sizeof(targets) / sizeof(targets[0]); i++) {
                assert_header(f, "GET", targets[i], NULL, "X-Content-Type-Options", "nosniff");
                assert_header(f, "GET", targets[i], NULL, "Referrer-Policy", "no-referrer");
        }
        assert_header(f, "POST", "/metrics", NULL, "X-Content-Type-Options", "nosniff");
        /* Each target twice, plus the POST. */
        assert_int_equal(f->http_requests[expo_http_code_index(200)], 6);
        assert_int_equal(f->http_requests[expo_http_code_index(404)], 4);
        assert_int_equal(f->http_requests[expo_http_code_index(405)], 1);
        fixture_free(f);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(routes_find__paths__first_matching_row),
                cmocka_unit_test(routes_table__rows__exact_methods_and_rules),
                cmocka_unit_test(routes_table__every_row__has_a_section_in_api_md),
                cmocka_unit_test(doc_problems__missing_and_stray_sections__counted),
                cmocka_unit_test(dispatch__method_not_in_row__405_with_allow),
                cmocka_unit_test(dispatch__options_with_cors__preflight_on_read_rows),
                cmocka_unit_test(dispatch__auth_rule__normal_rows_need_credentials),
                cmocka_unit_test(dispatch__healthz_open__only_healthz_exempt),
                cmocka_unit_test(dispatch__admin_rule__credentials_then_setting),
                cmocka_unit_test(dispatch__parameters__checked_only_where_read),
                cmocka_unit_test(dispatch__gzip_accepted__large_bodies_compressed),
                cmocka_unit_test(dispatch__every_answer__common_headers_and_counted),
        };
        return cmocka_run_group_tests_name("routes", tests, make_auth, free_auth);
}
