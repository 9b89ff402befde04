#include "config.h"

#include "collectors/model-internal.h"

/* The model's one source of variety: every simulated value that varies is
 * a function of a hash of the seed, an entity and a simulated second. */

uint64_t model_mix(uint64_t x) {
        x += 0x9e3779b97f4a7c15ull;
        x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
        x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
        return x ^ (x >> 31);
}

double model_noise(const struct model *m, uint64_t entity, int64_t second) {
        return (double) (model_mix(m->seed ^ model_mix(entity ^ model_mix((uint64_t) second))) >> 11) /
               9007199254740992.0;
}
