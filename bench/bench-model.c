/* Cost of one device-model tick (one simulated second per read, as at the
 * default 1 s interval), per instance and scenario, and per node of the
 * UltraServers that have them (node=0). Prints figures; never fails on
 * speed. */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "collectors/model.h"

#define TICKS 600

static double now_s(void) {
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (double) ts.tv_sec + (double) ts.tv_nsec / 1e9;
}

/* Prints one line for the instance (with its node option, or "") and scenario. */
static int bench(const char *instance, const char *node, const char *scenario) {
        char spec[128], name[64], err[256];
        struct collector *c;
        snprintf(spec, sizeof(spec), "model:%s%s,scenario=%s", instance, node, scenario);
        if (collector_open_spec(spec, &c, err, sizeof(err)) < 0) {
                fprintf(stderr, "%s\n", err);
                return 1;
        }
        size_t n = c->inv.n_series;
        double *values = calloc(n, sizeof(double));
        uint8_t *valid = calloc(n, 1);
        if (!values || !valid)
                return 1;
        struct sample_batch b = { .n = n, .values = values, .valid = valid };
        int64_t t = 1767225600000;
        c->ops->read(c, t, &b);
        double start = now_s();
        for (int k = 1; k <= TICKS; k++)
                c->ops->read(c, t + k * 1000, &b);
        double per_tick = (now_s() - start) / TICKS * 1e6;
        snprintf(name, sizeof(name), "%s%s", instance, node);
        printf("%-29s %-9s %7zu %12.1f %16.1f\n", name, scenario, n, per_tick, per_tick / ((double) n / 1000.0));
        free(values);
        free(valid);
        collector_close(c);
        return 0;
}

int main(void) {
        static const char *const scenarios[] = { "training", "moe", "mixed" };
        printf("%-29s %-9s %7s %12s %16s\n", "instance", "scenario", "series", "us/tick", "us/1000 series");
        for (size_t i = 0; i < catalog_size; i++)
                for (size_t s = 0; s < sizeof(scenarios) / sizeof(scenarios[0]); s++)
                        if (bench(catalog[i].name, "", scenarios[s]) != 0 ||
                            (catalog[i].servers > 1 && bench(catalog[i].name, ",node=0", scenarios[s]) != 0))
                                return 1;
        return 0;
}
