/* libFuzzer target for the parsers of the instance metadata client: the
 * first byte picks the parser, the rest is the service's answer. */
#include "config.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "collectors/imds.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        if (size < 1)
                return 0;
        size_t len = size - 1;
        char *copy = malloc(len ? len : 1);
        if (!copy)
                return 0;
        memcpy(copy, data + 1, len);
        if (data[0] & 1) {
                unsigned status;
                const char *body;
                size_t body_len;
                if (imds_parse_response(copy, len, &status, &body, &body_len) == 0 &&
                    (status < 100 || status > 599 || body < copy || body + body_len > copy + len))
                        abort();
        } else {
                char out[32];
                if (imds_parse_value(copy, len, out, sizeof(out)) == 0 && strlen(out) >= sizeof(out))
                        abort();
        }
        free(copy);
        return 0;
}
