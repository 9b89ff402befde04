/* libFuzzer target for the query parameter parsers: the input is a query
 * string, split into key=value pairs the way libmicrohttpd hands them over. */
#include "config.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "web/params.h"

#define PAIRS_MAX 32

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        struct param params[PAIRS_MAX];
        struct history_query q;
        char err[256];
        size_t n = 0;
        int64_t ms;

        if (size > 8192)
                return 0;
        char *text = malloc(size + 1);
        if (!text)
                return 0;
        memcpy(text, data, size);
        text[size] = '\0';
        for (char *p = text; p && *p && n < PAIRS_MAX;) {
                char *amp = strchr(p, '&');
                if (amp)
                        *amp = '\0';
                char *eq = strchr(p, '=');
                if (eq)
                        *eq = '\0';
                params[n++] = (struct param){ .key = p, .value = eq ? eq + 1 : "" };
                p = amp ? amp + 1 : NULL;
        }
        for (size_t i = 0; i < n; i++) {
                if (params_parse_time(params[i].value, &ms) == 0 && ms < 0)
                        abort();
                if (params_parse_step(params[i].value, &ms) == 0 && ms <= 0)
                        abort();
        }
        if (params_parse_query_range(params, n, 1800000000000, &q, err, sizeof(err)) == 0) {
                if (q.start_ms > q.end_ms || q.step_ms <= 0 ||
                    (q.end_ms - q.start_ms) / q.step_ms + 1 > PARAMS_MAX_POINTS)
                        abort();
        } else if (!memchr(err, '\0', sizeof(err)) || strncmp(err, "parameter '", 11) != 0) {
                abort(); /* every error names its parameter */
        }
        free(text);
        return 0;
}
