#include "config.h"

#include <string.h>

#include "lib/catalog.h"

/* Sources named below:
 *   001     seed 001_b69106f18a4962c1.txt (Trainium and Inferentia overview)
 *   002     seed 002_f8b75e278c39e486.txt (Trainium architecture page)
 *   003     seed 003_748709454a954df0.txt (Trn3 architecture page)
 *   *.rst   aws-neuron-sdk about-neuron/arch/neuron-hardware/<page>.rst: the chip
 *           pages (inferentia, inferentia2, trainium, trainium2, trainium3) and
 *           the instance pages (inf1-arch, inf2-arch, trn1-arch, trn2-arch)
 *   inf1    inf1-arch.rst and inferentia.rst
 *   inf2    inf2-arch.rst and inferentia2.rst
 *   nki     aws-neuron-sdk nki/guides/architecture/trainium2_arch.rst and
 *           trainium3_arch.rst
 *   driver  aws-neuron-driver: neuron_device.h (PCI device ids),
 *           v<N>/neuron_dhal_v<N>.c (the sysfs device_name and the arch_type
 *           suffixes after "ND" and "NC"), v<N>/address_map.h (DMA engines) */

#define GiB 1073741824.0
#define GiB_BYTES 1073741824ull

/* Inferentia (Inf1). */
static const struct catalog_chip chip_inferentia = {
        .family = "Inferentia",
        .device_name = "Inferentia", /* driver v1 */
        .arch = "NDv1",              /* driver v1 */
        .core_arch = "NCv1",         /* driver v1 */
        .core_version = "NeuronCore-v1",
        .link_version = "NeuronLink-v1",
        .pci_device_id = 0x7064,       /* driver: 0x7064-0x7067 */
        .cores = 4,                    /* inf1, 001: four NeuronCore-v1 per chip */
        .memory_bytes = 8 * GiB_BYTES, /* inf1: 8 GiB DRAM per device; 001: DDR4 */
        .memory_kind = "DDR4",
        .memory_bandwidth = 50 * GiB, /* inf1-arch.rst: 50 GiB/sec per device (inferentia.rst: 50 GB/sec) */
        /* Not documented. Every DMA reads or writes device memory,
         * so the model caps it at the memory bandwidth. */
        .dma_bandwidth = 50 * GiB,
        .dma_engines = 12,          /* driver v1: 3 per core */
        .link_bandwidth = 32 * GiB, /* inf1-arch.rst: NeuronLink-v1 32 GiB/sec/device */
        .fp16_tflops = 64,          /* inferentia.rst */
};

/* Inferentia2 (Inf2). */
static const struct catalog_chip chip_inferentia2 = {
        .family = "Inferentia2",
        .device_name = "Inferentia2", /* driver v2 */
        .arch = "NDv3",               /* driver v2 */
        .core_arch = "NCv2",          /* driver v2 */
        .core_version = "NeuronCore-v2",
        .link_version = "NeuronLink-v2",
        .pci_device_id = 0x7264,        /* driver */
        .cores = 2,                     /* inf2, 001 */
        .memory_bytes = 32 * GiB_BYTES, /* inf2: 32 GiB HBM */
        .memory_kind = "HBM",
        .memory_bandwidth = 820 * GiB, /* inf2: 820 GiB/sec */
        .dma_bandwidth = 1e12,         /* inf2: 1 TB/sec */
        .dma_engines = 34,             /* driver v2: 16 per core + 2 host */
        .link_bandwidth = 192 * GiB,   /* inf2-arch.rst: NeuronLink-v2, 192 GiB/sec/chip */
        .fp16_tflops = 190,            /* inf2, 001 */
};

/* Trainium (Trn1). */
static const struct catalog_chip chip_trainium = {
        .family = "Trainium",
        .device_name = "Trainium1", /* driver v2 */
        .arch = "NDv2",             /* driver v2 */
        .core_arch = "NCv2",        /* driver v2 */
        .core_version = "NeuronCore-v2",
        .link_version = "NeuronLink-v2",
        .pci_device_id = 0x7164,        /* driver */
        .cores = 2,                     /* 002: 2 x NeuronCore-v2 */
        .memory_bytes = 32 * GiB_BYTES, /* 002: 32 GiB */
        .memory_kind = "HBM",
        .memory_bandwidth = 820 * GiB, /* 002: 820 GiB/sec */
        .dma_bandwidth = 1e12,         /* 002: 1 TB/sec */
        .dma_engines = 34,             /* driver v2: 16 per core + 2 host */
        .link_bandwidth = 384 * GiB,   /* trn1-arch.rst: NeuronLink-v2, 384 GiB/s (trn1n: 768) */
        .fp16_tflops = 190,            /* 002: 190 FP16/BF16 TFLOPS */
};

/* Trainium2 (Trn2). Physical cores: tools show 4 logical at LNC=2. */
static const struct catalog_chip chip_trainium2 = {
        .family = "Trainium2",
        .device_name = "Trainium2", /* driver v3 */
        .arch = "NDv3",             /* driver v3 */
        .core_arch = "NCv3",        /* driver v3 */
        .core_version = "NeuronCore-v3",
        .link_version = "NeuronLink-v3",
        .pci_device_id = 0x7364,        /* driver */
        .cores = 8,                     /* trainium2.rst: eight NeuronCore-v3 (physical) */
        .memory_bytes = 96 * GiB_BYTES, /* trainium2.rst: 96 GiB; nki: 4 HBM stacks */
        .memory_kind = "HBM",
        .memory_bandwidth = 2.9e12, /* trainium2.rst: 2.9 TB/sec */
        .dma_bandwidth = 3.5e12,    /* trainium2.rst: 3.5 TB/sec */
        .dma_engines = 132,         /* driver v3: 16 per core + 4 host */
        .link_bandwidth = 1024e9,   /* trn2-arch.rst: 1,024 GB/sec/chip intra-instance */
        .fp16_tflops = 667,         /* trainium2.rst: 667 BF16/FP16/TF32 */
};

/* Trainium3 (Trn3). */
static const struct catalog_chip chip_trainium3 = {
        .family = "Trainium3",
        .device_name = "Trainium3", /* driver v4 */
        .arch = "NDv4",             /* driver v4 */
        .core_arch = "NCv4",        /* driver v4 */
        .core_version = "NeuronCore-v4",
        .link_version = "NeuronLink-v4",
        .pci_device_id = 0x7564,         /* driver: 0x7564, 0x7565 */
        .cores = 8,                      /* trainium3.rst: eight NeuronCore-v4 (LNC 1 or 2) */
        .memory_bytes = 144 * GiB_BYTES, /* 003: 20,736 GiB / 144 devices; nki: 4 HBM stacks */
        .memory_kind = "HBM",
        /* 003: 705.6 TB/s / 144 = 4.9 TB/s (the NKI guide says 4.7; we
         * follow the seed so the UltraServer totals match 003). */
        .memory_bandwidth = 4.9e12,
        .dma_bandwidth = 4.9e12,      /* trainium3.rst: 4.9 TB/sec */
        .dma_engines = 128,           /* driver v4: 16 per core, its 4 host engines not counted */
        .link_bandwidth = 2048 * GiB, /* 003: NeuronLink-v4 2,048 GiB/sec/device */
        .fp16_tflops = 671,           /* 003: 96,624 / 144 = 42,944 / 64 = 671 */
        .mxfp8_tflops = 2517,         /* 003: 362,448 / 144 = 161,088 / 64 = 2,517 */
};

/* Device counts, links and host sizes: the instance pages (inf1-arch.rst,
 * inf2-arch.rst, trn1-arch.rst, trn2-arch.rst, 003) unless noted. Torus
 * sizes: 4x4 for 16 devices (trn2-arch.rst: "4x4, 2D Torus"; trn1-arch.rst:
 * "2D Torus"). Laid out by hand, an instance to an entry: clang-format would
 * give each field a line. */
/* clang-format off */
const struct catalog_instance catalog[] = {
        /* inf1-arch.rst: 1 device, no NeuronLink; 4 / 8 GiB and 8 / 16 GiB host. */
        { .name = "inf1.xlarge", .chip = &chip_inferentia, .devices = 1, .topology = TOPOLOGY_NONE,
          .host_vcpus = 4, .host_memory_bytes = 8 * GiB_BYTES },
        { .name = "inf1.2xlarge", .chip = &chip_inferentia, .devices = 1, .topology = TOPOLOGY_NONE,
          .host_vcpus = 8, .host_memory_bytes = 16 * GiB_BYTES },
        /* inf1-arch.rst: NeuronLink-v1 at 32 GiB/s per device; its server
         * diagram (inf1-server-arch.png) chains the devices so the Neuron
         * Core Pipeline can stream activations from one to the next. The
         * model closes the chain into a ring (2 neighbours per device). */
        { .name = "inf1.6xlarge", .chip = &chip_inferentia, .devices = 4, .topology = TOPOLOGY_RING,
          .link_bandwidth = 32 * GiB, .host_vcpus = 24, .host_memory_bytes = 48 * GiB_BYTES },
        { .name = "inf1.24xlarge", .chip = &chip_inferentia, .devices = 16, .topology = TOPOLOGY_RING,
          .link_bandwidth = 32 * GiB, .host_vcpus = 96, .host_memory_bytes = 192 * GiB_BYTES },
        { .name = "inf2.xlarge", .chip = &chip_inferentia2, .devices = 1, .topology = TOPOLOGY_NONE,
          .host_vcpus = 4, .host_memory_bytes = 16 * GiB_BYTES },
        { .name = "inf2.8xlarge", .chip = &chip_inferentia2, .devices = 1, .topology = TOPOLOGY_NONE,
          .host_vcpus = 32, .host_memory_bytes = 128 * GiB_BYTES },
        /* inf2-arch.rst: NeuronLink-v2; its diagram (inf2-topology.png)
         * chains the devices into a ring, 96 GiB/s per link. */
        { .name = "inf2.24xlarge", .chip = &chip_inferentia2, .devices = 6, .topology = TOPOLOGY_RING,
          .link_bandwidth = 192 * GiB, .host_vcpus = 96, .host_memory_bytes = 384 * GiB_BYTES },
        { .name = "inf2.48xlarge", .chip = &chip_inferentia2, .devices = 12, .topology = TOPOLOGY_RING,
          .link_bandwidth = 192 * GiB, .host_vcpus = 192, .host_memory_bytes = 768 * GiB_BYTES },
        { .name = "trn1.2xlarge", .chip = &chip_trainium, .devices = 1, .topology = TOPOLOGY_NONE,
          .host_vcpus = 8, .host_memory_bytes = 32 * GiB_BYTES },
        /* 002: 16 Trainium devices; trn1-arch.rst: 2D Torus. */
        { .name = "trn1.32xlarge", .chip = &chip_trainium, .devices = 16, .topology = TOPOLOGY_TORUS_2D,
          .torus_width = 4, .torus_height = 4, .link_bandwidth = 384 * GiB,
          .host_vcpus = 128, .host_memory_bytes = 512 * GiB_BYTES },
        /* trn1-arch.rst: trn1n doubles NeuronLink to 768 GiB/s per device. */
        { .name = "trn1n.32xlarge", .chip = &chip_trainium, .devices = 16, .topology = TOPOLOGY_TORUS_2D,
          .torus_width = 4, .torus_height = 4, .link_bandwidth = 768 * GiB,
          .host_vcpus = 128, .host_memory_bytes = 512 * GiB_BYTES },
        /* trn2-arch.rst: NeuronLink-v3 4x4 torus, 1,024 GB/s per device. */
        { .name = "trn2.48xlarge", .chip = &chip_trainium2, .devices = 16, .topology = TOPOLOGY_TORUS_2D,
          .torus_width = 4, .torus_height = 4, .link_bandwidth = 1024e9,
          .host_vcpus = 192, .host_memory_bytes = 2048 * GiB_BYTES },
        /* trn2-arch.rst: 4 x trn2u.48xlarge, each a 4x4 torus, plus a ring
         * between same-position chips of the 4 servers at 256 GB/s. */
        { .name = "trn2-ultraserver", .chip = &chip_trainium2, .devices = 64, .topology = TOPOLOGY_TORUS_2D,
          .torus_width = 4, .torus_height = 4, .servers = 4, .link_bandwidth = 1024e9,
          .cross_link_bandwidth = 256e9, .host_vcpus = 768, .host_memory_bytes = 8192 * GiB_BYTES },
        /* 003: 64 devices, all-to-all through NeuronSwitch-v1, 2,048 GiB/s
         * per device; 768 vCPUs, 8,192 GiB host memory. No source gives
         * its number of servers, so it is modelled as one host. */
        { .name = "trn3-gen1-ultraserver", .chip = &chip_trainium3, .devices = 64, .topology = TOPOLOGY_SWITCH,
          .link_bandwidth = 2048 * GiB, .host_vcpus = 768, .host_memory_bytes = 8192 * GiB_BYTES },
        /* 003: 36 servers x 4 devices = 144, all-to-all through two levels
         * of NeuronSwitch-v1; 2,304 vCPUs, 27,648 GiB host memory. */
        { .name = "trn3-gen2-ultraserver", .chip = &chip_trainium3, .devices = 144, .topology = TOPOLOGY_SWITCH,
          .servers = 36, .link_bandwidth = 2048 * GiB, .host_vcpus = 2304, .host_memory_bytes = 27648 * GiB_BYTES },
};
/* clang-format on */

const size_t catalog_size = sizeof(catalog) / sizeof(catalog[0]);

const struct catalog_instance *catalog_find(const char *name) {
        for (size_t i = 0; i < catalog_size; i++)
                if (strcmp(catalog[i].name, name) == 0)
                        return &catalog[i];
        return NULL;
}

/* NCv3 and later: LNC is a feature of NeuronCore-v3 on (trainium2.rst,
 * trainium3.rst: "logical NeuronCore configuration"). */
static bool lnc_capable(const struct catalog_chip *chip) {
        return strncmp(chip->core_arch, "NCv", 3) == 0 && chip->core_arch[3] >= '3';
}

unsigned catalog_default_lnc(const struct catalog_chip *chip) {
        return lnc_capable(chip) ? 2 : 1;
}

bool catalog_lnc_supported(const struct catalog_chip *chip, unsigned lnc) {
        return lnc == 1 || (lnc == 2 && lnc_capable(chip) && chip->cores % 2 == 0);
}

const struct catalog_chip *catalog_chip_by_device_name(const char *device_name) {
        for (size_t i = 0; i < catalog_size; i++)
                if (strcmp(catalog[i].chip->device_name, device_name) == 0)
                        return catalog[i].chip;
        return NULL;
}

const char *catalog_topology_name(const struct catalog_instance *inst) {
        switch (inst->topology) {
        case TOPOLOGY_RING:
                return "ring";
        case TOPOLOGY_TORUS_2D:
                return inst->servers > 1 ? "2d-torus+ring" : "2d-torus";
        case TOPOLOGY_SWITCH:
                return "switch";
        default:
                return "none";
        }
}

static unsigned add_peer(unsigned *peers, unsigned n, unsigned self, unsigned p) {
        if (p == self)
                return n;
        for (unsigned i = 0; i < n; i++)
                if (peers[i] == p)
                        return n;
        peers[n] = p;
        return n + 1;
}

unsigned catalog_topology_peers(const struct catalog_instance *inst, unsigned d, unsigned *ret_peers) {
        unsigned n = 0, devs = inst->devices;

        switch (inst->topology) {
        case TOPOLOGY_RING:
                n = add_peer(ret_peers, n, d, (d + 1) % devs);
                n = add_peer(ret_peers, n, d, (d + devs - 1) % devs);
                break;
        case TOPOLOGY_TORUS_2D: {
                unsigned w = inst->torus_width, h = inst->torus_height, per = w * h;
                unsigned base = d / per * per, pos = d % per, x = pos % w, y = pos / w;
                n = add_peer(ret_peers, n, d, base + y * w + (x + 1) % w);
                n = add_peer(ret_peers, n, d, base + y * w + (x + w - 1) % w);
                n = add_peer(ret_peers, n, d, base + ((y + 1) % h) * w + x);
                n = add_peer(ret_peers, n, d, base + ((y + h - 1) % h) * w + x);
                if (inst->servers > 1) {
                        unsigned s = d / per, k = inst->servers;
                        n = add_peer(ret_peers, n, d, ((s + 1) % k) * per + pos);
                        n = add_peer(ret_peers, n, d, ((s + k - 1) % k) * per + pos);
                }
                break;
        }
        case TOPOLOGY_SWITCH:
                for (unsigned p = 0; p < devs; p++)
                        if (p != d)
                                ret_peers[n++] = p;
                break;
        default:
                break;
        }
        return n;
}
