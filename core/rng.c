/* rng.c — the self-play streams (rng.h).
 *
 * What it is not: splitmix64 itself (its definition is the checker's,
 * core/check.c, declared in both headers).
 */
#include "rng.h"

uint64_t spade_rng_stream(uint64_t seed, int it, int slot, uint64_t tag)
{
    return spade_mix64(seed ^ spade_mix64(((uint64_t)it << 32) ^ ((uint64_t)slot << 8) ^ tag));
}
