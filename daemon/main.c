#include "config.h"

#include <arpa/inet.h>
#include <errno.h>
#include <limits.h>
#include <malloc.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/signalfd.h>
#include <unistd.h>

#include "collectors/collector.h"
#include "collectors/host.h"
#include "collectors/imds.h"
#include "collectors/model.h"
#include "daemon/loop.h"
#include "daemon/notify.h"
#include "daemon/settings.h"
#include "kube/podwatch.h"
#include "lib/clock.h"
#include "lib/log.h"
#include "lib/pod.h"
#include "lib/snapshot.h"
#include "remote/remote.h"
#include "storage/store.h"
#include "web/api.h"
#include "web/expo.h"
#include "web/http.h"

#define EXIT_USAGE 2
#define ELEMENTS(a) (sizeof(a) / sizeof((a)[0]))

/* The daemon's parts. Each open_* step opens one of them, in the order of
 * the step tables below, and returns 0 or, having said why, the exit
 * status; daemon_close() closes whatever is open, in reverse. */
struct daemon {
        struct settings settings;
        int argc; /* the command line, read again on SIGHUP */
        char **argv;
        struct collector *backend;
        struct auth *auth;           /* NULL: no authentication */
        char *tls_cert, *tls_key;    /* PEM text; NULL: plain HTTP */
        struct collector *host;      /* NULL without /proc */
        int signal_fd;               /* -1 until opened */
        struct snapshot_slot latest; /* initialised before any step */
        struct store *store;
        struct collector *polled[2]; /* backend and host, as the loop borrows them */
        struct loop loop;
        struct tick_control ticks;   /* with the admin setting; fd -1 otherwise */
        struct pod_slot pods;        /* initialised before any step */
        struct podwatch *podwatch;   /* NULL when pod_labels is off */
        struct cursor_source cursor; /* the store, as the remote writers read it */
        struct remote_set *remote;   /* NULL without remote write endpoints */
        struct forward forward;      /* the writers' counters, for /metrics */
        atomic_uint_fast64_t http_requests[EXPO_HTTP_CODES];
        struct web_context web;
        struct http_server *http;
};

static void list_instances(void) {
        printf("%-22s %-11s %-13s %7s %5s %9s %11s %9s %-14s %-13s %5s %9s\n", "INSTANCE", "CHIP", "NEURONCORE",
               "DEVICES", "CORES", "MEM_GiB", "MEM_BW_TB/s", "LINK_GB/s", "NEURONLINK", "TOPOLOGY", "VCPUS",
               "HOST_GiB");
        for (size_t i = 0; i < catalog_size; i++) {
                const struct catalog_instance *m = &catalog[i];
                const struct catalog_chip *c = m->chip;
                double gib = 1024.0 * 1024.0 * 1024.0;
                printf("%-22s %-11s %-13s %7u %5u %9.0f %11.1f %9.0f %-14s %-13s %5u %9.0f\n", m->name, c->device_name,
                       c->core_version, m->devices, m->devices * c->cores,
                       (double) m->devices * (double) c->memory_bytes / gib, m->devices * c->memory_bandwidth / 1e12,
                       (m->link_bandwidth + m->cross_link_bandwidth) / 1e9,
                       m->link_bandwidth > 0 ? c->link_version : "-", catalog_topology_name(m), m->host_vcpus,
                       (double) m->host_memory_bytes / gib);
        }
}

static void format_url(const struct settings_address *listen, uint16_t port, char *out, size_t size) {
        const struct sockaddr_in *a4 = (const struct sockaddr_in *) &listen->addr;
        const struct sockaddr_in6 *a6 = (const struct sockaddr_in6 *) &listen->addr;
        char addr[INET6_ADDRSTRLEN];

        /* Every address (0.0.0.0, or [::], which serves IPv4 too): the URL
         * names this host's loopback. */
        if (listen->addr.ss_family == AF_INET6 && !IN6_IS_ADDR_UNSPECIFIED(&a6->sin6_addr)) {
                inet_ntop(AF_INET6, &a6->sin6_addr, addr, sizeof(addr));
                snprintf(out, size, "http://[%s]:%u/", addr, port);
        } else if (listen->addr.ss_family == AF_INET && a4->sin_addr.s_addr != htonl(INADDR_ANY)) {
                inet_ntop(AF_INET, &a4->sin_addr, addr, sizeof(addr));
                snprintf(out, size, "http://%s:%u/", addr, port);
        } else {
                snprintf(out, size, "http://127.0.0.1:%u/", port);
        }
}

static int open_backend(struct daemon *d) {
        char err[1024];

        int r = collector_open_spec(d->settings.backend, &d->backend, err, sizeof(err));
        if (r < 0) {
                fprintf(stderr, "neurond: %s\n", err);
                return r == -EINVAL ? EXIT_USAGE : EXIT_FAILURE;
        }
        /* A configuration of an earlier neurond may still count on it. */
        if (strcmp(d->settings.backend, "auto") == 0)
                log_warning("backend 'auto' is another name for 'sysfs': it no longer falls back to the device model; "
                            "name the backend (sysfs, or model:<instance> for the model)");
        return 0;
}

/* The authentication and TLS files are settings too: a bad one is a usage
 * error, found before the database is touched (and by --check-config
 * before a restart rather than by it). */
static int read_http_files(struct daemon *d) {
        const struct settings *s = &d->settings;
        char err[1024];
        int r = 0;

        if (s->basic_auth_users[0] || s->bearer_token_file[0])
                r = auth_new(s->basic_auth_users, s->bearer_token_file, &d->auth, err, sizeof(err));
        if (r >= 0 && s->tls_cert[0]) {
                r = http_read_pem(s->tls_cert, "CERTIFICATE", &d->tls_cert, err, sizeof(err));
                if (r >= 0)
                        r = http_read_pem(s->tls_key, "PRIVATE KEY", &d->tls_key, err, sizeof(err));
                if (r >= 0)
                        r = http_check_tls(d->tls_cert, d->tls_key, err, sizeof(err));
        }
        if (r >= 0) {
                const struct web_context web = { .tls_priorities = s->tls_priorities,
                                                 .allowed_hosts = s->allowed_hosts };
                r = http_check_settings(&web, err, sizeof(err));
        }
        if (r < 0) {
                fprintf(stderr, "neurond: %s\n", err);
                return r == -ENOMEM ? EXIT_FAILURE : EXIT_USAGE;
        }
        return 0;
}

/* Remote write endpoints: their URLs, settings and files are checked
 * before anything starts, like the HTTP files. */
static int check_remote_write(struct daemon *d) {
        const struct settings *s = &d->settings;
        char err[1024];

        for (size_t i = 0; i < s->n_remote_write; i++)
                if (remote_endpoint_check(&s->remote_write[i], err, sizeof(err)) < 0) {
                        fprintf(stderr, "neurond: %s\n", err);
                        return EXIT_USAGE;
                }
        return 0;
}

/* Reading sysfs and serving HTTP need no privilege; a daemon facing the
 * network should not hold any it does not need. Checked after the settings
 * and the backend so that usage errors come first. */
static int refuse_root(struct daemon *d) {
        if (geteuid() == 0 && !d->settings.allow_root) {
                log_error("refusing to run as root: run as an unprivileged user (the systemd unit uses DynamicUser=), "
                          "or pass --allow-root");
                return EXIT_FAILURE;
        }
        return 0;
}

/* Host CPU and memory are a second collector, next to the backend; without
 * /proc the daemon still serves the accelerator. */
static int open_host(struct daemon *d) {
        const struct inventory *inv = &d->backend->inv;
        char err[1024] = "";
        struct collector_args args = { .err = err, .errlen = sizeof(err) };

        if (inv->n_devices > 0)
                log_info("backend %s: %u devices, %zu series", inv->backend, inv->n_devices, inv->n_series);
        else
                log_warning("backend %s: no devices: %s; no device series until devices appear (looked for each tick)",
                            inv->backend, inv->backend_reason);
        int r = host_collector_ops.open(&args, &d->host);
        if (r < 0)
                log_warning("host collector unavailable: %s", err[0] ? err : strerror(-r));
        return 0;
}

/* Who the instance is: the model makes its instance up; for a backend
 * that does not know, the EC2 instance metadata service says, once. Off
 * EC2 (or with the service unreachable) instance_info is absent and the
 * daemon runs on. */
#define INSTANCE_METADATA_TIMEOUT_MS 1000
static int open_identity(struct daemon *d) {
        struct instance_identity *id = &d->backend->inv.identity;
        const struct settings_address *a = &d->settings.instance_metadata;

        if (id->instance_id[0])
                return 0;
        int r = imds_fetch((const struct sockaddr *) &a->addr, a->len, INSTANCE_METADATA_TIMEOUT_MS, id);
        if (r < 0) {
                snprintf(id->error, sizeof(id->error), "instance metadata at %s: %s", a->text, strerror(-r));
                log_warning("%s; instance_info and the instance labels are absent", id->error);
                return 0;
        }
        log_info("instance %s (%s) in %s, from the instance metadata at %s%s%s", id->instance_id, id->instance_type,
                 id->availability_zone, a->text, id->error[0] ? "; incomplete: " : "", id->error);
        return 0;
}

/* Signals are taken through a signalfd by the loop; they are blocked before
 * any thread starts so that every thread inherits the mask. */
static int open_signals(struct daemon *d) {
        sigset_t mask;

        sigemptyset(&mask);
        sigaddset(&mask, SIGTERM);
        sigaddset(&mask, SIGINT);
        sigaddset(&mask, SIGHUP);
        sigprocmask(SIG_BLOCK, &mask, NULL);
        signal(SIGPIPE, SIG_IGN);
        d->signal_fd = signalfd(-1, &mask, SFD_CLOEXEC);
        if (d->signal_fd < 0) {
                log_error("signalfd: %s", strerror(errno));
                return EXIT_FAILURE;
        }
        return 0;
}

static int open_store(struct daemon *d) {
        const struct settings *s = &d->settings;
        struct store_options options;
        char aside[PATH_MAX + 64] = "";

        store_options_init(&options);
        options.raw_retention_ms = s->retention_raw_ms;
        options.minute_retention_ms = s->retention_minute_ms;
        options.hour_retention_ms = s->retention_hour_ms;
        options.size_cap_bytes = s->max_db_bytes;
        options.max_series = s->max_series;
        options.check_interval_ms = s->integrity_check_ms;
        notify_status("Opening database %s", s->db_path);
        int r = store_open_or_set_aside(s->db_path, &options, &d->store, aside, sizeof(aside));
        if (r == 1) {
                log_error("database %s failed its integrity check; kept it as %s and started a new one", s->db_path,
                          aside);
        } else if (store_error_is_transient(r)) {
                /* Set aside, then the new file could not be made. */
                if (aside[0])
                        log_error("database %s failed its integrity check; kept it as %s", s->db_path, aside);
                log_error("cannot open database %s: %s; polling and serving without it (degraded), keeping ticks in "
                          "memory and retrying with back-off",
                          s->db_path, strerror(-r));
                r = store_open_deferred(s->db_path, &options, r, &d->store);
                if (r < 0) {
                        log_error("starting without a database: %s", strerror(-r));
                        return EXIT_FAILURE;
                }
        } else if (r == -EBUSY) {
                long pid = 0;
                if (store_lock_holder(s->db_path, &pid) == 0)
                        log_error("database %s is in use by another neurond (pid %ld, in %s.lock); one daemon per "
                                  "database",
                                  s->db_path, pid, s->db_path);
                else
                        log_error("database %s is in use by another process; one daemon per database", s->db_path);
                return EXIT_USAGE;
        } else if (r == -EPROTONOSUPPORT) {
                log_error("database %s was written by a newer neurond; refusing to touch it", s->db_path);
                return EXIT_USAGE;
        } else if (r < 0) {
                log_error("cannot open database %s: %s; check the db setting, the directory and its permissions",
                          s->db_path, strerror(-r));
                return r == -ENOMEM ? EXIT_FAILURE : EXIT_USAGE;
        }
        struct history_stats st;
        store_get_stats(d->store, &st);
        if (st.samples_set_aside > 0)
                log_warning("database %s: %llu samples of the last run's open minute list a series more than once "
                            "and could not be closed out; kept in its table recent_set_aside",
                            s->db_path, (unsigned long long) st.samples_set_aside);
        return 0;
}

static int open_loop(struct daemon *d) {
        d->polled[0] = d->backend;
        d->polled[1] = d->host;
        int r = loop_init(&d->loop, d->polled, d->host ? 2 : 1, d->store, &d->latest, d->settings.interval_ms);
        if (r < 0) {
                log_error("starting the poll loop: %s", strerror(-r));
                return EXIT_FAILURE;
        }
        r = store_register_series(d->store, d->loop.series, d->loop.n_series);
        if (r < 0) {
                log_error("registering series in %s: %s", d->settings.db_path, strerror(-r));
                return EXIT_FAILURE;
        }
        if (d->settings.admin) {
                r = tick_control_init(&d->ticks);
                if (r < 0) {
                        log_error("driven ticks for the admin endpoint: %s", strerror(-r));
                        return EXIT_FAILURE;
                }
                d->loop.ticks = &d->ticks;
        }
        return 0;
}

static void wake_remote_writers(void *userdata) {
        remote_set_wake(userdata);
}

/* One thread per endpoint, reading the store; each tick wakes them. */
static int open_remote_write(struct daemon *d) {
        const struct settings *s = &d->settings;
        char err[1024];

        if (s->n_remote_write == 0)
                return 0;
        d->cursor = (struct cursor_source){ &store_cursor_ops, d->store };
        int r = remote_set_start(s->remote_write, s->n_remote_write, &d->cursor, &d->remote, err, sizeof(err));
        if (r < 0) {
                log_error("%s", err);
                return r == -EINVAL ? EXIT_USAGE : EXIT_FAILURE;
        }
        d->forward = (struct forward){ &remote_forward_ops, d->remote };
        d->loop.after_tick = wake_remote_writers;
        d->loop.after_tick_userdata = d->remote;
        for (size_t i = 0; i < s->n_remote_write; i++)
                log_info("remote write %s: %s", s->remote_write[i].name, s->remote_write[i].url);
        return 0;
}

/* Logs what changed in the kubelet's answers: whether it answers (when
 * that changes, or the error does), and IDs that name no core or device. */
static void pods_refreshed(const struct pod_map *previous, const struct pod_map *current, void *userdata) {
        const struct daemon *d = userdata;
        const char *socket = d->settings.pod_resources_socket;

        if (!previous || previous->error != current->error) {
                if (current->error == 0)
                        log_info("pod-resources: the kubelet at %s answers; %zu containers hold Neuron cores or "
                                 "devices",
                                 socket, current->n_holders);
                else if (current->error == -ENOENT)
                        log_info("pod-resources: no kubelet socket at %s; series carry no pod labels while it is "
                                 "missing",
                                 socket);
                else
                        log_warning("pod-resources: %s; series carry no pod labels until the kubelet answers",
                                    current->error_text);
        } else if (current->error == 0 && previous->n_holders != current->n_holders) {
                log_debug("pod-resources: %zu containers hold Neuron cores or devices", current->n_holders);
        }
        if (current->bad_ids > 0 && (!previous || previous->bad_ids == 0))
                log_warning("pod-resources: %zu device IDs of Neuron resources are not core or device indexes; "
                            "they are not attributed",
                            current->bad_ids);
}

static int open_pods(struct daemon *d) {
        const struct settings *s = &d->settings;

        if (!s->pod_labels)
                return 0;
        struct podwatch_options o = {
                .socket_path = s->pod_resources_socket,
                .interval_ms = s->pod_resources_interval_ms,
                .set = d->loop.set,
                .latest = &d->latest,
                .slot = &d->pods,
                .refreshed = pods_refreshed,
                .userdata = d,
        };
        int r = podwatch_start(&o, &d->podwatch);
        if (r < 0) {
                log_error("starting pod attribution: %s", strerror(-r));
                return EXIT_FAILURE;
        }
        return 0;
}

/* What the HTTP handlers read: the parts opened so far and the settings. */
static void fill_web_context(struct daemon *d) {
        static const char *const collector_names[] = { "backend", "host" };
        const struct settings *s = &d->settings;

        d->web = (struct web_context){
                .web_root = s->web_root,
                .instance_labels = s->instance_labels,
                .self = {
                        .version = PACKAGE_VERSION,
                        .backend = d->backend->inv.backend,
                        .n_collectors = d->host ? 2 : 1,
                        .collector_names = collector_names,
                        .samples_stored = &d->loop.samples_stored,
                        .store_errors = &d->loop.store_errors,
                        .http_requests = d->http_requests,
                        .history = &d->web.history,
                        .forward = &d->forward,
                        .process = true,
                },
                .latest = &d->latest,
                .pods = d->podwatch ? &d->pods : NULL,
                .pod_resources_socket = s->pod_resources_socket,
                .history = { &store_history_ops, d->store },
                .interval_ms = s->interval_ms,
                .time_scale = d->loop.time_scale,
                .started_ms = clock_wall_ms(),
                .admin = s->admin,
                .faults = { model_is(d->backend) ? &model_fault_ops : NULL, d->backend },
                .ticks = d->loop.ticks,
                .tls_cert = d->tls_cert,
                .tls_key = d->tls_key,
                .tls_priorities = s->tls_priorities,
                .allowed_hosts = s->allowed_hosts,
                .auth = d->auth,
                .healthz_open = s->healthz_open,
                .cors_origin = s->cors_origin,
                .max_connections = (unsigned) s->max_connections,
                .connection_timeout_s = (unsigned) (s->connection_timeout_ms / 1000),
                .header_timeout_s = (unsigned) (s->header_timeout_ms / 1000),
                .max_header_bytes = s->max_header_bytes,
                .max_queries = (unsigned) s->max_queries,
                .max_query_series = s->max_query_series,
                .max_query_points = s->max_query_points,
                .http_requests = d->http_requests,
        };
}

/* The first tick runs before the server starts, so /metrics never answers
 * empty. */
static int open_http(struct daemon *d) {
        const struct settings *s = &d->settings;

        fill_web_context(d);
        loop_tick(&d->loop);
        int listen_fd = notify_listen_fd();
        if (listen_fd >= 0) {
                int r = http_start_fd(listen_fd, &d->web, &d->http);
                if (r < 0) {
                        log_error("serving on the socket from the service manager: %s", strerror(-r));
                        close(listen_fd);
                        return EXIT_FAILURE;
                }
                log_info("listening on port %u (socket from the service manager; listen setting unused)",
                         http_port(d->http));
                return 0;
        }
        if (listen_fd != -ENOENT) {
                log_error("socket activation: expected one listening stream socket: %s", strerror(-listen_fd));
                return EXIT_FAILURE;
        }
        int r = http_start((const struct sockaddr *) &s->listen.addr, s->listen.len, &d->web, &d->http);
        if (r < 0) {
                log_error("listening on %s: %s", s->listen.text, strerror(-r));
                return EXIT_FAILURE;
        }
        char url[128];
        format_url(&s->listen, http_port(d->http), url, sizeof(url));
        log_info("listening on port %u; dashboard at %s, metrics at %smetrics", http_port(d->http), url, url);
        return 0;
}

/* What --check-config checks; it stops after them. */
static int (*const config_steps[])(struct daemon *d) = { open_backend, read_http_files, check_remote_write };
/* The rest of the daemon. */
static int (*const run_steps[])(struct daemon *d) = {
        refuse_root, open_host, open_identity,     open_signals, open_store,
        open_loop,   open_pods, open_remote_write, open_http,
};

static int open_steps(struct daemon *d, int (*const *steps)(struct daemon *d), size_t n) {
        int status = 0;
        for (size_t i = 0; i < n && status == 0; i++)
                status = steps[i](d);
        return status;
}

static void daemon_close(struct daemon *d) {
        http_stop(d->http);
        remote_set_stop(d->remote);
        podwatch_stop(d->podwatch);
        loop_done(&d->loop);
        tick_control_destroy(&d->ticks);
        store_close(d->store);
        if (d->signal_fd >= 0)
                close(d->signal_fd);
        collector_close(d->host);
        http_free_pem(d->tls_key);
        http_free_pem(d->tls_cert);
        auth_free(d->auth);
        collector_close(d->backend);
        pod_slot_destroy(&d->pods);
        snapshot_slot_destroy(&d->latest);
}

/* SIGHUP: re-reads flags and config file exactly as at start and applies
 * the settings the table marks as reloadable: the interval and the log
 * level. A bad configuration changes nothing. */
static int reload_settings(struct loop *l, void *userdata) {
        struct daemon *d = userdata;
        struct settings s;
        char err[1024], waiting[512];

        if (settings_load(d->argc, d->argv, &s, err, sizeof(err)) < 0) {
                log_error("reload: %s; keeping the running configuration", err);
                return -EINVAL;
        }
        settings_reload(&d->settings, &s, waiting, sizeof(waiting));
        settings_free(&s);
        if (waiting[0])
                log_warning("reload: %s: changes take effect at the next restart", waiting);
        log_set_level(d->settings.log_level);
        l->interval_ms = d->settings.interval_ms;
        /* Read by the HTTP threads for /healthz; one aligned word. */
        __atomic_store_n(&d->web.interval_ms, d->settings.interval_ms, __ATOMIC_RELAXED);
        log_info("reloaded configuration%s%s: interval %lldms", s.config_path[0] ? " from " : "", s.config_path,
                 (long long) s.interval_ms);
        return 0;
}

static int daemon_run(struct daemon *d) {
        int status = EXIT_SUCCESS;

        d->loop.reload = reload_settings;
        d->loop.reload_userdata = d;
        notify_ready("Polling");
        int r = loop_run(&d->loop, d->signal_fd);
        if (r < 0) {
                log_error("poll loop failed: %s", strerror(-r));
                status = EXIT_FAILURE;
        }
        notify_stopping();
        return status;
}

static void print_config_summary(const struct daemon *d) {
        const struct settings *s = &d->settings;

        printf("configuration OK: listen %s, backend %s, interval %lldms, db %s, %zu remote write endpoint%s%s%s\n",
               s->listen.text, d->backend->inv.backend, (long long) s->interval_ms, s->db_path, s->n_remote_write,
               s->n_remote_write == 1 ? "" : "s", s->config_path[0] ? ", config " : "", s->config_path);
}

int main(int argc, char **argv) {
        static struct daemon d = { .signal_fd = -1, .ticks.fd = -1 };
        char err[1024];

        /* A fixed threshold: glibc otherwise raises it to the size of each
         * large block freed (a /metrics page, a query's answer), after which
         * such blocks come from the per-thread arenas and their freed pages
         * stay resident there. Fixed, they are mapped and unmapped. */
        mallopt(M_MMAP_THRESHOLD, 128 * 1024);

        int action = settings_load(argc, argv, &d.settings, err, sizeof(err));
        if (action < 0) {
                fprintf(stderr, "neurond: %s\n", err);
                return EXIT_USAGE;
        }
        switch (action) {
        case SETTINGS_HELP:
                settings_print_help(stdout, argv[0]);
                return EXIT_SUCCESS;
        case SETTINGS_VERSION:
                printf("neurond %s\n", PACKAGE_VERSION);
                return EXIT_SUCCESS;
        case SETTINGS_LIST_INSTANCES:
                list_instances();
                return EXIT_SUCCESS;
        }
        d.argc = argc;
        d.argv = argv;
        log_init(d.settings.log_level);
        snapshot_slot_init(&d.latest);
        pod_slot_init(&d.pods);

        int status = open_steps(&d, config_steps, ELEMENTS(config_steps));
        if (status == 0 && action == SETTINGS_CHECK_CONFIG) {
                print_config_summary(&d);
        } else if (status == 0) {
                status = open_steps(&d, run_steps, ELEMENTS(run_steps));
                if (status == 0)
                        status = daemon_run(&d);
        }
        daemon_close(&d);
        remote_global_cleanup();
        settings_free(&d.settings);
        return status;
}
