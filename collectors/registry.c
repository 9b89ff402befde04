#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "collectors/collector.h"
#include "collectors/model.h"
#include "collectors/nmon.h"
#include "collectors/sysfs.h"

/* The backends by name. */
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

        /* "auto" used to fall back to the device model without a driver,
         * feeding made-up figures under the real names; it stays, for the
         * configurations that name it, as sysfs with its default root. */
        if (strcmp(name, "auto") == 0) {
                if (colon) {
                        snprintf(err, errlen, "backend 'auto' takes no options (it is sysfs; name sysfs:<root>)");
                        return -EINVAL;
                }
                snprintf(name, sizeof(name), "sysfs");
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
        snprintf(err, errlen,
                 "backend '%s': unknown backend (expected sysfs[:<root>], or model:<instance> for the device model)",
                 spec);
        return -EINVAL;
}

void collector_close(struct collector *c) {
        if (c)
                c->ops->close(c);
}
