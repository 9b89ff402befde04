#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "collectors/model-internal.h"

#define DEFAULT_INSTANCE "trn1.32xlarge"

static const char *const scenario_names[] = {
        [SCENARIO_IDLE] = "idle",           [SCENARIO_STEADY] = "steady", [SCENARIO_TRAINING] = "training",
        [SCENARIO_INFERENCE] = "inference", [SCENARIO_MOE] = "moe",       [SCENARIO_MIXED] = "mixed",
};
#define SCENARIO__COUNT (sizeof(scenario_names) / sizeof(scenario_names[0]))

int model_options_parse(const struct collector_args *args, struct model_options *ret) {
        struct model_options o = { .instance = catalog_find(DEFAULT_INSTANCE),
                                   .scenario = SCENARIO_STEADY,
                                   .node = -1,
                                   .seed = 1,
                                   .speed = 1 };
        char buf[1024];

        if (!args->options || !args->options[0])
                goto done;
        if (strlen(args->options) >= sizeof(buf)) {
                snprintf(args->err, args->errlen, "model options too long");
                return -EINVAL;
        }
        snprintf(buf, sizeof(buf), "%s", args->options);
        for (char *tok = buf, *next; tok; tok = next) {
                next = strchr(tok, ',');
                if (next)
                        *next++ = '\0';
                char *eq = strchr(tok, '=');
                char *end;
                if (!eq) {
                        if (tok != buf) {
                                snprintf(args->err, args->errlen, "model: option '%s' needs a value", tok);
                                return -EINVAL;
                        }
                        o.instance = catalog_find(tok);
                        if (!o.instance) {
                                snprintf(args->err, args->errlen,
                                         "model: unknown instance type '%s' (see --list-instances)", tok);
                                return -EINVAL;
                        }
                        continue;
                }
                *eq = '\0';
                const char *val = eq + 1;
                errno = 0;
                if (strcmp(tok, "seed") == 0) {
                        unsigned long long v = strtoull(val, &end, 10);
                        if (errno || end == val || *end || val[0] == '-') {
                                snprintf(args->err, args->errlen, "model: seed '%s' is not a non-negative integer",
                                         val);
                                return -EINVAL;
                        }
                        o.seed = v;
                } else if (strcmp(tok, "node") == 0) {
                        unsigned long v = strtoul(val, &end, 10);
                        if (errno || end == val || *end || val[0] == '-' || v > 9999) {
                                snprintf(args->err, args->errlen, "model: node '%s' is not a node number", val);
                                return -EINVAL;
                        }
                        o.node = (int) v;
                } else if (strcmp(tok, "speed") == 0) {
                        double v = strtod(val, &end);
                        if (errno || end == val || *end || !(v >= 0.001 && v <= 1e6)) {
                                snprintf(args->err, args->errlen,
                                         "model: speed '%s' is not a number in [0.001, 1000000]", val);
                                return -EINVAL;
                        }
                        o.speed = v;
                } else if (strcmp(tok, "scenario") == 0) {
                        size_t i = 0;
                        while (i < SCENARIO__COUNT && strcmp(val, scenario_names[i]) != 0)
                                i++;
                        if (i == SCENARIO__COUNT) {
                                snprintf(
                                        args->err, args->errlen,
                                        "model: unknown scenario '%s' (expected idle, steady, training, inference, moe or mixed)",
                                        val);
                                return -EINVAL;
                        }
                        o.scenario = (enum scenario) i;
                } else if (strcmp(tok, "lnc") == 0) {
                        if (strcmp(val, "1") != 0 && strcmp(val, "2") != 0) {
                                snprintf(args->err, args->errlen, "model: lnc '%s' is not 1 or 2", val);
                                return -EINVAL;
                        }
                        o.lnc = (unsigned) (val[0] - '0');
                } else if (strcmp(tok, "memory_categories") == 0) {
                        if (strcmp(val, "on") != 0 && strcmp(val, "off") != 0) {
                                snprintf(args->err, args->errlen, "model: memory_categories '%s' is not on or off",
                                         val);
                                return -EINVAL;
                        }
                        o.categories = strcmp(val, "on") == 0;
                } else if (strcmp(tok, "fault") == 0) {
                        char why[256];
                        if (o.n_faults == FAULTS_MAX) {
                                snprintf(args->err, args->errlen, "model: more than %d faults", FAULTS_MAX);
                                return -EINVAL;
                        }
                        if (model_fault_parse(val, &o.faults[o.n_faults], why, sizeof(why)) < 0) {
                                snprintf(args->err, args->errlen, "model: %s", why);
                                return -EINVAL;
                        }
                        o.n_faults++;
                } else {
                        snprintf(args->err, args->errlen, "model: unknown option '%s'", tok);
                        return -EINVAL;
                }
        }
done:
        if (o.node >= 0 && o.instance->servers < 2) {
                /* trn3-gen1-ultraserver is an UltraServer whose hosts no source counts. */
                snprintf(args->err, args->errlen,
                         strstr(o.instance->name, "ultraserver")
                                 ? "model: node=%d needs an UltraServer's hosts; no source gives how many %s has, "
                                   "so it is modelled as one host"
                                 : "model: node=%d needs an UltraServer of several hosts; %s is one host",
                         o.node, o.instance->name);
                return -EINVAL;
        }
        if (o.node >= 0 && (unsigned) o.node >= o.instance->servers) {
                snprintf(args->err, args->errlen, "model: node %d does not exist on %s (0-%u)", o.node,
                         o.instance->name, o.instance->servers - 1);
                return -EINVAL;
        }
        if (o.lnc && !catalog_lnc_supported(o.instance->chip, o.lnc)) {
                snprintf(args->err, args->errlen,
                         "model: lnc=%u needs NeuronCore-v3 or later (Trainium2, Trainium3); %s has %s", o.lnc,
                         o.instance->name, o.instance->chip->core_version);
                return -EINVAL;
        }
        *ret = o;
        return 0;
}
