#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "collectors/collector.h"
#include "collectors/model.h"
#include "collectors/nmon.h"
#include "collectors/sysfs.h"

/* The explicit list of backends, in the order "auto" tries them. The model
 * is last: it is always usable, so auto falls back to it. */
static const struct collector_ops *const registry[] = {
        &sysfs_collector_ops,
        &model_collector_ops,
};

int collector_open_spec(const char *spec, struct collector **ret, char *err, size_t errlen) {
        char name[32];
        /* NAME, NAME:OPTIONS, or NAME,OPTION... for a backend whose first
         * option (sysfs's root) may be left out: its options then start
         * with the comma. */
        size_t len = strcspn(spec, ":,");
        const char *colon = spec[len] ? spec + len : NULL;
        if (len >= sizeof(name)) {
                snprintf(err, errlen, "backend '%s': unknown backend", spec);
                return -EINVAL;
        }
        memcpy(name, spec, len);
        name[len] = '\0';
        const char *options = !colon ? NULL : *colon == ':' ? colon + 1 : colon;
        struct collector_args args = { .options = options, .err = err, .errlen = errlen };
        err[0] = '\0';

        if (strcmp(name, "auto") == 0) {
                /* Each probe explains itself in err; the reasons of the
                 * backends passed over and of the one chosen are kept for
                 * the log and /api/v1/devices. */
                char reason[sizeof(((struct inventory *) 0)->backend_reason)] = "";
                if (colon) {
                        snprintf(err, errlen, "backend 'auto' takes no options");
                        return -EINVAL;
                }
                for (size_t i = 0; i < sizeof(registry) / sizeof(registry[0]); i++) {
                        err[0] = '\0';
                        int p = registry[i]->probe(&args);
                        size_t at = strlen(reason);
                        if (err[0])
                                snprintf(reason + at, sizeof(reason) - at, "%s%s: %s", at ? "; " : "",
                                         registry[i]->name, err);
                        if (p != 0)
                                continue;
                        err[0] = '\0';
                        int r = registry[i]->open(&args, ret);
                        if (r < 0 && err[0] == '\0')
                                snprintf(err, errlen, "backend '%s': %s", registry[i]->name, strerror(-r));
                        if (r >= 0)
                                snprintf((*ret)->inv.backend_reason, sizeof((*ret)->inv.backend_reason),
                                         "auto chose %s (%.120s)", registry[i]->name,
                                         reason[0] ? reason : "first usable backend");
                        return r;
                }
                snprintf(err, errlen, "no usable backend found (%s)", reason);
                return -ENODEV;
        }

        for (size_t i = 0; i < sizeof(registry) / sizeof(registry[0]); i++) {
                if (strcmp(registry[i]->name, name) != 0)
                        continue;
                /* sysfs merged with what neuron-monitor reports (collectors/nmon.h). */
                const struct collector_ops *ops =
                        registry[i] == &sysfs_collector_ops && nmon_options_have_monitor(options) ? &nmon_collector_ops
                                                                                                  : registry[i];
                int r = ops->open(&args, ret);
                if (r < 0 && err[0] == '\0')
                        snprintf(err, errlen, "backend '%s': %s", spec, strerror(-r));
                return r;
        }
        snprintf(err, errlen, "backend '%s': unknown backend (expected model:<instance>, sysfs[:<root>] or auto)",
                 spec);
        return -EINVAL;
}

void collector_close(struct collector *c) {
        if (c)
                c->ops->close(c);
}
