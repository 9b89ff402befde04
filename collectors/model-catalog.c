#include "config.h"

#include <string.h>

#include "collectors/model.h"

#define GiB (1024.0 * 1024.0 * 1024.0)

/* Trainium (Trn1): seed 002_f8b75e278c39e486.txt (trn1 architecture page):
 * 2 NeuronCore-v2 per chip, 32 GiB HBM at 820 GiB/s, 1 TB/s DMA,
 * NeuronLink-v2 at 384 GiB/s per device. sysfs strings: HARDWARE.md 1. */
static const struct model_chip chip_trainium = {
        .family = "Trainium",
        .device_name = "Trainium1",
        .arch = "NDv2",
        .core_arch = "NCv2",
        .cores = 2,
        .memory_bytes = 34359738368ull,
        .memory_bandwidth = 820 * GiB,
        .dma_bandwidth = 1e12,
        .link_bandwidth = 384 * GiB,
};

const struct model_instance model_catalog[] = {
        /* HARDWARE.md section 2: 1 device, no NeuronLink. */
        { .name = "trn1.2xlarge", .chip = &chip_trainium, .devices = 1, .topology = TOPOLOGY_NONE },
        /* 16 devices in a 4x4 2D torus (seed 002). */
        { .name = "trn1.32xlarge", .chip = &chip_trainium, .devices = 16,
          .topology = TOPOLOGY_TORUS_2D, .torus_width = 4, .torus_height = 4 },
};

const size_t model_catalog_size = sizeof(model_catalog) / sizeof(model_catalog[0]);

const struct model_instance *model_catalog_find(const char *name) {
        for (size_t i = 0; i < model_catalog_size; i++)
                if (strcmp(model_catalog[i].name, name) == 0)
                        return &model_catalog[i];
        return NULL;
}
