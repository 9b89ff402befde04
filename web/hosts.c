#include "config.h"

#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "lib/parse.h"
#include "web/hosts.h"

struct hosts {
        size_t n;
        char names[HOSTS_MAX][HOSTS_NAME_MAX + 1]; /* lower case */
};

static const char *const loopback_names[] = {
        "localhost", "*.localhost", "localhost.localdomain", "ip6-localhost", "ip6-loopback",
};

static bool is_name_char(char c) {
        return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' || c == '.' ||
               c == '_';
}

/* A DNS name: name characters only, no empty label. */
static bool is_name(const char *s, size_t len) {
        if (len == 0 || len > HOSTS_NAME_MAX || s[0] == '.' || s[len - 1] == '.')
                return false;
        for (size_t i = 0; i < len; i++)
                if (!is_name_char(s[i]) || (s[i] == '.' && s[i + 1] == '.'))
                        return false;
        return true;
}

/* Adds one entry: "*", "*.name" or a name. */
static int add_entry(struct hosts *h, const char *s, size_t len, char *err, size_t errlen) {
        bool wildcard = len >= 2 && s[0] == '*' && s[1] == '.';
        bool ok = (len == 1 && s[0] == '*') || (wildcard ? is_name(s + 2, len - 2) : is_name(s, len));

        if (!ok) {
                snprintf(err, errlen, "'%.*s' is not a host name, *.name or *", (int) (len > 80 ? 80 : len), s);
                return -EINVAL;
        }
        if (h->n == HOSTS_MAX) {
                snprintf(err, errlen, "more than %d names", HOSTS_MAX);
                return -EINVAL;
        }
        for (size_t i = 0; i < len; i++)
                h->names[h->n][i] = (char) (s[i] >= 'A' && s[i] <= 'Z' ? s[i] - 'A' + 'a' : s[i]);
        h->names[h->n][len] = '\0';
        h->n++;
        return 0;
}

int hosts_new(const char *list, struct hosts **ret, char *err, size_t errlen) {
        struct hosts *h = calloc(1, sizeof(*h));
        int r = 0;

        if (!h)
                return -ENOMEM;
        if (!list || !*list)
                for (size_t i = 0; i < sizeof(loopback_names) / sizeof(loopback_names[0]); i++)
                        add_entry(h, loopback_names[i], strlen(loopback_names[i]), err, errlen);
        for (const char *p = list ? list : ""; *p && r == 0;) {
                p += strspn(p, ", \t");
                size_t len = strcspn(p, ", \t");
                if (len)
                        r = add_entry(h, p, len, err, errlen);
                p += len;
        }
        if (r == 0 && h->n == 0) {
                snprintf(err, errlen, "no names");
                r = -EINVAL;
        }
        if (r < 0) {
                hosts_free(h);
                return r;
        }
        *ret = h;
        return 0;
}

void hosts_free(struct hosts *h) {
        free(h);
}

static bool name_allowed(const struct hosts *h, const char *name, size_t len) {
        for (size_t i = 0; i < h->n; i++) {
                const char *e = h->names[i];
                size_t elen = strlen(e);
                if (strcmp(e, "*") == 0)
                        return true;
                if (e[0] == '*') {
                        /* "*.x" takes "a.x", "b.a.x", not "x" itself. */
                        if (len > elen - 1 && strncasecmp(name + len - (elen - 1), e + 1, elen - 1) == 0)
                                return true;
                } else if (len == elen && strncasecmp(name, e, len) == 0) {
                        return true;
                }
        }
        return false;
}

enum hosts_verdict hosts_check(const struct hosts *h, const char *host) {
        char addr[INET6_ADDRSTRLEN + 1];
        unsigned char bytes[sizeof(struct in6_addr)];
        const char *port;
        size_t len;

        if (host[0] == '[') {
                const char *close = strchr(host, ']');
                len = close ? (size_t) (close - host - 1) : 0;
                port = close ? close + 1 : NULL;
                if (!close || len >= sizeof(addr))
                        return HOSTS_MALFORMED;
                memcpy(addr, host + 1, len);
                addr[len] = '\0';
                if (inet_pton(AF_INET6, addr, bytes) != 1)
                        return HOSTS_MALFORMED;
        } else {
                port = strchr(host, ':');
                len = port ? (size_t) (port - host) : strlen(host);
        }
        /* RFC 3986 lets the port be empty after its colon. */
        if (port && *port) {
                uint64_t number;
                if (port[0] != ':' || (port[1] && parse_uint_range(port + 1, 0, 65535, &number) < 0))
                        return HOSTS_MALFORMED;
        }
        if (host[0] == '[')
                return HOSTS_ALLOWED;
        /* A fully qualified name may end in a dot. */
        size_t name_len = len > 1 && host[len - 1] == '.' ? len - 1 : len;
        if (!is_name(host, name_len))
                return HOSTS_MALFORMED;
        if (name_len < sizeof(addr)) {
                memcpy(addr, host, name_len);
                addr[name_len] = '\0';
                if (inet_pton(AF_INET, addr, bytes) == 1)
                        return HOSTS_ALLOWED;
        }
        return name_allowed(h, host, name_len) ? HOSTS_ALLOWED : HOSTS_NOT_ALLOWED;
}
