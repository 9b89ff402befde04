#include "config.h"

#include <arpa/inet.h>
#include <errno.h>
#include <getopt.h>
#include <ini.h>
#include <netinet/in.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "daemon/settings.h"
#include "lib/parse.h"

int settings_parse_listen(const char *text, struct sockaddr_storage *ret_addr, socklen_t *ret_len) {
        char host[INET6_ADDRSTRLEN + 2];
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
        if (host_len == 0 || host_len >= sizeof(host))
                return -EINVAL;
        memcpy(host, text, host_len);
        host[host_len] = '\0';

        const char *port_text = colon + 1;
        if (!*port_text || strlen(port_text) > 5 || strspn(port_text, "0123456789") != strlen(port_text))
                return -EINVAL;
        long port = strtol(port_text, NULL, 10);
        if (port > 65535)
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

static int copy_path(char *dst, size_t size, const char *value) {
        if (!*value || strlen(value) >= size)
                return -EINVAL;
        memcpy(dst, value, strlen(value) + 1);
        return 0;
}

/* The HTTP server's keys; -ENOENT when key is not one of them. */
static int settings_apply_http(struct settings *s, const char *key, const char *value, char *err, size_t errlen) {
        static const struct {
                const char *key;
                size_t offset, size;
        } paths[] = {
                { "tls_cert", offsetof(struct settings, tls_cert), sizeof(s->tls_cert) },
                { "tls_key", offsetof(struct settings, tls_key), sizeof(s->tls_key) },
                { "basic_auth_users", offsetof(struct settings, basic_auth_users), sizeof(s->basic_auth_users) },
                { "bearer_token_file", offsetof(struct settings, bearer_token_file), sizeof(s->bearer_token_file) },
                { "cors_origin", offsetof(struct settings, cors_origin), sizeof(s->cors_origin) },
        };
        uint64_t v;

        for (size_t i = 0; i < sizeof(paths) / sizeof(paths[0]); i++)
                if (strcmp(key, paths[i].key) == 0) {
                        if (copy_path((char *) s + paths[i].offset, paths[i].size, value) < 0) {
                                snprintf(err, errlen, "%s: value is empty or too long", key);
                                return -EINVAL;
                        }
                        return 0;
                }
        if (strcmp(key, "healthz_open") == 0) {
                if (parse_bool(value, &s->healthz_open) < 0) {
                        snprintf(err, errlen, "healthz_open: '%s' is not true or false", value);
                        return -EINVAL;
                }
        } else if (strcmp(key, "max_connections") == 0) {
                if (parse_uint_range(value, 16, 65536, &v) < 0) {
                        snprintf(err, errlen, "max_connections: '%s' is not a number from 16 to 65536", value);
                        return -EINVAL;
                }
                s->max_connections = (unsigned) v;
        } else if (strcmp(key, "connection_timeout") == 0) {
                int64_t ms;
                if (parse_duration_ms(value, &ms) < 0 || ms < 1000 || ms > 3600 * 1000) {
                        snprintf(err, errlen, "connection_timeout: '%s' is not a duration from 1s to 1h", value);
                        return -EINVAL;
                }
                s->connection_timeout_s = (unsigned) (ms / 1000);
        } else if (strcmp(key, "max_header_bytes") == 0) {
                if (parse_uint_range(value, 1024, 1048576, &v) < 0) {
                        snprintf(err, errlen, "max_header_bytes: '%s' is not a number from 1024 to 1048576", value);
                        return -EINVAL;
                }
                s->max_header_bytes = v;
        } else {
                return -ENOENT;
        }
        return 0;
}

static int parse_retention(const char *key, const char *value, int64_t *ret, char *err, size_t errlen) {
        if (parse_duration_ms(value, ret) < 0 || *ret <= 0) {
                snprintf(err, errlen, "%s: '%s' is not a positive duration such as 48h or 30d", key, value);
                return -EINVAL;
        }
        return 0;
}

/* Applies one setting by its config-file key; the flags use the same keys. */
static int settings_apply(struct settings *s, const char *key, const char *value, char *err, size_t errlen) {
        if (strcmp(key, "listen") == 0) {
                if (strlen(value) >= sizeof(s->listen) ||
                    settings_parse_listen(value, &s->listen_addr, &s->listen_addr_len) < 0) {
                        snprintf(err, errlen, "listen: '%s' is not ADDR:PORT or [ADDR]:PORT with a numeric address",
                                 value);
                        return -EINVAL;
                }
                memcpy(s->listen, value, strlen(value) + 1);
        } else if (strcmp(key, "interval") == 0) {
                int64_t ms;
                if (parse_duration_ms(value, &ms) < 0) {
                        snprintf(err, errlen, "interval: '%s' is not a duration such as 500ms, 10s or 1m", value);
                        return -EINVAL;
                }
                if (ms < SETTINGS_INTERVAL_MIN_MS || ms > SETTINGS_INTERVAL_MAX_MS) {
                        snprintf(err, errlen, "interval: '%s' is outside 100ms to 1h", value);
                        return -EINVAL;
                }
                s->interval_ms = ms;
        } else if (strcmp(key, "db") == 0) {
                if (copy_path(s->db_path, sizeof(s->db_path), value) < 0) {
                        snprintf(err, errlen, "db: path is empty or too long");
                        return -EINVAL;
                }
        } else if (strcmp(key, "backend") == 0) {
                if (copy_path(s->backend, sizeof(s->backend), value) < 0) {
                        snprintf(err, errlen, "backend: spec is empty or too long");
                        return -EINVAL;
                }
        } else if (strcmp(key, "web_root") == 0) {
                if (copy_path(s->web_root, sizeof(s->web_root), value) < 0) {
                        snprintf(err, errlen, "web_root: path is empty or too long");
                        return -EINVAL;
                }
        } else if (strcmp(key, "log_level") == 0) {
                if (log_level_parse(value, &s->log_level) < 0) {
                        snprintf(err, errlen, "log_level: '%s' is not error, warning, info or debug", value);
                        return -EINVAL;
                }
        } else if (strcmp(key, "admin") == 0) {
                if (parse_bool(value, &s->admin) < 0) {
                        snprintf(err, errlen, "admin: '%s' is not true or false", value);
                        return -EINVAL;
                }
        } else if (strcmp(key, "retention_raw") == 0) {
                return parse_retention(key, value, &s->retention_raw_ms, err, errlen);
        } else if (strcmp(key, "retention_1m") == 0) {
                return parse_retention(key, value, &s->retention_minute_ms, err, errlen);
        } else if (strcmp(key, "retention_1h") == 0) {
                return parse_retention(key, value, &s->retention_hour_ms, err, errlen);
        } else if (strcmp(key, "max_db_size") == 0) {
                if (parse_size_bytes(value, &s->max_db_bytes) < 0) {
                        snprintf(err, errlen, "max_db_size: '%s' is not a size such as 512M or 1G (0: no cap)", value);
                        return -EINVAL;
                }
        } else {
                int r = settings_apply_http(s, key, value, err, errlen);
                if (r == -ENOENT)
                        snprintf(err, errlen, "unknown setting '%s'", key);
                if (r < 0)
                        return -EINVAL;
        }
        return 0;
}

struct ini_state {
        struct settings *settings;
        char why[512];
        int error;
};

/* inih stops at the first line whose handler returns 0 and returns that
 * line's number, which the caller puts in front of the reason. */
static int on_ini_value(void *user, const char *section, const char *name, const char *value) {
        struct ini_state *st = user;

        if (section[0] && strcmp(section, "neurond") != 0) {
                snprintf(st->why, sizeof(st->why), "unknown section [%s] (expected [neurond])", section);
                st->error = -EINVAL;
                return 0;
        }
        if (settings_apply(st->settings, name, value, st->why, sizeof(st->why)) < 0) {
                st->error = -EINVAL;
                return 0;
        }
        return 1;
}

static int load_config_file(struct settings *s, const char *path, char *err, size_t errlen) {
        FILE *f = fopen(path, "re");
        if (!f) {
                snprintf(err, errlen, "config file %s: %s", path, strerror(errno));
                return -EINVAL;
        }
        struct ini_state st = { .settings = s };
        int line = ini_parse_file(f, on_ini_value, &st);
        fclose(f);
        if (line != 0) {
                snprintf(err, errlen, "%s:%d: %s", path, line,
                         st.error ? st.why : "not a valid INI line (expected key = value)");
                return -EINVAL;
        }
        snprintf(s->config_path, sizeof(s->config_path), "%s", path);
        return 0;
}

static void settings_defaults(struct settings *s) {
        const char *state_dir = getenv("STATE_DIRECTORY");

        *s = (struct settings){
                .interval_ms = SETTINGS_DEFAULT_INTERVAL_MS,
                .log_level = LOG_LEVEL_INFO,
                .retention_raw_ms = 48LL * 3600 * 1000,
                .retention_minute_ms = 30LL * 24 * 3600 * 1000,
                .retention_hour_ms = 365LL * 24 * 3600 * 1000,
                .max_db_bytes = 1ULL << 30,
        };
        settings_parse_listen(SETTINGS_DEFAULT_LISTEN, &s->listen_addr, &s->listen_addr_len);
        snprintf(s->listen, sizeof(s->listen), "%s", SETTINGS_DEFAULT_LISTEN);
        /* Under systemd's StateDirectory= the database goes where it says. */
        if (state_dir && *state_dir && strlen(state_dir) < sizeof(s->db_path) - 12)
                snprintf(s->db_path, sizeof(s->db_path), "%s/neurond.db", state_dir);
        else
                snprintf(s->db_path, sizeof(s->db_path), "%s", NEUROND_STATE_DIR "/neurond.db");
        snprintf(s->backend, sizeof(s->backend), "auto");
        snprintf(s->web_root, sizeof(s->web_root), "%s", NEUROND_WEB_ROOT);
}

void settings_print_help(const char *argv0) {
        printf("Usage: %s [OPTION]...\n"
               "Collect AWS Neuron accelerator telemetry, store it and serve it over HTTP.\n"
               "\n"
               "  -l, --listen ADDR:PORT   address to serve HTTP on (default " SETTINGS_DEFAULT_LISTEN ";\n"
               "                           port 0 picks a free port and logs it)\n"
               "  -d, --db PATH            SQLite database (default $STATE_DIRECTORY/neurond.db,\n"
               "                           else " NEUROND_STATE_DIR "/neurond.db)\n"
               "  -b, --backend SPEC       model:<instance>[,scenario=<name>][,seed=<n>][,speed=<x>]\n"
               "                           sysfs[:<root>] (<root> is where sysfs is mounted,\n"
               "                           default /sys), or auto (default auto)\n"
               "  -i, --interval DURATION  time between polls, 100ms to 1h (default 1s)\n"
               "  -c, --config FILE        INI config file (default " NEUROND_CONFIG_FILE " if present)\n"
               "  -w, --web-root DIR       dashboard files (default " NEUROND_WEB_ROOT ")\n"
               "      --log-level LEVEL    error, warning, info or debug (default info)\n"
               "      --allow-root         run even as root (by default neurond refuses to)\n"
               "      --check-config       validate settings, auth and TLS files and the backend, then exit\n"
               "      --list-instances     print the device model's instance catalog and exit\n"
               "      --enable-admin       serve the model's fault endpoint /api/v1/admin/faults\n"
               "                           to loopback clients (config: admin = true)\n"
               "  -h, --help               show this help and exit\n"
               "  -V, --version            show the version and exit\n"
               "\n"
               "Exit status: 0 on success or clean shutdown, 1 on a runtime failure,\n"
               "2 on invalid flags or configuration.\n",
               argv0);
}

/* The long name of the option getopt_long() returned as val. */
static const char *long_option_name(const struct option *options, int val) {
        for (; options->name; options++)
                if (options->val == val)
                        return options->name;
        return "?";
}

int settings_load(int argc, char **argv, struct settings *ret, char *err, size_t errlen) {
        enum { OPT_CHECK_CONFIG = 256, OPT_LIST_INSTANCES, OPT_LOG_LEVEL, OPT_ENABLE_ADMIN, OPT_ALLOW_ROOT };
        static const struct option options[] = {
                { "listen", required_argument, NULL, 'l' },
                { "db", required_argument, NULL, 'd' },
                { "backend", required_argument, NULL, 'b' },
                { "interval", required_argument, NULL, 'i' },
                { "config", required_argument, NULL, 'c' },
                { "web-root", required_argument, NULL, 'w' },
                { "log-level", required_argument, NULL, OPT_LOG_LEVEL },
                { "check-config", no_argument, NULL, OPT_CHECK_CONFIG },
                { "list-instances", no_argument, NULL, OPT_LIST_INSTANCES },
                { "enable-admin", no_argument, NULL, OPT_ENABLE_ADMIN },
                { "allow-root", no_argument, NULL, OPT_ALLOW_ROOT },
                { "help", no_argument, NULL, 'h' },
                { "version", no_argument, NULL, 'V' },
                {},
        };
        /* Flags are collected first and applied after the config file. */
        struct {
                const char *flag, *key, *value;
        } flags[16];
        size_t n_flags = 0;
        const char *config_path = NULL;
        int action = SETTINGS_RUN;
        bool allow_root = false;
        struct settings s;
        int opt;

        settings_defaults(&s);
        opterr = 0;
        optind = 1;
        while ((opt = getopt_long(argc, argv, ":l:d:b:i:c:w:hV", options, NULL)) != -1) {
                const char *key = NULL;
                switch (opt) {
                case 'l':
                        key = "listen";
                        break;
                case 'd':
                        key = "db";
                        break;
                case 'b':
                        key = "backend";
                        break;
                case 'i':
                        key = "interval";
                        break;
                case 'w':
                        key = "web_root";
                        break;
                case OPT_LOG_LEVEL:
                        key = "log_level";
                        break;
                case OPT_ENABLE_ADMIN:
                        key = "admin";
                        break;
                case 'c':
                        config_path = optarg;
                        break;
                case OPT_CHECK_CONFIG:
                        action = SETTINGS_CHECK_CONFIG;
                        break;
                case OPT_LIST_INSTANCES:
                        action = SETTINGS_LIST_INSTANCES;
                        break;
                case OPT_ALLOW_ROOT:
                        allow_root = true;
                        break;
                case 'h':
                        return SETTINGS_HELP;
                case 'V':
                        return SETTINGS_VERSION;
                case ':':
                        snprintf(err, errlen, "option '%s' needs a value", argv[optind - 1]);
                        return -EINVAL;
                default:
                        snprintf(err, errlen, "unknown option '%s' (see --help)", argv[optind - 1]);
                        return -EINVAL;
                }
                if (key) {
                        if (n_flags == sizeof(flags) / sizeof(flags[0])) {
                                snprintf(err, errlen, "too many options");
                                return -EINVAL;
                        }
                        flags[n_flags].flag = long_option_name(options, opt);
                        flags[n_flags].key = key;
                        flags[n_flags++].value = opt == OPT_ENABLE_ADMIN ? "true" : optarg;
                }
        }
        if (optind < argc) {
                snprintf(err, errlen, "unexpected argument '%s' (see --help)", argv[optind]);
                return -EINVAL;
        }

        if (config_path) {
                if (load_config_file(&s, config_path, err, errlen) < 0)
                        return -EINVAL;
        } else if (access(NEUROND_CONFIG_FILE, F_OK) == 0) {
                if (load_config_file(&s, NEUROND_CONFIG_FILE, err, errlen) < 0)
                        return -EINVAL;
        }
        for (size_t i = 0; i < n_flags; i++) {
                char why[512];
                if (settings_apply(&s, flags[i].key, flags[i].value, why, sizeof(why)) < 0) {
                        /* why starts with the config key ("interval: ..."): name the flag instead. */
                        const char *reason = strchr(why, ' ');
                        snprintf(err, errlen, "option --%s: %s", flags[i].flag, reason ? reason + 1 : why);
                        return -EINVAL;
                }
        }
        if (!s.tls_cert[0] != !s.tls_key[0]) {
                snprintf(err, errlen, "tls_cert and tls_key must be given together");
                return -EINVAL;
        }
        s.allow_root = allow_root;
        *ret = s;
        return action;
}
