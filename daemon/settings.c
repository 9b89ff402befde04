#include "config.h"

#include <arpa/inet.h>
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <ini.h>
#include <netinet/in.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "collectors/imds.h"
#include "daemon/settings.h"
#include "lib/file.h"
#include "lib/parse.h"
#include "storage/store.h"
#include "web/http.h"

/* The config file is small: a size cap, and lines that inih's line buffer
 * holds whole, with a '\r', the '\n' and a NUL (ini.h's INI_MAX_LINE). */
#define CONFIG_FILE_MAX (1024 * 1024)
#define CONFIG_LINE_MAX (INI_MAX_LINE - 3)

#define FIELD(name) .offset = offsetof(struct settings, name), .size = sizeof(((struct settings *) 0)->name)

const struct settings_item settings_table[] = {
        {
                .key = "listen",
                .flag = "listen",
                .short_flag = 'l',
                .arg = "ADDR:PORT",
                .kind = SETTINGS_LISTEN,
                FIELD(listen),
                .default_text = SETTINGS_DEFAULT_LISTEN,
                .help = "address to serve HTTP on, :PORT for every address; port 0 picks a free port and logs it",
        },
        {
                .key = "db",
                .flag = "db",
                .short_flag = 'd',
                .arg = "PATH",
                .kind = SETTINGS_TEXT,
                FIELD(db_path),
                .default_text = NEUROND_STATE_DIR "/neurond.db",
                .default_help = "$STATE_DIRECTORY/neurond.db, else " NEUROND_STATE_DIR "/neurond.db",
                .help = "SQLite database",
        },
        {
                .key = "backend",
                .flag = "backend",
                .short_flag = 'b',
                .arg = "SPEC",
                .kind = SETTINGS_TEXT,
                FIELD(backend),
                .default_text = "sysfs",
                .help = "sysfs[:<root>][,lnc=1|2]: the Neuron driver's sysfs (<root> is where sysfs is mounted, "
                        "default /sys; without devices neurond runs, says why and picks them up when the driver "
                        "lists them); the same with ,monitor=<command> or ,monitor-fifo=<path> last to add "
                        "neuron-monitor's runtimes; or model:<instance>[,node=<k>][,scenario=<name>][,seed=<n>]"
                        "[,speed=<x>][,lnc=1|2]: the device model, a simulation, only when named. auto is another "
                        "name for sysfs",
        },
        {
                .key = "interval",
                .flag = "interval",
                .short_flag = 'i',
                .arg = "DURATION",
                .kind = SETTINGS_DURATION,
                FIELD(interval_ms),
                .min = SETTINGS_INTERVAL_MIN_MS,
                .max = SETTINGS_INTERVAL_MAX_MS,
                .default_value = SETTINGS_DEFAULT_INTERVAL_MS,
                .help = "time between polls",
                .reload = true,
        },
        {
                .key = "web_root",
                .flag = "web-root",
                .short_flag = 'w',
                .arg = "DIR",
                .kind = SETTINGS_TEXT,
                FIELD(web_root),
                .default_text = NEUROND_WEB_ROOT,
                .help = "dashboard files",
        },
        {
                .key = "log_level",
                .flag = "log-level",
                .arg = "LEVEL",
                .kind = SETTINGS_LOG_LEVEL,
                FIELD(log_level),
                .default_text = "info",
                .help = "error, warning, info or debug",
                .reload = true,
        },
        {
                .key = "admin",
                .flag = "enable-admin",
                .arg = "BOOL",
                .kind = SETTINGS_BOOL,
                FIELD(admin),
                .help = "serve the admin endpoints (the model's faults, the driven clock) to loopback clients",
        },
        {
                .key = "instance_labels",
                .flag = "instance-labels",
                .arg = "BOOL",
                .kind = SETTINGS_BOOL,
                FIELD(instance_labels),
                .help = "put the instance labels (instance_id, instance_type, availability_zone, region, subnet_id, "
                        "instance_name) on every series of /metrics, as AWS's neuron-monitor exporter does",
        },
        {
                .key = "instance_metadata",
                .flag = "instance-metadata",
                .arg = "ADDR:PORT",
                .kind = SETTINGS_LISTEN,
                FIELD(instance_metadata),
                .default_text = IMDS_DEFAULT_ADDRESS,
                .help = "the EC2 instance metadata service, asked once at start who the instance is (not for the "
                        "model, which makes up its instance)",
        },
        {
                .key = "pod_labels",
                .arg = "BOOL",
                .kind = SETTINGS_BOOL,
                FIELD(pod_labels),
                .default_value = 1,
                .help = "label NeuronCore and device series with the Kubernetes pod, namespace and container that "
                        "hold them, from the kubelet's pod-resources API",
        },
        {
                .key = "pod_resources_socket",
                .flag = "pod-resources-socket",
                .arg = "PATH",
                .kind = SETTINGS_TEXT,
                FIELD(pod_resources_socket),
                .default_text = SETTINGS_DEFAULT_POD_RESOURCES_SOCKET,
                .help = "the kubelet's pod-resources socket; while it is missing, series carry no pod labels",
        },
        {
                .key = "pod_resources_interval",
                .arg = "DURATION",
                .kind = SETTINGS_DURATION,
                FIELD(pod_resources_interval_ms),
                .min = SETTINGS_INTERVAL_MIN_MS,
                .max = SETTINGS_INTERVAL_MAX_MS,
                .default_value = SETTINGS_DEFAULT_POD_RESOURCES_INTERVAL_MS,
                .help = "time between two questions to the kubelet; each may take this long, at most 5s",
        },
        {
                .key = "retention_raw",
                .arg = "DURATION",
                .kind = SETTINGS_DURATION,
                FIELD(retention_raw_ms),
                .default_value = STORE_DEFAULT_RAW_RETENTION_MS,
                .help = "how long raw samples are kept",
        },
        {
                .key = "retention_1m",
                .arg = "DURATION",
                .kind = SETTINGS_DURATION,
                FIELD(retention_minute_ms),
                .default_value = STORE_DEFAULT_MINUTE_RETENTION_MS,
                .help = "how long 1-minute rollups are kept",
        },
        {
                .key = "retention_1h",
                .arg = "DURATION",
                .kind = SETTINGS_DURATION,
                FIELD(retention_hour_ms),
                .default_value = STORE_DEFAULT_HOUR_RETENTION_MS,
                .help = "how long 1-hour rollups are kept",
        },
        {
                .key = "max_db_size",
                .arg = "SIZE",
                .kind = SETTINGS_SIZE,
                FIELD(max_db_bytes),
                .default_value = STORE_DEFAULT_SIZE_CAP_BYTES,
                .help = "cap on the stored data, such as 512M or 1G; 0 for none",
        },
        {
                .key = "max_series",
                .arg = "N",
                .kind = SETTINGS_UINT,
                FIELD(max_series),
                .max = 100000000,
                .default_value = STORE_DEFAULT_MAX_SERIES,
                .help = "series the database may hold; a new series beyond it is not stored (counted); 0 for no limit",
        },
        {
                .key = "integrity_check_interval",
                .arg = "DURATION",
                .kind = SETTINGS_DURATION,
                FIELD(integrity_check_ms),
                .min = 1000,
                .max = 30LL * 24 * 3600 * 1000,
                .default_value = STORE_DEFAULT_CHECK_INTERVAL_MS,
                .help = "how often PRAGMA quick_check reads the whole database for damage (about 1 s per GiB, on a "
                        "thread of its own)",
        },
        {
                .key = "tls_cert",
                .arg = "PATH",
                .kind = SETTINGS_TEXT,
                FIELD(tls_cert),
                .help = "PEM certificate (chain); with tls_key, serve HTTPS",
        },
        {
                .key = "tls_key",
                .arg = "PATH",
                .kind = SETTINGS_TEXT,
                FIELD(tls_key),
                .help = "PEM private key of tls_cert",
        },
        {
                .key = "basic_auth_users",
                .arg = "PATH",
                .kind = SETTINGS_TEXT,
                FIELD(basic_auth_users),
                .help = "file of user:bcrypt-hash lines for HTTP basic authentication",
        },
        {
                .key = "bearer_token_file",
                .arg = "PATH",
                .kind = SETTINGS_TEXT,
                FIELD(bearer_token_file),
                .help = "file of one line, a token clients may send as Authorization: Bearer",
        },
        {
                .key = "healthz_open",
                .arg = "BOOL",
                .kind = SETTINGS_BOOL,
                FIELD(healthz_open),
                .help = "answer /healthz without credentials",
        },
        {
                .key = "cors_origin",
                .arg = "ORIGIN",
                .kind = SETTINGS_TEXT,
                FIELD(cors_origin),
                .help = "Access-Control-Allow-Origin for browsers on another origin",
        },
        {
                .key = "tls_priorities",
                .arg = "STRING",
                .kind = SETTINGS_TEXT,
                FIELD(tls_priorities),
                .default_text = HTTP_DEFAULT_TLS_PRIORITIES,
                .help = "GnuTLS priority string for HTTPS: protocol versions and ciphers",
        },
        {
                .key = "allowed_hosts",
                .arg = "NAMES",
                .kind = SETTINGS_TEXT,
                FIELD(allowed_hosts),
                .default_help = "localhost and the other loopback names",
                .help = "host names a request's Host header may carry, comma-separated (*.domain for its "
                        "subdomains, * for any); IP addresses are always allowed",
        },
        {
                .key = "max_connections",
                .arg = "N",
                .kind = SETTINGS_UINT,
                FIELD(max_connections),
                .min = 16,
                .max = 65536,
                .default_value = HTTP_DEFAULT_MAX_CONNECTIONS,
                .help = "HTTP connections open at once",
        },
        {
                .key = "connection_timeout",
                .arg = "DURATION",
                .kind = SETTINGS_DURATION,
                FIELD(connection_timeout_ms),
                .min = 1000,
                .max = 3600 * 1000,
                .default_value = HTTP_DEFAULT_CONNECTION_TIMEOUT_S * 1000,
                .help = "idle time before an HTTP connection is closed",
        },
        {
                .key = "header_timeout",
                .arg = "DURATION",
                .kind = SETTINGS_DURATION,
                FIELD(header_timeout_ms),
                .min = 1000,
                .max = 3600 * 1000,
                .default_value = HTTP_DEFAULT_HEADER_TIMEOUT_S * 1000,
                .help = "time for a request's headers to arrive, from the connection or the previous answer",
        },
        {
                .key = "max_header_bytes",
                .arg = "N",
                .kind = SETTINGS_UINT,
                FIELD(max_header_bytes),
                .min = 1024,
                .max = 1048576,
                .default_value = HTTP_DEFAULT_MAX_HEADER_BYTES,
                .help = "largest request headers accepted (more is 431)",
        },
        {
                .key = "max_queries",
                .arg = "N",
                .kind = SETTINGS_UINT,
                FIELD(max_queries),
                .min = 1,
                .max = 64,
                .default_value = HTTP_DEFAULT_MAX_QUERIES,
                .help = "range and series queries running or sending their answer at once; more wait, then 503",
        },
        {
                .key = "max_query_series",
                .arg = "N",
                .kind = SETTINGS_UINT,
                FIELD(max_query_series),
                .min = 1,
                .max = 1000000,
                .default_value = HTTP_DEFAULT_MAX_QUERY_SERIES,
                .help = "series one range query may match (more is 422)",
        },
        {
                .key = "max_query_points",
                .arg = "N",
                .kind = SETTINGS_UINT,
                FIELD(max_query_points),
                .min = 1000,
                .max = HISTORY_POINTS_MAX,
                .default_value = HTTP_DEFAULT_MAX_QUERY_POINTS,
                .help = "points one range query may return, its series times its points per series (more is 422)",
        },
        {
                .flag = "config",
                .short_flag = 'c',
                .arg = "FILE",
                .kind = SETTINGS_CONFIG,
                .default_help = NEUROND_CONFIG_FILE " if present",
                .help = "INI config file",
        },
        {
                .flag = "allow-root",
                .kind = SETTINGS_BOOL,
                FIELD(allow_root),
                .help = "run even as root (by default neurond refuses to)",
        },
        {
                .flag = "check-config",
                .kind = SETTINGS_ACTION,
                .action = SETTINGS_CHECK_CONFIG,
                .help = "validate settings, auth and TLS files and the backend, then exit",
        },
        {
                .flag = "list-instances",
                .kind = SETTINGS_ACTION,
                .action = SETTINGS_LIST_INSTANCES,
                .help = "print the device model's instance catalog and exit",
        },
        {
                .flag = "help",
                .short_flag = 'h',
                .kind = SETTINGS_ACTION,
                .action = SETTINGS_HELP,
                .help = "show this help and exit",
        },
        {
                .flag = "version",
                .short_flag = 'V',
                .kind = SETTINGS_ACTION,
                .action = SETTINGS_VERSION,
                .help = "show the version and exit",
        },
};

#define TABLE_SIZE (sizeof(settings_table) / sizeof(settings_table[0]))
const size_t settings_table_size = TABLE_SIZE;

#define ENDPOINT(name)                                                                                                 \
        .offset = offsetof(struct remote_endpoint, name), .size = sizeof(((struct remote_endpoint *) 0)->name)

const struct settings_item settings_remote_write_table[] = {
        {
                .key = "url",
                .arg = "URL",
                .kind = SETTINGS_TEXT,
                ENDPOINT(url),
                .help = "the receiver's remote write URL, http:// or https:// (required), such as "
                        "http://prometheus:9090/api/v1/write",
        },
        {
                .key = "remote_timeout",
                .arg = "DURATION",
                .kind = SETTINGS_DURATION,
                ENDPOINT(remote_timeout_ms),
                .min = 100,
                .max = 600 * 1000,
                .default_value = REMOTE_DEFAULT_TIMEOUT_MS,
                .help = "time one request may take, connecting included",
        },
        {
                .key = "tls_ca_file",
                .arg = "PATH",
                .kind = SETTINGS_TEXT,
                ENDPOINT(tls_ca_file),
                .default_help = "the system's CA certificates",
                .help = "PEM CA certificates to verify the receiver with",
        },
        {
                .key = "tls_cert_file",
                .arg = "PATH",
                .kind = SETTINGS_TEXT,
                ENDPOINT(tls_cert_file),
                .help = "PEM client certificate for the receiver; with tls_key_file",
        },
        {
                .key = "tls_key_file",
                .arg = "PATH",
                .kind = SETTINGS_TEXT,
                ENDPOINT(tls_key_file),
                .help = "PEM private key of tls_cert_file",
        },
        {
                .key = "tls_insecure_skip_verify",
                .arg = "BOOL",
                .kind = SETTINGS_BOOL,
                ENDPOINT(tls_insecure_skip_verify),
                .help = "do not verify the receiver's certificate (for tests; anyone on the path can read the data)",
        },
        {
                .key = "basic_auth_username",
                .arg = "NAME",
                .kind = SETTINGS_TEXT,
                ENDPOINT(basic_auth_username),
                .help = "user for HTTP basic authentication; with basic_auth_password_file",
        },
        {
                .key = "basic_auth_password_file",
                .arg = "PATH",
                .kind = SETTINGS_TEXT,
                ENDPOINT(basic_auth_password_file),
                .help = "file whose first line is the basic authentication password",
        },
        {
                .key = "bearer_token_file",
                .arg = "PATH",
                .kind = SETTINGS_TEXT,
                ENDPOINT(bearer_token_file),
                .help = "file whose first line is a token sent as Authorization: Bearer",
        },
        {
                .key = "external_labels",
                .arg = "LABELS",
                .kind = SETTINGS_LABELS,
                ENDPOINT(external_labels),
                .help = "labels for every series sent, such as instance=node7, ultraserver=\"us-1\" (a series' own "
                        "label of the same name wins)",
        },
        {
                .key = "max_samples_per_send",
                .arg = "N",
                .kind = SETTINGS_UINT,
                ENDPOINT(max_samples_per_send),
                .min = 1,
                .max = REMOTE_MAX_SAMPLES_PER_SEND_MAX,
                .default_value = REMOTE_DEFAULT_MAX_SAMPLES_PER_SEND,
                .help = "stored samples per request at most",
        },
        {
                .key = "batch_send_deadline",
                .arg = "DURATION",
                .kind = SETTINGS_DURATION,
                ENDPOINT(batch_send_deadline_ms),
                .min = 1,
                .max = 3600 * 1000,
                .default_value = REMOTE_DEFAULT_BATCH_SEND_DEADLINE_MS,
                .help = "longest a sample waits for a fuller request",
        },
        {
                .key = "min_backoff",
                .arg = "DURATION",
                .kind = SETTINGS_DURATION,
                ENDPOINT(min_backoff_ms),
                .min = 1,
                .max = 3600 * 1000,
                .default_value = REMOTE_DEFAULT_MIN_BACKOFF_MS,
                .help = "wait before the first retry of a failed request; it doubles with each retry",
        },
        {
                .key = "max_backoff",
                .arg = "DURATION",
                .kind = SETTINGS_DURATION,
                ENDPOINT(max_backoff_ms),
                .min = 1,
                .max = 3600 * 1000,
                .default_value = REMOTE_DEFAULT_MAX_BACKOFF_MS,
                .help = "longest wait between retries, a receiver's Retry-After included",
        },
        {
                .key = "sample_age_limit",
                .arg = "DURATION",
                .kind = SETTINGS_DURATION,
                ENDPOINT(sample_age_limit_ms),
                .default_help = "none",
                .help = "skip samples older than this behind the newest stored one, as a receiver would refuse "
                        "them (counted as failed)",
        },
};

#define REMOTE_WRITE_TABLE_SIZE (sizeof(settings_remote_write_table) / sizeof(settings_remote_write_table[0]))
const size_t settings_remote_write_table_size = REMOTE_WRITE_TABLE_SIZE;

int settings_parse_listen(const char *text, struct sockaddr_storage *ret_addr, socklen_t *ret_len) {
        /* No address (":PORT") is every address. */
        char host[INET6_ADDRSTRLEN + 2] = "[::]";
        const char *colon;
        struct sockaddr_storage ss = { 0 };
        socklen_t len;

        if (text[0] == '[') {
                const char *close = strchr(text, ']');
                if (!close || close[1] != ':')
                        return -EINVAL;
                colon = close + 1;
        } else {
                colon = strrchr(text, ':');
                if (!colon || memchr(text, ':', (size_t) (colon - text)))
                        return -EINVAL;
        }
        size_t host_len = (size_t) (colon - text);
        if (host_len >= sizeof(host))
                return -EINVAL;
        if (host_len > 0) {
                memcpy(host, text, host_len);
                host[host_len] = '\0';
        } else {
                host_len = strlen(host);
        }

        uint64_t port;
        if (parse_uint_range(colon + 1, 0, 65535, &port) < 0)
                return -EINVAL;

        if (host[0] == '[') {
                struct sockaddr_in6 *sin6 = (struct sockaddr_in6 *) &ss;
                host[host_len - 1] = '\0';
                if (inet_pton(AF_INET6, host + 1, &sin6->sin6_addr) != 1)
                        return -EINVAL;
                sin6->sin6_family = AF_INET6;
                sin6->sin6_port = htons((uint16_t) port);
                len = sizeof(*sin6);
        } else {
                struct sockaddr_in *sin = (struct sockaddr_in *) &ss;
                if (inet_pton(AF_INET, host, &sin->sin_addr) != 1)
                        return -EINVAL;
                sin->sin_family = AF_INET;
                sin->sin_port = htons((uint16_t) port);
                len = sizeof(*sin);
        }
        *ret_addr = ss;
        *ret_len = len;
        return 0;
}

/* The largest unit that writes ms exactly; days only from a week up, as
 * "48h" reads better than "2d". */
static void format_duration(uint64_t ms, char *out, size_t size) {
        static const struct {
                const char *unit;
                uint64_t ms;
        } units[] = { { "d", 86400000 }, { "h", 3600000 }, { "m", 60000 }, { "s", 1000 } };

        for (size_t i = 0; i < sizeof(units) / sizeof(units[0]); i++)
                if (ms > 0 && ms % units[i].ms == 0 && (units[i].ms < 86400000 || ms >= 7 * units[i].ms)) {
                        snprintf(out, size, "%" PRIu64 "%s", ms / units[i].ms, units[i].unit);
                        return;
                }
        snprintf(out, size, "%" PRIu64 "ms", ms);
}

static void format_size(uint64_t bytes, char *out, size_t size) {
        static const char units[] = "TGMK";

        for (int i = 0; units[i]; i++) {
                uint64_t unit = 1ULL << (10 * (4 - i));
                if (bytes > 0 && bytes % unit == 0) {
                        snprintf(out, size, "%" PRIu64 "%c", bytes / unit, units[i]);
                        return;
                }
        }
        snprintf(out, size, "%" PRIu64, bytes);
}

/* "100ms to 1h" for a row with a range, "" for one without. */
static void format_range(const struct settings_item *it, char *out, size_t size) {
        char min[32], max[32];

        if (it->max == 0) {
                out[0] = '\0';
        } else if (it->kind == SETTINGS_DURATION) {
                format_duration(it->min, min, sizeof(min));
                format_duration(it->max, max, sizeof(max));
                snprintf(out, size, "%s to %s", min, max);
        } else {
                snprintf(out, size, "%" PRIu64 " to %" PRIu64, it->min, it->max);
        }
}

/* The row's field in base: a struct settings, or a struct remote_endpoint
 * for the rows of settings_remote_write_table. */
static void *field(const struct settings_item *it, void *base) {
        return (char *) base + it->offset;
}

/* Parses text as the row's value into s. Returns 0, or -EINVAL with the
 * reason (without the key or flag) in why. */
static int item_parse(const struct settings_item *it, const char *text, void *base, char *why, size_t whylen) {
        void *p = field(it, base);
        char range[80];
        int64_t ms;

        format_range(it, range, sizeof(range));
        switch (it->kind) {
        case SETTINGS_TEXT:
                if (!*text || strlen(text) >= it->size) {
                        snprintf(why, whylen, "'%s' is empty or longer than %zu bytes", text, it->size - 1);
                        return -EINVAL;
                }
                memcpy(p, text, strlen(text) + 1);
                break;
        case SETTINGS_LISTEN: {
                struct settings_address *a = p;
                if (strlen(text) >= sizeof(a->text) || settings_parse_listen(text, &a->addr, &a->len) < 0) {
                        snprintf(why, whylen, "'%s' is not ADDR:PORT or [ADDR]:PORT with a numeric address", text);
                        return -EINVAL;
                }
                memcpy(a->text, text, strlen(text) + 1);
                break;
        }
        case SETTINGS_DURATION:
                if (parse_duration_ms(text, &ms) < 0 || ms <= 0 ||
                    (it->max && (ms < (int64_t) it->min || ms > (int64_t) it->max))) {
                        if (it->max)
                                snprintf(why, whylen, "'%s' is not a duration from %s, such as 500ms, 10s or 1m", text,
                                         range);
                        else
                                snprintf(why, whylen, "'%s' is not a positive duration such as 48h or 30d", text);
                        return -EINVAL;
                }
                *(int64_t *) p = ms;
                break;
        case SETTINGS_UINT:
                if (parse_uint_range(text, it->min, it->max, p) < 0) {
                        snprintf(why, whylen, "'%s' is not a number from %s", text, range);
                        return -EINVAL;
                }
                break;
        case SETTINGS_SIZE:
                if (parse_size_bytes(text, p) < 0) {
                        snprintf(why, whylen, "'%s' is not a size such as 512M or 1G", text);
                        return -EINVAL;
                }
                break;
        case SETTINGS_BOOL:
                if (parse_bool(text, p) < 0) {
                        snprintf(why, whylen, "'%s' is not true or false", text);
                        return -EINVAL;
                }
                break;
        case SETTINGS_LOG_LEVEL:
                if (log_level_parse(text, p) < 0) {
                        snprintf(why, whylen, "'%s' is not error, warning, info or debug", text);
                        return -EINVAL;
                }
                break;
        case SETTINGS_LABELS:
                if (remote_parse_labels(text, p, why, whylen) < 0)
                        return -EINVAL;
                break;
        case SETTINGS_CONFIG:
        case SETTINGS_ACTION:
                snprintf(why, whylen, "takes no value");
                return -EINVAL;
        }
        return 0;
}

static void settings_defaults(struct settings *s) {
        const char *state_dir = getenv("STATE_DIRECTORY");
        char why[256];

        *s = (struct settings){ 0 };
        for (size_t i = 0; i < TABLE_SIZE; i++) {
                const struct settings_item *it = &settings_table[i];
                switch (it->kind) {
                case SETTINGS_TEXT:
                case SETTINGS_LISTEN:
                case SETTINGS_LOG_LEVEL:
                        /* The table's defaults parse; the unit test checks it. */
                        if (it->default_text && *it->default_text)
                                item_parse(it, it->default_text, s, why, sizeof(why));
                        break;
                case SETTINGS_DURATION:
                        *(int64_t *) field(it, s) = (int64_t) it->default_value;
                        break;
                case SETTINGS_UINT:
                case SETTINGS_SIZE:
                        *(uint64_t *) field(it, s) = it->default_value;
                        break;
                case SETTINGS_BOOL:
                        *(bool *) field(it, s) = it->default_value != 0;
                        break;
                case SETTINGS_LABELS:
                case SETTINGS_CONFIG:
                case SETTINGS_ACTION:
                        break;
                }
        }
        /* Under systemd's StateDirectory= the database goes where it says. */
        if (state_dir && *state_dir && strlen(state_dir) < sizeof(s->db_path) - 12)
                snprintf(s->db_path, sizeof(s->db_path), "%s/neurond.db", state_dir);
}

static const struct settings_item *find_key(const char *key) {
        for (size_t i = 0; i < TABLE_SIZE; i++)
                if (settings_table[i].key && strcmp(settings_table[i].key, key) == 0)
                        return &settings_table[i];
        return NULL;
}

struct ini_state {
        struct settings *settings;
        char why[512];
        int error;
};

/* The endpoint of a [remote_write NAME] section, added at its first key;
 * NULL with the reason in why. A section may not come back after another. */
static struct remote_endpoint *remote_write_section(struct settings *s, const char *name, char *why, size_t whylen) {
        size_t len = strlen(name);

        if (len == 0 || len >= CURSOR_NAME_MAX ||
            strspn(name, "abcdefghijklmnopqrstuvwxyz"
                         "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-.") != len) {
                snprintf(why, whylen,
                         "[%s %s]: the name must be 1 to %d letters, digits, '_', '-' or '.', such as "
                         "[%s central]",
                         SETTINGS_REMOTE_WRITE_SECTION, name, CURSOR_NAME_MAX - 1, SETTINGS_REMOTE_WRITE_SECTION);
                return NULL;
        }
        for (size_t i = 0; i < s->n_remote_write; i++)
                if (strcmp(s->remote_write[i].name, name) == 0) {
                        if (i + 1 == s->n_remote_write)
                                return &s->remote_write[i];
                        snprintf(why, whylen, "[%s %s] is given twice", SETTINGS_REMOTE_WRITE_SECTION, name);
                        return NULL;
                }
        struct remote_endpoint *grown = realloc(s->remote_write, (s->n_remote_write + 1) * sizeof(*grown));
        if (!grown) {
                snprintf(why, whylen, "out of memory");
                return NULL;
        }
        s->remote_write = grown;
        struct remote_endpoint *e = &s->remote_write[s->n_remote_write++];
        /* Zeroed whole, padding included: a reload compares endpoints bytewise. */
        memset(e, 0, sizeof(*e));
        remote_endpoint_init(e, name);
        return e;
}

static const struct settings_item *find_remote_write_key(const char *key) {
        for (size_t i = 0; i < REMOTE_WRITE_TABLE_SIZE; i++)
                if (strcmp(settings_remote_write_table[i].key, key) == 0)
                        return &settings_remote_write_table[i];
        return NULL;
}

/* A key of a [remote_write NAME] section; 1 as inih wants it, or 0. */
static int on_remote_write_value(struct ini_state *st, const char *section, const char *name, const char *value) {
        const char *endpoint = section + strlen(SETTINGS_REMOTE_WRITE_SECTION) + 1;
        const struct settings_item *it = find_remote_write_key(name);
        char why[480];

        struct remote_endpoint *e = remote_write_section(st->settings, endpoint, why, sizeof(why));
        if (!e)
                snprintf(st->why, sizeof(st->why), "%s", why);
        else if (!it)
                snprintf(st->why, sizeof(st->why), "unknown setting '%s' in [%s]", name, section);
        else if (item_parse(it, value, e, why, sizeof(why)) < 0)
                snprintf(st->why, sizeof(st->why), "%s: %s", name, why);
        else
                return 1;
        st->error = -EINVAL;
        return 0;
}

/* inih stops at the first line whose handler returns 0 and returns that
 * line's number, which the caller puts in front of the reason. */
static int on_ini_value(void *user, const char *section, const char *name, const char *value) {
        struct ini_state *st = user;
        const struct settings_item *it = find_key(name);
        char why[480];

        if (strncmp(section, SETTINGS_REMOTE_WRITE_SECTION " ", strlen(SETTINGS_REMOTE_WRITE_SECTION) + 1) == 0)
                return on_remote_write_value(st, section, name, value);
        if (section[0] && strcmp(section, "neurond") != 0) {
                snprintf(st->why, sizeof(st->why),
                         "unknown section [%s] (expected [neurond] or [" SETTINGS_REMOTE_WRITE_SECTION " NAME])",
                         section);
        } else if (!it) {
                snprintf(st->why, sizeof(st->why), "unknown setting '%s'", name);
        } else if (item_parse(it, value, st->settings, why, sizeof(why)) < 0) {
                snprintf(st->why, sizeof(st->why), "%s: %s", name, why);
        } else {
                return 1;
        }
        st->error = -EINVAL;
        return 0;
}

/* Refuses what inih would misread: a line longer than its line buffer,
 * which it splits without a word (the rest read as a line of its own), and
 * control bytes, which no config file holds (a binary file, a device).
 * Returns 0, or -EINVAL with the line named in err. */
static int check_config_text(const char *path, const char *text, char *err, size_t errlen) {
        const char *line = text;

        for (int lineno = 1;; lineno++) {
                size_t span = strcspn(line, "\n"), len = span;
                bool end = line[span] == '\0';
                /* A CRLF line's '\r' is part of its end. */
                if (!end && len > 0 && line[len - 1] == '\r')
                        len--;
                if (len > CONFIG_LINE_MAX) {
                        snprintf(err, errlen, "%s:%d: the line is longer than %d bytes", path, lineno, CONFIG_LINE_MAX);
                        return -EINVAL;
                }
                for (size_t i = 0; i < len; i++) {
                        unsigned char c = (unsigned char) line[i];
                        if ((c < 0x20 && c != '\t') || c == 0x7f) {
                                snprintf(err, errlen, "%s:%d: a control byte (0x%02x): not a text file", path, lineno,
                                         c);
                                return -EINVAL;
                        }
                }
                if (end)
                        return 0;
                line += span + 1;
        }
}

static int load_config_file(struct settings *s, const char *path, char *err, size_t errlen) {
        struct ini_state st = { .settings = s };
        char why[128];
        char *text = NULL;
        size_t len;

        int r = file_read_text(path, CONFIG_FILE_MAX, &text, &len, why, sizeof(why));
        if (r < 0) {
                snprintf(err, errlen, "config file %s: %s", path, why);
                return -EINVAL;
        }
        r = check_config_text(path, text, err, errlen);
        if (r == 0) {
                int line = ini_parse_string(text, on_ini_value, &st);
                if (line != 0) {
                        snprintf(err, errlen, "%s:%d: %s", path, line,
                                 st.error ? st.why : "not a valid INI line (expected key = value)");
                        r = -EINVAL;
                }
        }
        free(text);
        for (size_t i = 0; r == 0 && i < s->n_remote_write; i++)
                if (!s->remote_write[i].url[0]) {
                        snprintf(err, errlen, "%s: [%s %s] has no url", path, SETTINGS_REMOTE_WRITE_SECTION,
                                 s->remote_write[i].name);
                        r = -EINVAL;
                }
        if (r == 0)
                snprintf(s->config_path, sizeof(s->config_path), "%s", path);
        return r;
}

static bool takes_value(const struct settings_item *it) {
        return it->kind != SETTINGS_BOOL && it->kind != SETTINGS_ACTION;
}

/* The row getopt_long() returned opt for: its short flag, or 256 + its
 * index for a row with a long flag only. */
static const struct settings_item *find_option(int opt) {
        if (opt >= 256)
                return &settings_table[opt - 256];
        for (size_t i = 0; i < TABLE_SIZE; i++)
                if (settings_table[i].short_flag == opt)
                        return &settings_table[i];
        return NULL;
}

/* One pass of getopt_long() over argv. The first pass (s NULL) finds
 * errors, the action and the config file; the second applies the flags'
 * values over the config file's. Returns the action, or -EINVAL. */
static int scan_flags(int argc, char **argv, struct settings *s, const char **ret_config, char *err, size_t errlen) {
        struct option options[TABLE_SIZE + 1] = { 0 };
        char optstring[2 * TABLE_SIZE + 2] = ":";
        int action = SETTINGS_RUN;
        size_t n = 1, n_options = 0;
        int opt;

        for (size_t i = 0; i < TABLE_SIZE; i++) {
                const struct settings_item *it = &settings_table[i];
                if (!it->flag)
                        continue;
                options[n_options++] = (struct option){ it->flag, takes_value(it) ? required_argument : no_argument,
                                                        NULL, it->short_flag ? it->short_flag : 256 + (int) i };
                if (it->short_flag) {
                        optstring[n++] = it->short_flag;
                        if (takes_value(it))
                                optstring[n++] = ':';
                }
        }
        optstring[n] = '\0';

        opterr = 0;
        optind = 0; /* glibc: start over, also after a scan that stopped early */
        while ((opt = getopt_long(argc, argv, optstring, options, NULL)) != -1) {
                char why[480];

                if (opt == ':') {
                        snprintf(err, errlen, "option '%s' needs a value", argv[optind - 1]);
                        return -EINVAL;
                }
                const struct settings_item *it = find_option(opt);
                if (!it) {
                        snprintf(err, errlen, "unknown option '%s' (see --help)", argv[optind - 1]);
                        return -EINVAL;
                }
                switch (it->kind) {
                case SETTINGS_ACTION:
                        /* --help and --version answer whatever follows. */
                        if (it->action == SETTINGS_HELP || it->action == SETTINGS_VERSION)
                                return it->action;
                        action = it->action;
                        break;
                case SETTINGS_CONFIG:
                        *ret_config = optarg;
                        break;
                default:
                        if (s && item_parse(it, takes_value(it) ? optarg : "true", s, why, sizeof(why)) < 0) {
                                snprintf(err, errlen, "option --%s: %s", it->flag, why);
                                return -EINVAL;
                        }
                }
        }
        if (optind < argc) {
                snprintf(err, errlen, "unexpected argument '%s' (see --help)", argv[optind]);
                return -EINVAL;
        }
        return action;
}

int settings_load(int argc, char **argv, struct settings *ret, char *err, size_t errlen) {
        const char *config_path = NULL;
        struct settings s;

        settings_defaults(&s);
        int action = scan_flags(argc, argv, NULL, &config_path, err, errlen);
        if (action < 0 || action == SETTINGS_HELP || action == SETTINGS_VERSION)
                return action;
        int r = 0;
        if (config_path)
                r = load_config_file(&s, config_path, err, errlen);
        else if (access(NEUROND_CONFIG_FILE, F_OK) == 0)
                r = load_config_file(&s, NEUROND_CONFIG_FILE, err, errlen);
        if (r == 0)
                r = scan_flags(argc, argv, &s, &config_path, err, errlen);
        if (r >= 0 && !s.tls_cert[0] != !s.tls_key[0]) {
                snprintf(err, errlen, "tls_cert and tls_key must be given together");
                r = -EINVAL;
        }
        if (r < 0) {
                settings_free(&s);
                return -EINVAL;
        }
        *ret = s;
        return action;
}

void settings_free(struct settings *s) {
        free(s->remote_write);
        s->remote_write = NULL;
        s->n_remote_write = 0;
}

static bool item_equal(const struct settings_item *it, const void *a, const void *b) {
        const void *x = (const char *) a + it->offset, *y = (const char *) b + it->offset;

        switch (it->kind) {
        case SETTINGS_TEXT:
                return strcmp(x, y) == 0;
        case SETTINGS_LISTEN:
                return strcmp(((const struct settings_address *) x)->text,
                              ((const struct settings_address *) y)->text) == 0;
        default:
                return memcmp(x, y, it->size) == 0;
        }
}

void settings_reload(struct settings *running, const struct settings *loaded, char *changed, size_t size) {
        size_t len = 0;

        changed[0] = '\0';
        for (size_t i = 0; i < TABLE_SIZE; i++) {
                const struct settings_item *it = &settings_table[i];
                if (it->size == 0 || item_equal(it, running, loaded))
                        continue;
                if (it->reload) {
                        memcpy((char *) running + it->offset, (const char *) loaded + it->offset, it->size);
                } else if (len < size) {
                        int w = snprintf(changed + len, size - len, "%s%s", len ? ", " : "",
                                         it->key ? it->key : it->flag);
                        len += w > 0 ? (size_t) w : 0;
                }
        }
        bool same = running->n_remote_write == loaded->n_remote_write;
        for (size_t i = 0; same && i < running->n_remote_write; i++) {
                same = strcmp(running->remote_write[i].name, loaded->remote_write[i].name) == 0;
                for (size_t k = 0; same && k < REMOTE_WRITE_TABLE_SIZE; k++)
                        same = item_equal(&settings_remote_write_table[k], &running->remote_write[i],
                                          &loaded->remote_write[i]);
        }
        if (!same && len < size)
                snprintf(changed + len, size - len, "%s%s", len ? ", " : "", "remote_write");
        memcpy(running->config_path, loaded->config_path, sizeof(running->config_path));
}

/* Prints "left  text", text wrapped to 80 columns at column col. */
static void print_entry(FILE *out, const char *left, int col, const char *text) {
        int at = fprintf(out, "%s", left);

        while (*text) {
                size_t word = strcspn(text, " ");
                if (at >= col && at + 1 + (int) word > 80) {
                        fputc('\n', out);
                        at = 0;
                }
                if (at < col) {
                        at += fprintf(out, "%*s", col - at, "");
                } else {
                        fputc(' ', out);
                        at++;
                }
                at += fprintf(out, "%.*s", (int) word, text);
                text += word;
                text += strspn(text, " ");
        }
        fputc('\n', out);
}

/* The row's help with its range and default: "time between polls, 100ms
 * to 1h (default 1s)". */
static void describe(const struct settings_item *it, char *out, size_t size) {
        char range[80], def[PATH_MAX + 16] = "";

        format_range(it, range, sizeof(range));
        if (it->default_help) {
                snprintf(def, sizeof(def), "%s", it->default_help);
        } else if (it->default_text) {
                snprintf(def, sizeof(def), "%s", it->default_text);
        } else if (it->kind == SETTINGS_DURATION) {
                format_duration(it->default_value, def, sizeof(def));
        } else if (it->kind == SETTINGS_SIZE) {
                format_size(it->default_value, def, sizeof(def));
        } else if (it->kind == SETTINGS_UINT) {
                snprintf(def, sizeof(def), "%" PRIu64, it->default_value);
        } else if (it->kind == SETTINGS_BOOL && !it->flag) { /* a flag of its own is off unless given */
                snprintf(def, sizeof(def), "%s", it->default_value ? "true" : "false");
        }
        snprintf(out, size, "%s%s%s%s%s%s", it->help, range[0] ? ", " : "", range, def[0] ? " (default " : "", def,
                 def[0] ? ")" : "");
}

void settings_print_help(FILE *out, const char *argv0) {
        char left[128], text[PATH_MAX + 512];

        fprintf(out,
                "Usage: %s [OPTION]...\n"
                "Collect AWS Neuron accelerator telemetry, store it and serve it over HTTP.\n"
                "\n",
                argv0);
        for (size_t i = 0; i < TABLE_SIZE; i++) {
                const struct settings_item *it = &settings_table[i];
                if (!it->flag)
                        continue;
                snprintf(left, sizeof(left), "  %c%c%c --%s%s%s", it->short_flag ? '-' : ' ',
                         it->short_flag ? it->short_flag : ' ', it->short_flag ? ',' : ' ', it->flag,
                         takes_value(it) ? " " : "", takes_value(it) ? it->arg : "");
                describe(it, text, sizeof(text));
                print_entry(out, left, 27, text);
        }
        fprintf(out, "\n"
                     "Config file keys, in an optional [neurond] section; flags override them.\n"
                     "Keys marked * apply at once on a reload (SIGHUP), the others at the next start.\n");
        for (size_t i = 0; i < TABLE_SIZE; i++) {
                const struct settings_item *it = &settings_table[i];
                if (!it->key)
                        continue;
                snprintf(left, sizeof(left), "  %c %s = %s", it->reload ? '*' : ' ', it->key, it->arg);
                if (it->flag)
                        snprintf(text, sizeof(text), "as --%s", it->flag);
                else
                        describe(it, text, sizeof(text));
                print_entry(out, left, 35, text);
        }
        fprintf(out, "\n"
                     "Remote write: any number of [" SETTINGS_REMOTE_WRITE_SECTION " NAME] sections, one per\n"
                     "endpoint, with these keys (the name labels the endpoint's metrics and keys\n"
                     "its saved position); they apply at the next start.\n");
        for (size_t i = 0; i < REMOTE_WRITE_TABLE_SIZE; i++) {
                const struct settings_item *it = &settings_remote_write_table[i];
                snprintf(left, sizeof(left), "    %s = %s", it->key, it->arg);
                describe(it, text, sizeof(text));
                print_entry(out, left, 35, text);
        }
        fprintf(out, "\n"
                     "Exit status: 0 on success or clean shutdown, 1 on a runtime failure,\n"
                     "2 on invalid flags or configuration.\n");
}
