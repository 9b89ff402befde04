/* Settings from defaults, the config file and the command line, in that
 * order of precedence (flags win). Parsing never opens anything but the
 * config file, so bad input is reported before the daemon touches state.
 *
 * One table, settings_table[], declares every setting: its config file
 * key, its flags, how its value is parsed, where it is stored, its
 * default, its help text and whether a reload (SIGHUP) applies it. The
 * table drives getopt, the config file, --help and the reload; a unit test
 * checks --help, contrib/neurond.conf, doc/neurond.8 and README.md
 * against it. */
#pragma once

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/socket.h>

#include "lib/log.h"
#include "remote/remote.h"

#define SETTINGS_DEFAULT_LISTEN "127.0.0.1:9710"
#define SETTINGS_DEFAULT_INTERVAL_MS 1000
#define SETTINGS_INTERVAL_MIN_MS 100
#define SETTINGS_INTERVAL_MAX_MS (3600 * 1000)
#define SETTINGS_DEFAULT_POD_RESOURCES_SOCKET "/var/lib/kubelet/pod-resources/kubelet.sock"
#define SETTINGS_DEFAULT_POD_RESOURCES_INTERVAL_MS 10000

enum settings_action {
        SETTINGS_RUN,
        SETTINGS_HELP,
        SETTINGS_VERSION,
        SETTINGS_CHECK_CONFIG,
        SETTINGS_LIST_INSTANCES,
};

/* A listening address, as given and parsed. */
struct settings_address {
        char text[80];
        struct sockaddr_storage addr;
        socklen_t len;
};

struct settings {
        struct settings_address listen;
        char db_path[PATH_MAX];
        char backend[256];
        int64_t interval_ms;
        char web_root[PATH_MAX];
        enum log_level log_level;
        bool admin;                                /* serve /api/v1/admin/ to loopback clients */
        bool instance_labels;                      /* the instance labels on every series of /metrics */
        struct settings_address instance_metadata; /* the EC2 instance metadata service */
        bool allow_root;                           /* --allow-root: run even with euid 0 */

        /* HTTP security and limits; "" is off. */
        char tls_cert[PATH_MAX]; /* PEM certificate chain; with tls_key, HTTPS */
        char tls_key[PATH_MAX];
        char basic_auth_users[PATH_MAX]; /* file of user:bcrypt-hash lines */
        char bearer_token_file[PATH_MAX];
        bool healthz_open;        /* /healthz without credentials */
        char cors_origin[256];    /* Access-Control-Allow-Origin value */
        char tls_priorities[512]; /* GnuTLS priority string */
        char allowed_hosts[1024]; /* names Host may carry; "" for the loopback names */
        uint64_t max_connections;
        int64_t connection_timeout_ms;
        int64_t header_timeout_ms;
        uint64_t max_header_bytes;
        uint64_t max_queries; /* range and series queries running or answering at once */
        uint64_t max_query_series;
        uint64_t max_query_points;

        /* Pod attribution from the kubelet's pod-resources API. */
        bool pod_labels;
        char pod_resources_socket[PATH_MAX];
        int64_t pod_resources_interval_ms;

        /* Storage: age limits per tier and a size cap (0: no cap). */
        int64_t retention_raw_ms;
        int64_t retention_minute_ms;
        int64_t retention_hour_ms;
        uint64_t max_db_bytes;
        uint64_t max_series;        /* series the database may hold (0: no limit) */
        int64_t integrity_check_ms; /* PRAGMA quick_check period */

        /* Remote write endpoints, one [remote_write NAME] section each, in
         * the file's order; settings_free() frees them. */
        struct remote_endpoint *remote_write;
        size_t n_remote_write;

        char config_path[PATH_MAX]; /* the config file read; "" when none */
};

/* The config file section of a remote write endpoint: "[remote_write NAME]",
 * NAME of letters, digits, '_', '-' and '.'. */
#define SETTINGS_REMOTE_WRITE_SECTION "remote_write"

/* How a value is written and stored. */
enum settings_kind {
        SETTINGS_TEXT,      /* char[size], not empty */
        SETTINGS_LISTEN,    /* struct settings_address: ADDR:PORT or [ADDR]:PORT */
        SETTINGS_DURATION,  /* int64_t ms: "500ms", "1m30s", "2d"; from min to max, or any positive with max 0 */
        SETTINGS_UINT,      /* uint64_t: a decimal from min to max */
        SETTINGS_SIZE,      /* uint64_t bytes: "1073741824", "512M", "1G" */
        SETTINGS_BOOL,      /* bool: true/yes/on/1, false/no/off/0; a flag of its own sets it true */
        SETTINGS_LOG_LEVEL, /* enum log_level: error, warning, info or debug */
        SETTINGS_LABELS,    /* struct remote_labels: "name=value, name=\"value\"" */
        SETTINGS_CONFIG,    /* --config FILE: the file to read; stored in config_path */
        SETTINGS_ACTION,    /* --help and the like: settings_load() returns .action */
};

/* One row of the table. A setting has a key and may have flags; a flag of
 * its own (key NULL) is --allow-root, --config or an action. */
struct settings_item {
        const char *key;  /* config file key; NULL: command line only */
        const char *flag; /* long flag without "--"; NULL: config file only */
        char short_flag;  /* 0: none */
        const char *arg;  /* the value's name in --help: "DURATION", "PATH" */
        enum settings_kind kind;
        size_t offset, size; /* the field in struct settings */
        uint64_t min, max;   /* SETTINGS_UINT, SETTINGS_DURATION (ms) */
        /* The default: text as a user would write it (TEXT, LISTEN,
         * LOG_LEVEL; NULL or "" for none), else the stored number (ms,
         * bytes, 0 or 1). */
        const char *default_text;
        uint64_t default_value;
        const char *default_help;    /* --help's words for a default that is not fixed, or NULL */
        const char *help;            /* one line, no default or range: --help adds them */
        bool reload;                 /* SIGHUP applies it at once (main.c acts on it); else at restart */
        enum settings_action action; /* SETTINGS_ACTION */
};

extern const struct settings_item settings_table[];
extern const size_t settings_table_size;

/* The keys of a [remote_write NAME] section; offsets are into struct
 * remote_endpoint, defaults those of remote_endpoint_init(). */
extern const struct settings_item settings_remote_write_table[];
extern const size_t settings_remote_write_table_size;

/* Parses "ADDR:PORT" or "[IPV6]:PORT" with a numeric address, or ":PORT" for
 * every address, which is "[::]:PORT" (served on IPv4 too, as exporters do).
 * Returns 0 or -EINVAL. */
int settings_parse_listen(const char *text, struct sockaddr_storage *ret_addr, socklen_t *ret_len);

/* Fills *ret from defaults, the config file (--config, or the default path
 * when it exists) and argv. Returns the action to take, or -EINVAL with a
 * one-line reason in err ("option --interval: ...", "FILE:LINE: ..."). */
int settings_load(int argc, char **argv, struct settings *ret, char *err, size_t errlen);

/* Frees what settings_load() allocated (the remote write endpoints). */
void settings_free(struct settings *s);

/* A reload: copies the settings a reload applies at once from loaded into
 * running, and writes to changed the keys whose new values wait for a
 * restart, comma-separated ("" when none). */
void settings_reload(struct settings *running, const struct settings *loaded, char *changed, size_t size);

/* Writes the --help text. */
void settings_print_help(FILE *out, const char *argv0);
