#include "config.h"

#include <errno.h>
#include <stdint.h>
#include <string.h>
#include <strings.h>

#include "collectors/imds.h"
#include "lib/parse.h"

/* Every answer is a short text; a longer one is not the service's. */
#define CONTENT_LENGTH_MAX 4096

int imds_parse_response(const char *buf, size_t len, unsigned *ret_status, const char **ret_body,
                        size_t *ret_body_len) {
        const char *end = buf + len;
        uint64_t status, content_length = UINT64_MAX;

        if (len < 12 || memcmp(buf, "HTTP/1.", 7) != 0 || buf[8] != ' ')
                return -EPROTO;
        char code[4] = { buf[9], buf[10], buf[11], '\0' };
        if (parse_uint_range(code, 100, 599, &status) < 0 || (len > 12 && buf[12] != ' ' && buf[12] != '\r'))
                return -EPROTO;
        /* Header lines until an empty one. */
        const char *line = memchr(buf, '\n', len);
        if (!line)
                return -EPROTO;
        line++;
        for (;;) {
                const char *nl = memchr(line, '\n', (size_t) (end - line));
                if (!nl)
                        return -EPROTO;
                size_t n = (size_t) (nl - line);
                if (n > 0 && line[n - 1] == '\r')
                        n--;
                if (n == 0) {
                        line = nl + 1;
                        break;
                }
                static const char cl[] = "content-length:", te[] = "transfer-encoding:";
                if (n > sizeof(cl) - 1 && strncasecmp(line, cl, sizeof(cl) - 1) == 0) {
                        char value[24];
                        size_t at = sizeof(cl) - 1;
                        while (at < n && line[at] == ' ')
                                at++;
                        if (n - at == 0 || n - at >= sizeof(value))
                                return -EPROTO;
                        memcpy(value, line + at, n - at);
                        value[n - at] = '\0';
                        if (parse_uint_range(value, 0, CONTENT_LENGTH_MAX, &content_length) < 0)
                                return -EPROTO;
                } else if (n >= sizeof(te) - 1 && strncasecmp(line, te, sizeof(te) - 1) == 0) {
                        return -EPROTO;
                }
                line = nl + 1;
        }
        size_t body_len = (size_t) (end - line);
        if (content_length != UINT64_MAX) {
                if (body_len < content_length)
                        return -EMSGSIZE;
                body_len = (size_t) content_length;
        }
        *ret_status = (unsigned) status;
        *ret_body = line;
        *ret_body_len = body_len;
        return 0;
}

int imds_parse_value(const char *body, size_t len, char *out, size_t size) {
        if (len > 0 && body[len - 1] == '\n')
                len--;
        if (len >= size)
                return -ERANGE;
        for (size_t i = 0; i < len; i++)
                if (body[i] < 0x20 || body[i] > 0x7e)
                        return -EINVAL;
        memcpy(out, body, len);
        out[len] = '\0';
        return 0;
}
