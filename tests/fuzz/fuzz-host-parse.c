/* libFuzzer target for the /proc parsers of the host collector. The first
 * byte picks the parser, the rest is the file's contents. */
#include "config.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "collectors/host.h"

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
                struct host_memory m;
                if (host_parse_meminfo(copy, len, &m) == 0 &&
                    (m.available_bytes > m.total_bytes || m.swap_free_bytes > m.swap_total_bytes))
                        abort();
        } else {
                struct host_cpu_times a, zero = { 0 };
                struct host_cpu_usage u;
                if (host_parse_stat(copy, len, &a) == 0 && host_cpu_usage(&zero, &a, &u) == 0 &&
                    !(u.user >= 0 && u.system >= 0 && u.user + u.system < 1.000001))
                        abort();
        }
        free(copy);
        return 0;
}
