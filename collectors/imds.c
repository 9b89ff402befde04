#include "config.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "collectors/imds.h"
#include "lib/clock.h"

/* Every answer is a short text; a longer one is not the service's. */
#define RESPONSE_MAX 4096
/* The session token lives as long as the fetch needs it. */
#define TOKEN_TTL_S 60

/* Milliseconds left until deadline (CLOCK_MONOTONIC ms), at least 0. */
static int remaining(int64_t deadline) {
        int64_t left = deadline - clock_monotonic_ms();
        return left > 0 ? (int) left : 0;
}

static int wait_for(int fd, short events, int64_t deadline) {
        struct pollfd p = { .fd = fd, .events = events };
        for (;;) {
                int n = poll(&p, 1, remaining(deadline));
                if (n > 0)
                        return 0;
                if (n == 0)
                        return -ETIMEDOUT;
                if (errno != EINTR)
                        return -errno;
        }
}

/* One request on its own connection; the whole answer in buf (room for
 * RESPONSE_MAX bytes and a NUL). Returns the answer's length or a negative
 * errno. */
static int exchange(const struct sockaddr *addr, socklen_t addr_len, int timeout_ms, const char *request, char *buf) {
        int64_t deadline = clock_monotonic_ms() + timeout_ms;
        size_t len = 0, sent = 0, request_len = strlen(request);
        int r = 0;
        int fd = socket(addr->sa_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
        if (fd < 0)
                return -errno;
        if (connect(fd, addr, addr_len) < 0 && errno != EINPROGRESS) {
                r = -errno;
                goto out;
        }
        r = wait_for(fd, POLLOUT, deadline);
        if (r == 0) {
                int error = 0;
                socklen_t elen = sizeof(error);
                getsockopt(fd, SOL_SOCKET, SO_ERROR, &error, &elen);
                r = -error;
        }
        while (r == 0 && sent < request_len) {
                ssize_t n = send(fd, request + sent, request_len - sent, MSG_NOSIGNAL);
                if (n >= 0)
                        sent += (size_t) n;
                else if (errno == EAGAIN)
                        r = wait_for(fd, POLLOUT, deadline);
                else if (errno != EINTR)
                        r = -errno;
        }
        /* Connection: close, so the answer ends where the stream does. */
        while (r == 0) {
                ssize_t n = recv(fd, buf + len, RESPONSE_MAX - len, 0);
                if (n > 0) {
                        len += (size_t) n;
                        if (len == RESPONSE_MAX)
                                r = -EMSGSIZE;
                } else if (n == 0) {
                        break;
                } else if (errno == EAGAIN) {
                        r = wait_for(fd, POLLIN, deadline);
                } else if (errno != EINTR) {
                        r = -errno;
                }
        }
out:
        close(fd);
        if (r < 0)
                return r;
        buf[len] = '\0';
        return (int) len;
}

struct session {
        const struct sockaddr *addr;
        socklen_t addr_len;
        int timeout_ms;
        char host[64];
        char token[128];
};

/* GETs latest/meta-data/<path> into out. Returns 0, -ENOENT for a 404,
 * or another negative errno. */
static int get(const struct session *s, const char *path, char *out, size_t size) {
        char request[512], buf[RESPONSE_MAX + 1];
        unsigned status;
        const char *body;
        size_t body_len;

        snprintf(request, sizeof(request),
                 "GET /latest/meta-data/%s HTTP/1.1\r\nHost: %s\r\nX-aws-ec2-metadata-token: %s\r\n"
                 "Connection: close\r\n\r\n",
                 path, s->host, s->token);
        int n = exchange(s->addr, s->addr_len, s->timeout_ms, request, buf);
        if (n < 0)
                return n;
        int r = imds_parse_response(buf, (size_t) n, &status, &body, &body_len);
        if (r < 0)
                return r;
        if (status == 404)
                return -ENOENT;
        if (status != 200)
                return -EACCES;
        return imds_parse_value(body, body_len, out, size);
}

static void host_text(const struct sockaddr *addr, char *out, size_t size) {
        char ip[INET6_ADDRSTRLEN] = "";
        if (addr->sa_family == AF_INET6) {
                const struct sockaddr_in6 *a = (const struct sockaddr_in6 *) addr;
                inet_ntop(AF_INET6, &a->sin6_addr, ip, sizeof(ip));
                snprintf(out, size, "[%s]:%u", ip, ntohs(a->sin6_port));
        } else {
                const struct sockaddr_in *a = (const struct sockaddr_in *) addr;
                inet_ntop(AF_INET, &a->sin_addr, ip, sizeof(ip));
                snprintf(out, size, "%s:%u", ip, ntohs(a->sin_port));
        }
}

int imds_fetch(const struct sockaddr *addr, socklen_t addr_len, int timeout_ms, struct instance_identity *ret) {
        struct session s = { .addr = addr, .addr_len = addr_len, .timeout_ms = timeout_ms };
        struct instance_identity id = { 0 };
        char request[256], buf[RESPONSE_MAX + 1], mac[32] = "", path[128];
        unsigned status;
        const char *body;
        size_t body_len;

        host_text(addr, s.host, sizeof(s.host));
        snprintf(request, sizeof(request),
                 "PUT /latest/api/token HTTP/1.1\r\nHost: %s\r\nX-aws-ec2-metadata-token-ttl-seconds: %d\r\n"
                 "Content-Length: 0\r\nConnection: close\r\n\r\n",
                 s.host, TOKEN_TTL_S);
        int n = exchange(addr, addr_len, timeout_ms, request, buf);
        if (n < 0)
                return n;
        int r = imds_parse_response(buf, (size_t) n, &status, &body, &body_len);
        if (r < 0)
                return r;
        if (status != 200)
                return -EACCES;
        if (imds_parse_value(body, body_len, s.token, sizeof(s.token)) < 0 || !s.token[0])
                return -EPROTO;

        const struct {
                const char *path;
                char *out;
                size_t size;
                bool optional; /* absent unless the instance allows tags in its metadata */
        } fields[] = {
                { "instance-id", id.instance_id, sizeof(id.instance_id), false },
                { "instance-type", id.instance_type, sizeof(id.instance_type), false },
                { "placement/availability-zone", id.availability_zone, sizeof(id.availability_zone), false },
                { "placement/availability-zone-id", id.availability_zone_id, sizeof(id.availability_zone_id), false },
                { "placement/region", id.region, sizeof(id.region), false },
                { "ami-id", id.ami_id, sizeof(id.ami_id), false },
                { "mac", mac, sizeof(mac), false },
                { "tags/instance/Name", id.instance_name, sizeof(id.instance_name), true },
        };
        for (size_t i = 0; i < sizeof(fields) / sizeof(fields[0]); i++) {
                r = get(&s, fields[i].path, fields[i].out, fields[i].size);
                if (r < 0 && !(fields[i].optional && r == -ENOENT) && !id.error[0])
                        snprintf(id.error, sizeof(id.error), "%s: %s", fields[i].path, strerror(-r));
        }
        /* A MAC address goes into the next path: hex digits and colons only. */
        if (mac[0] && strspn(mac, "0123456789abcdef:") != strlen(mac)) {
                if (!id.error[0])
                        snprintf(id.error, sizeof(id.error), "mac: '%s' is not a MAC address", mac);
                mac[0] = '\0';
        }
        if (mac[0]) {
                snprintf(path, sizeof(path), "network/interfaces/macs/%s/subnet-id", mac);
                r = get(&s, path, id.subnet_id, sizeof(id.subnet_id));
                if (r < 0 && !id.error[0])
                        snprintf(id.error, sizeof(id.error), "%s: %s", path, strerror(-r));
        }
        *ret = id;
        return 0;
}
