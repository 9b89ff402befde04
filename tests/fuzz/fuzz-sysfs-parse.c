/* libFuzzer target for the sysfs parsers. The first byte picks the parser,
 * the rest is the attribute's contents; every parser must accept any bytes
 * without reading out of bounds and keep its output contract. */
#include "config.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "collectors/sysfs.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        if (size < 1)
                return 0;
        const char *buf = (const char *) data + 1;
        size_t len = size - 1;
        /* A copy of exactly len bytes, so that ASan catches any overread. */
        char *copy = malloc(len ? len : 1);
        if (!copy)
                return 0;
        memcpy(copy, buf, len);

        switch (data[0] % 6) {
        case 0: {
                uint64_t v;
                (void) sysfs_parse_u64(copy, len, &v);
                break;
        }
        case 1: {
                char out[32];
                if (sysfs_parse_string(copy, len, out, sizeof(out)) == 0 && strlen(out) >= sizeof(out))
                        abort();
                break;
        }
        case 2: {
                struct sysfs_power p;
                if (sysfs_parse_power(copy, len, &p) == 0 && !(p.avg >= 0 && p.min >= 0 && p.max >= 0))
                        abort();
                break;
        }
        case 3: {
                struct sysfs_pe_counters a, b = { 0 };
                double r;
                if (sysfs_parse_pe_counters(copy, len, &a) == 0 && sysfs_busy_ratio(&b, &a, &r) == 0 &&
                    !(r >= 0 && r <= 1))
                        abort();
                break;
        }
        case 4: {
                int node;
                unsigned modes;
                char id[17];
                if (sysfs_parse_node_id(copy, len, &node) == 0 && node < -1)
                        abort();
                if (sysfs_parse_server_id(copy, len, id, sizeof(id)) == 0 && strlen(id) != 16)
                        abort();
                if (sysfs_parse_ultraserver_modes(copy, len, &modes) == 0 && (modes & ~0x1eu))
                        abort();
                break;
        }
        default: {
                char name[64];
                unsigned v;
                size_t n = len < sizeof(name) - 1 ? len : sizeof(name) - 1;
                memcpy(name, copy, n);
                name[n] = '\0';
                (void) sysfs_parse_device_name(name, &v);
                break;
        }
        }
        free(copy);
        return 0;
}
