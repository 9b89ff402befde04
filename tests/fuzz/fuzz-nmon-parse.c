/* libFuzzer target for the neuron-monitor JSON parser: the input is one
 * line of neuron-monitor's output. What the parser accepts must keep its
 * bounds, and so must its runtimes merged by tag. */
#include "config.h"

#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "collectors/nmon.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check_ratio(bool has, double v) {
        if (has && !(v >= 0 && v <= 1))
                abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        struct nmon_report rep;
        char err[128];
        int r = nmon_parse((const char *) data, size, &rep, err, sizeof(err));
        if (r < 0) {
                if (r != -EINVAL && r != -E2BIG && r != -ENOMEM)
                        abort();
                return 0;
        }
        if (rep.n_runtimes > NMON_RUNTIMES_MAX)
                abort();
        for (size_t i = 0; i < rep.n_runtimes; i++) {
                const struct nmon_runtime *rt = &rep.runtimes[i];
                if (rt->pid == 0 || strlen(rt->tag) >= sizeof(rt->tag) || rt->n_cores > NMON_CORES_MAX)
                        abort();
                for (const char *p = rt->tag; *p; p++)
                        if (*p < 0x20 || *p > 0x7e)
                                abort();
                check_ratio(rt->has_vcpu, rt->vcpu_user);
                check_ratio(rt->has_vcpu, rt->vcpu_system);
                for (size_t c = 0; c < rt->n_cores; c++) {
                        if (rt->cores[c].index >= NMON_CORE_INDEX_MAX ||
                            (c > 0 && rt->cores[c].index <= rt->cores[c - 1].index))
                                abort();
                        check_ratio(rt->cores[c].has_util, rt->cores[c].util);
                        if (!isfinite(rt->cores[c].flops) || rt->cores[c].flops < 0)
                                abort();
                }
        }
        /* Merged by tag: one runtime a tag, cores ascending, ratios kept. */
        struct nmon_report tags;
        r = nmon_merge_tags(&rep, &tags);
        nmon_report_free(&rep);
        if (r < 0) {
                if (r != -ENOMEM)
                        abort();
                return 0;
        }
        for (size_t i = 0; i < tags.n_runtimes; i++) {
                const struct nmon_runtime *rt = &tags.runtimes[i];
                for (size_t k = 0; k < i; k++)
                        if (strcmp(tags.runtimes[k].tag, rt->tag) == 0)
                                abort();
                check_ratio(rt->has_vcpu, rt->vcpu_user);
                check_ratio(rt->has_vcpu, rt->vcpu_system);
                for (size_t c = 0; c < rt->n_cores; c++) {
                        if (rt->cores[c].index >= NMON_CORE_INDEX_MAX ||
                            (c > 0 && rt->cores[c].index <= rt->cores[c - 1].index))
                                abort();
                        check_ratio(rt->cores[c].has_util, rt->cores[c].util);
                }
        }
        nmon_report_free(&tags);
        return 0;
}
