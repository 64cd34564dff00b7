/* rng.c — splitmix64 and the self-play streams (rng.h): the one place a seed
 * becomes a draw. What it is not: a generator with state of its own.
 */
#include "rng.h"

uint64_t spade_splitmix64(uint64_t *state) {
    uint64_t z = (*state += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

uint64_t spade_mix64(uint64_t x) { return spade_splitmix64(&x); }

uint64_t spade_rng_stream(uint64_t seed, int it, int slot, uint64_t tag) {
    return spade_mix64(seed ^ spade_mix64(((uint64_t)it << 32) ^ ((uint64_t)slot << 8) ^ tag));
}
