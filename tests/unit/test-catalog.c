/* The device model's catalog against the published figures (the chip and
 * instance pages of aws-neuron-sdk about-neuron/arch/neuron-hardware/, seeds
 * 001-003, aws-neuron-driver), written out here independently of the
 * catalog, which names the source of each. */
#include "config.h"

#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "collectors/model.h"

#define GiB 1073741824.0
#define GIB_BYTES 1073741824ull

struct expected_row {
        const char *name;
        unsigned devices, cores;
        uint64_t memory_gib; /* device memory in all */
        double memory_bw;    /* bytes/s in all */
        const char *topology;
        unsigned peers; /* per device */
        double link_bw; /* per device, bytes/s, in-server plus between servers */
        unsigned vcpus;
        uint64_t host_gib;
        const char *device_name, *arch, *core_arch;
};

/* The instance pages, with the chip pages' per-chip bandwidth (inf1:
 * inf1-arch.rst gives 50, 200 and 800 GiB/s for 1, 4 and 16 devices). */
static const struct expected_row rows[] = {
        { "inf1.xlarge", 1, 4, 8, 50 * GiB, "none", 0, 0, 4, 8, "Inferentia", "NDv1", "NCv1" },
        { "inf1.2xlarge", 1, 4, 8, 50 * GiB, "none", 0, 0, 8, 16, "Inferentia", "NDv1", "NCv1" },
        { "inf1.6xlarge", 4, 16, 32, 200 * GiB, "ring", 2, 32 * GiB, 24, 48, "Inferentia", "NDv1", "NCv1" },
        { "inf1.24xlarge", 16, 64, 128, 800 * GiB, "ring", 2, 32 * GiB, 96, 192, "Inferentia", "NDv1", "NCv1" },
        { "inf2.xlarge", 1, 2, 32, 820 * GiB, "none", 0, 0, 4, 16, "Inferentia2", "NDv3", "NCv2" },
        { "inf2.8xlarge", 1, 2, 32, 820 * GiB, "none", 0, 0, 32, 128, "Inferentia2", "NDv3", "NCv2" },
        { "inf2.24xlarge", 6, 12, 192, 6 * 820 * GiB, "ring", 2, 192 * GiB, 96, 384, "Inferentia2", "NDv3", "NCv2" },
        { "inf2.48xlarge", 12, 24, 384, 12 * 820 * GiB, "ring", 2, 192 * GiB, 192, 768, "Inferentia2", "NDv3", "NCv2" },
        { "trn1.2xlarge", 1, 2, 32, 820 * GiB, "none", 0, 0, 8, 32, "Trainium1", "NDv2", "NCv2" },
        /* 001 says 9.8-13.1 TB/s for 16 devices: 16 x 820 GiB/s = 13,120 GiB/s. */
        { "trn1.32xlarge", 16, 32, 512, 13120 * GiB, "2d-torus", 4, 384 * GiB, 128, 512, "Trainium1", "NDv2", "NCv2" },
        { "trn1n.32xlarge", 16, 32, 512, 13120 * GiB, "2d-torus", 4, 768 * GiB, 128, 512, "Trainium1", "NDv2", "NCv2" },
        { "trn2.48xlarge", 16, 128, 1536, 16 * 2.9e12, "2d-torus", 4, 1024e9, 192, 2048, "Trainium2", "NDv3", "NCv3" },
        { "trn2-ultraserver", 64, 512, 6144, 64 * 2.9e12, "2d-torus+ring", 6, 1024e9 + 256e9, 768, 8192, "Trainium2",
          "NDv3", "NCv3" },
        /* 003: 9,216 GiB and 313.6 TB/s; 20,736 GiB and 705.6 TB/s. */
        { "trn3-gen1-ultraserver", 64, 512, 9216, 313.6e12, "switch", 63, 2048 * GiB, 768, 8192, "Trainium3", "NDv4",
          "NCv4" },
        { "trn3-gen2-ultraserver", 144, 1152, 20736, 705.6e12, "switch", 143, 2048 * GiB, 2304, 27648, "Trainium3",
          "NDv4", "NCv4" },
};

static bool near(double a, double b, double rel) {
        return fabs(a - b) <= rel * fabs(b);
}

static void catalog__every_row__matches_published_figures(void **state) {
        assert_int_equal(catalog_size, sizeof(rows) / sizeof(rows[0]));
        for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
                const struct expected_row *e = &rows[i];
                const struct catalog_instance *m = catalog_find(e->name);
                print_message("# %s\n", e->name);
                assert_non_null(m);
                assert_string_equal(m->name, e->name);
                assert_int_equal(m->devices, e->devices);
                assert_int_equal(m->devices * m->chip->cores, e->cores);
                assert_true((uint64_t) m->devices * m->chip->memory_bytes == e->memory_gib * GIB_BYTES);
                /* "Within rounding": the published totals carry 3-4 digits. */
                assert_true(near(m->devices * m->chip->memory_bandwidth, e->memory_bw, 0.005));
                assert_string_equal(catalog_topology_name(m), e->topology);
                assert_true(near(m->link_bandwidth + m->cross_link_bandwidth, e->link_bw, 1e-9) ||
                            (e->link_bw == 0 && m->link_bandwidth == 0));
                assert_int_equal(m->host_vcpus, e->vcpus);
                assert_true(m->host_memory_bytes == e->host_gib * GIB_BYTES);
                assert_string_equal(m->chip->device_name, e->device_name);
                assert_string_equal(m->chip->arch, e->arch);
                assert_string_equal(m->chip->core_arch, e->core_arch);
        }
}

/* The chip pages and the driver, chip by chip. */
static void catalog__chips__match_published_figures(void **state) {
        static const struct {
                const char *instance;
                const char *core_version, *link_version;
                unsigned cores, pci;
                uint64_t memory_bytes;
                double memory_bw, dma_bw, fp16;
                unsigned dma_engines;
        } chips[] = {
                { "inf1.xlarge", "NeuronCore-v1", "NeuronLink-v1", 4, 0x7064, 8589934592ull, 50 * GiB, 0, 64, 12 },
                { "inf2.xlarge", "NeuronCore-v2", "NeuronLink-v2", 2, 0x7264, 34359738368ull, 820 * GiB, 1e12, 190,
                  34 },
                { "trn1.2xlarge", "NeuronCore-v2", "NeuronLink-v2", 2, 0x7164, 34359738368ull, 820 * GiB, 1e12, 190,
                  34 },
                { "trn2.48xlarge", "NeuronCore-v3", "NeuronLink-v3", 8, 0x7364, 103079215104ull, 2.9e12, 3.5e12, 667,
                  132 },
                { "trn3-gen2-ultraserver", "NeuronCore-v4", "NeuronLink-v4", 8, 0x7564, 154618822656ull, 4.9e12, 4.9e12,
                  671, 128 },
        };
        for (size_t i = 0; i < sizeof(chips) / sizeof(chips[0]); i++) {
                const struct catalog_chip *c = catalog_find(chips[i].instance)->chip;
                assert_string_equal(c->core_version, chips[i].core_version);
                assert_string_equal(c->link_version, chips[i].link_version);
                assert_int_equal(c->cores, chips[i].cores);
                assert_int_equal(c->pci_device_id, chips[i].pci);
                assert_true(c->memory_bytes == chips[i].memory_bytes);
                assert_true(near(c->memory_bandwidth, chips[i].memory_bw, 1e-9));
                /* Inferentia's DMA bandwidth is not documented: the model
                 * caps it at the memory bandwidth. */
                assert_true(near(c->dma_bandwidth, chips[i].dma_bw ? chips[i].dma_bw : c->memory_bandwidth, 1e-9));
                assert_true(near(c->fp16_tflops, chips[i].fp16, 1e-9));
                assert_int_equal(c->dma_engines, chips[i].dma_engines);
        }
        /* 003: UltraServer compute totals. */
        const struct catalog_instance *g1 = catalog_find("trn3-gen1-ultraserver");
        const struct catalog_instance *g2 = catalog_find("trn3-gen2-ultraserver");
        assert_true(near(g1->devices * g1->chip->fp16_tflops, 42944, 1e-9));
        assert_true(near(g2->devices * g2->chip->fp16_tflops, 96624, 1e-9));
        assert_true(near(g1->devices * g1->chip->mxfp8_tflops, 161088, 1e-9));
        assert_true(near(g2->devices * g2->chip->mxfp8_tflops, 362448, 1e-9));
}

static void catalog__unknown_name__returns_null(void **state) {
        assert_null(catalog_find("p5.48xlarge"));
        assert_null(catalog_find(""));
        assert_null(catalog_find("trn1.32XLARGE"));
}

/* Links go both ways, never to the device itself, and the trn2
 * UltraServer ring joins same-position chips of neighbouring servers. */
static void catalog_topology_peers__every_instance__is_symmetric(void **state) {
        unsigned peers[256], back[256];
        for (size_t i = 0; i < catalog_size; i++) {
                const struct catalog_instance *m = &catalog[i];
                for (unsigned d = 0; d < m->devices; d++) {
                        unsigned n = catalog_topology_peers(m, d, peers);
                        assert_int_equal(n, rows[i].peers);
                        for (unsigned j = 0; j < n; j++) {
                                assert_int_not_equal(peers[j], d);
                                assert_true(peers[j] < m->devices);
                                unsigned nb = catalog_topology_peers(m, peers[j], back);
                                bool found = false;
                                for (unsigned k = 0; k < nb; k++)
                                        found = found || back[k] == d;
                                assert_true(found);
                        }
                }
        }
        const struct catalog_instance *us = catalog_find("trn2-ultraserver");
        unsigned n = catalog_topology_peers(us, 5, peers);
        /* Device 5 is (1,1) of server 0: torus 6, 4, 9, 1; ring 21, 53. */
        unsigned want[] = { 6, 4, 9, 1, 21, 53 };
        assert_int_equal(n, 6);
        for (unsigned j = 0; j < n; j++)
                assert_int_equal(peers[j], want[j]);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(catalog__every_row__matches_published_figures),
                cmocka_unit_test(catalog__chips__match_published_figures),
                cmocka_unit_test(catalog__unknown_name__returns_null),
                cmocka_unit_test(catalog_topology_peers__every_instance__is_symmetric),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
