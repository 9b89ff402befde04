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
#include "collectors/model.h"
#include "daemon/loop.h"
#include "daemon/notify.h"
#include "daemon/settings.h"
#include "lib/clock.h"
#include "lib/log.h"
#include "lib/snapshot.h"
#include "storage/store.h"
#include "web/api.h"
#include "web/expo.h"
#include "web/http.h"

#define EXIT_USAGE 2

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

static void format_url(const struct settings *s, uint16_t port, char *out, size_t size) {
        char host[INET6_ADDRSTRLEN] = "127.0.0.1";
        if (s->listen.addr.ss_family == AF_INET6) {
                const struct sockaddr_in6 *a = (const struct sockaddr_in6 *) &s->listen.addr;
                char addr[INET6_ADDRSTRLEN];
                inet_ntop(AF_INET6, &a->sin6_addr, addr, sizeof(addr));
                snprintf(out, size, "http://[%s]:%u/", addr, port);
                return;
        }
        const struct sockaddr_in *a = (const struct sockaddr_in *) &s->listen.addr;
        if (a->sin_addr.s_addr != htonl(INADDR_ANY))
                inet_ntop(AF_INET, &a->sin_addr, host, sizeof(host));
        snprintf(out, size, "http://%s:%u/", host, port);
}

/* A database that cannot be opened because of the file system's state
 * (full, read-only, failing) may come back by itself, so the daemon starts
 * without it; anything else (no such directory, no permission, a file of a
 * newer neurond) needs the operator. */
static bool store_error_is_transient(int r) {
        return r == -ENOSPC || r == -EDQUOT || r == -EROFS || r == -EIO;
}

struct reload_args {
        int argc;
        char **argv;
        struct settings *settings;
        struct web_context *web;
};

/* SIGHUP: re-reads flags and config file exactly as at start and applies
 * the settings the table marks as reloadable: the interval and the log
 * level. A bad configuration changes nothing. */
static int reload_settings(struct loop *l, void *userdata) {
        struct reload_args *a = userdata;
        struct settings s;
        char err[1024], waiting[512];

        if (settings_load(a->argc, a->argv, &s, err, sizeof(err)) < 0) {
                log_error("reload: %s; keeping the running configuration", err);
                return -EINVAL;
        }
        settings_reload(a->settings, &s, waiting, sizeof(waiting));
        if (waiting[0])
                log_warning("reload: %s: changes take effect at the next restart", waiting);
        log_set_level(a->settings->log_level);
        l->interval_ms = a->settings->interval_ms;
        /* Read by the HTTP threads for /healthz; one aligned word. */
        __atomic_store_n(&a->web->interval_ms, a->settings->interval_ms, __ATOMIC_RELAXED);
        log_info("reloaded configuration%s%s: interval %lldms", s.config_path[0] ? " from " : "", s.config_path,
                 (long long) s.interval_ms);
        return 0;
}

int main(int argc, char **argv) {
        struct settings settings;
        char err[1024];
        struct collector *backend = NULL;
        struct collector *host = NULL;
        struct store *store = NULL;
        struct expo *expo = NULL;
        struct http_server *http = NULL;
        struct auth *auth = NULL;
        char *tls_cert = NULL, *tls_key = NULL;
        struct snapshot_slot latest;
        struct loop loop = { 0 };
        int signal_fd = -1;
        int status = EXIT_FAILURE;
        int r;

        /* A fixed threshold: glibc otherwise raises it to the size of each
         * large block freed (a /metrics page, a query's answer), after which
         * such blocks come from the per-thread arenas and their freed pages
         * stay resident there. Fixed, they are mapped and unmapped. */
        mallopt(M_MMAP_THRESHOLD, 128 * 1024);

        int action = settings_load(argc, argv, &settings, err, sizeof(err));
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
        log_init(settings.log_level);

        r = collector_open_spec(settings.backend, &backend, err, sizeof(err));
        if (r < 0) {
                fprintf(stderr, "neurond: %s\n", err);
                return r == -EINVAL ? EXIT_USAGE : EXIT_FAILURE;
        }
        /* The authentication and TLS files are settings too: a bad one is a
         * usage error, found before the database is touched (and by
         * --check-config before a restart rather than by it). */
        if (settings.basic_auth_users[0] || settings.bearer_token_file[0])
                r = auth_new(settings.basic_auth_users, settings.bearer_token_file, &auth, err, sizeof(err));
        if (r >= 0 && settings.tls_cert[0]) {
                r = http_read_pem(settings.tls_cert, "CERTIFICATE", &tls_cert, err, sizeof(err));
                if (r >= 0)
                        r = http_read_pem(settings.tls_key, "PRIVATE KEY", &tls_key, err, sizeof(err));
        }
        if (r < 0) {
                fprintf(stderr, "neurond: %s\n", err);
                auth_free(auth);
                http_free_pem(tls_cert);
                collector_close(backend);
                return r == -ENOMEM ? EXIT_FAILURE : EXIT_USAGE;
        }
        if (action == SETTINGS_CHECK_CONFIG) {
                auth_free(auth);
                http_free_pem(tls_cert);
                http_free_pem(tls_key);
                printf("configuration OK: listen %s, backend %s, interval %lldms, db %s%s%s\n", settings.listen.text,
                       backend->inv.backend, (long long) settings.interval_ms, settings.db_path,
                       settings.config_path[0] ? ", config " : "", settings.config_path);
                collector_close(backend);
                return EXIT_SUCCESS;
        }
        /* Reading sysfs and serving HTTP need no privilege; a daemon facing
         * the network should not hold any it does not need. Checked after
         * the settings and the backend so that usage errors come first. */
        if (geteuid() == 0 && !settings.allow_root) {
                log_error("refusing to run as root: run as an unprivileged user (the systemd unit uses DynamicUser=), "
                          "or pass --allow-root");
                auth_free(auth);
                http_free_pem(tls_cert);
                http_free_pem(tls_key);
                collector_close(backend);
                return EXIT_FAILURE;
        }
        log_info("backend %s: %u devices, %zu series%s%s", backend->inv.backend, backend->inv.n_devices,
                 backend->inv.n_series, backend->inv.backend_reason[0] ? "; " : "", backend->inv.backend_reason);
        /* Host CPU and memory are a second collector; without /proc the
         * daemon still serves the accelerator. */
        struct collector_args host_args = { .err = err, .errlen = sizeof(err) };
        err[0] = '\0';
        r = host_collector_ops.open(&host_args, &host);
        if (r < 0)
                log_warning("host collector unavailable: %s", err[0] ? err : strerror(-r));

        /* Signals are taken through a signalfd by the loop; block them before
         * any thread starts so that every thread inherits the mask. */
        sigset_t mask;
        sigemptyset(&mask);
        sigaddset(&mask, SIGTERM);
        sigaddset(&mask, SIGINT);
        sigaddset(&mask, SIGHUP);
        sigprocmask(SIG_BLOCK, &mask, NULL);
        signal(SIGPIPE, SIG_IGN);
        snapshot_slot_init(&latest);
        signal_fd = signalfd(-1, &mask, SFD_CLOEXEC);
        if (signal_fd < 0) {
                log_error("signalfd: %s", strerror(errno));
                goto out;
        }

        struct store_options store_opt;
        char aside[PATH_MAX + 64] = "";
        store_options_init(&store_opt);
        store_opt.raw_retention_ms = settings.retention_raw_ms;
        store_opt.minute_retention_ms = settings.retention_minute_ms;
        store_opt.hour_retention_ms = settings.retention_hour_ms;
        store_opt.size_cap_bytes = settings.max_db_bytes;
        notify_status("Opening database %s", settings.db_path);
        r = store_open_or_set_aside(settings.db_path, &store_opt, &store, aside, sizeof(aside));
        if (r == 1) {
                log_error("database %s failed its integrity check; kept it as %s and started a new one",
                          settings.db_path, aside);
        } else if (store_error_is_transient(r)) {
                /* Set aside, then the new file could not be made. */
                if (aside[0])
                        log_error("database %s failed its integrity check; kept it as %s", settings.db_path, aside);
                log_error("cannot open database %s: %s; polling and serving without it (degraded), keeping ticks in "
                          "memory and retrying with back-off",
                          settings.db_path, strerror(-r));
                r = store_open_deferred(settings.db_path, &store_opt, r, &store);
                if (r < 0) {
                        log_error("starting without a database: %s", strerror(-r));
                        goto out;
                }
        } else if (r == -EPROTONOSUPPORT) {
                log_error("database %s was written by a newer neurond; refusing to touch it", settings.db_path);
                status = EXIT_USAGE;
                goto out;
        } else if (r < 0) {
                log_error("cannot open database %s: %s; check the db setting, the directory and its permissions",
                          settings.db_path, strerror(-r));
                status = r == -ENOMEM ? EXIT_FAILURE : EXIT_USAGE;
                goto out;
        }
        struct collector *collectors[] = { backend, host };
        size_t n_collectors = host ? 2 : 1;
        r = loop_init(&loop, collectors, n_collectors, store, &latest, settings.interval_ms);
        if (r < 0) {
                log_error("starting the poll loop: %s", strerror(-r));
                goto out;
        }
        r = store_register_series(store, loop.series, loop.n_series);
        if (r < 0) {
                log_error("registering series in %s: %s", settings.db_path, strerror(-r));
                goto out;
        }
        r = expo_new(loop.series, loop.n_series, &expo);
        if (r < 0) {
                log_error("preparing /metrics: %s", strerror(-r));
                goto out;
        }
        static atomic_uint_fast64_t http_requests[EXPO_HTTP_CODES];
        static const char *const collector_names[] = { "backend", "host" };
        struct web_context web = {
                .web_root = settings.web_root,
                .inv = &backend->inv,
                .series = loop.series,
                .n_series = loop.n_series,
                .expo = expo,
                .self = {
                        .version = PACKAGE_VERSION,
                        .backend = backend->inv.backend,
                        .instance_type = backend->inv.instance_type,
                        .n_collectors = n_collectors,
                        .collector_names = collector_names,
                        .samples_stored = &loop.samples_stored,
                        .store_errors = &loop.store_errors,
                        .http_requests = http_requests,
                },
                .latest = &latest,
                .history = { &store_history_ops, store },
                .interval_ms = settings.interval_ms,
                .time_scale = loop.time_scale,
                .started_ms = clock_wall_ms(),
                .admin = settings.admin,
                .faults = { model_is(backend) ? &model_fault_ops : NULL, backend },
                .tls_cert = tls_cert,
                .tls_key = tls_key,
                .auth = auth,
                .healthz_open = settings.healthz_open,
                .cors_origin = settings.cors_origin,
                .max_connections = (unsigned) settings.max_connections,
                .connection_timeout_s = (unsigned) (settings.connection_timeout_ms / 1000),
                .max_header_bytes = settings.max_header_bytes,
                .http_requests = http_requests,
        };
        web.self.history = &web.history;
        /* The first tick runs before the server starts, so /metrics never
         * answers empty. */
        loop_tick(&loop);
        int listen_fd = notify_listen_fd();
        if (listen_fd >= 0) {
                r = http_start_fd(listen_fd, &web, &http);
                if (r < 0) {
                        log_error("serving on the socket from the service manager: %s", strerror(-r));
                        close(listen_fd);
                        goto out;
                }
                log_info("listening on port %u (socket from the service manager; listen setting unused)",
                         http_port(http));
        } else if (listen_fd != -ENOENT) {
                log_error("socket activation: expected one listening stream socket: %s", strerror(-listen_fd));
                goto out;
        } else {
                r = http_start((const struct sockaddr *) &settings.listen.addr, settings.listen.len, &web, &http);
                if (r < 0) {
                        log_error("listening on %s: %s", settings.listen.text, strerror(-r));
                        goto out;
                }
                char url[128];
                format_url(&settings, http_port(http), url, sizeof(url));
                log_info("listening on port %u; dashboard at %s, metrics at %smetrics", http_port(http), url, url);
        }
        struct reload_args reload = { .argc = argc, .argv = argv, .settings = &settings, .web = &web };
        loop.reload = reload_settings;
        loop.reload_userdata = &reload;
        notify_ready("Polling");

        r = loop_run(&loop, signal_fd);
        if (r < 0)
                log_error("poll loop failed: %s", strerror(-r));
        else
                status = EXIT_SUCCESS;
        notify_stopping();

out:
        http_stop(http);
        expo_free(expo);
        loop_done(&loop);
        store_close(store);
        snapshot_slot_destroy(&latest);
        auth_free(auth);
        http_free_pem(tls_cert);
        http_free_pem(tls_key);
        if (signal_fd >= 0)
                close(signal_fd);
        collector_close(host);
        collector_close(backend);
        return status;
}
