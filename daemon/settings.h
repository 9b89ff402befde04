/* Settings from defaults, the config file and the command line, in that
 * order of precedence (flags win). Parsing never opens anything but the
 * config file, so bad input is reported before the daemon touches state. */
#pragma once

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

#include "lib/log.h"

#define SETTINGS_DEFAULT_PORT 9710
#define SETTINGS_DEFAULT_LISTEN "127.0.0.1:9710"
#define SETTINGS_DEFAULT_INTERVAL_MS 1000
#define SETTINGS_INTERVAL_MIN_MS 100
#define SETTINGS_INTERVAL_MAX_MS (3600 * 1000)

enum settings_action {
        SETTINGS_RUN,
        SETTINGS_HELP,
        SETTINGS_VERSION,
        SETTINGS_CHECK_CONFIG,
        SETTINGS_LIST_INSTANCES,
};

struct settings {
        char listen[80]; /* as given, for messages */
        struct sockaddr_storage listen_addr;
        socklen_t listen_addr_len;
        char db_path[PATH_MAX];
        char backend[256];
        int64_t interval_ms;
        char config_path[PATH_MAX]; /* "" when no config file was read */
        char web_root[PATH_MAX];
        enum log_level log_level;
        bool admin; /* serve /api/v1/admin/ to loopback clients */

        /* HTTP security and limits (config file only); "" or 0 = off/default. */
        char tls_cert[PATH_MAX]; /* PEM certificate chain; with tls_key, HTTPS */
        char tls_key[PATH_MAX];
        char basic_auth_users[PATH_MAX]; /* file of user:bcrypt-hash lines */
        char bearer_token_file[PATH_MAX];
        bool healthz_open;     /* /healthz without credentials */
        char cors_origin[256]; /* Access-Control-Allow-Origin value */
        unsigned max_connections;
        unsigned connection_timeout_s;
        size_t max_header_bytes;

        /* Storage (config file only): age limits per tier and a size cap. */
        int64_t retention_raw_ms;    /* retention_raw, default 48h */
        int64_t retention_minute_ms; /* retention_1m, default 30d */
        int64_t retention_hour_ms;   /* retention_1h, default 365d */
        uint64_t max_db_bytes;       /* max_db_size ("512M", "1G"; 0 no cap), default 1G */
        bool allow_root;             /* --allow-root: run even with euid 0 */
};

/* Parses "ADDR:PORT" or "[IPV6]:PORT" with a numeric address.
 * Returns 0 or -EINVAL. */
int settings_parse_listen(const char *text, struct sockaddr_storage *ret_addr, socklen_t *ret_len);

/* Fills *ret from defaults, the config file (--config, or the default path
 * when it exists) and argv. Returns the action to take, or -EINVAL with a
 * one-line reason in err. */
int settings_load(int argc, char **argv, struct settings *ret, char *err, size_t errlen);

/* Prints --help text to stdout. */
void settings_print_help(const char *argv0);
