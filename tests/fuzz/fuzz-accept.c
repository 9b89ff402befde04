/* libFuzzer target for the Accept and Accept-Encoding parsers. */
#include "config.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "web/accept.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        /* Headers arrive NUL-terminated from libmicrohttpd. */
        char *text = malloc(size + 1);
        if (!text)
                return 0;
        memcpy(text, data, size);
        text[size] = '\0';
        enum accept_format f = accept_format(text);
        if (f != ACCEPT_TEXT && f != ACCEPT_OPENMETRICS)
                abort();
        (void) accept_gzip(text);
        free(text);
        return 0;
}
