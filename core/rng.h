/* rng.h — the seeded streams a run draws from: splitmix64, its pure hash, and
 * the stream of (run seed, iteration, slot, tag) that self-play draws each
 * prompt, sample, hint and seed from, so that a resumed run draws exactly what
 * an uninterrupted one did.
 *
 * What it is not: the environments' generator (xoshiro256** in
 * dsl/runtime.c), nor the checker's random actions (check.h).
 */
#ifndef SPADE_RNG_H
#define SPADE_RNG_H

#include <stdint.h>

/* One step of splitmix64 on *state (advanced); identical on every platform. */
uint64_t spade_splitmix64(uint64_t *state);
/* The output of spade_splitmix64 for state x (a pure hash of x: seeds derived
 * from other seeds). */
uint64_t spade_mix64(uint64_t x);

/* The seed of stream `tag` of slot `slot` at iteration `it` of a run seeded
 * `seed`. A tag names what is drawn (below); tag + k is its k-th seed. */
uint64_t spade_rng_stream(uint64_t seed, int it, int slot, uint64_t tag);

/* The self-play loop's tags (ASCII, so a seed's origin can be read back). */
#define SPADE_RNG_PROMPT 0x70726f6dULL /* "prom": the corpus draw and the memory of a prompt */
#define SPADE_RNG_SOURCE 0x736f7572ULL /* "sour": the designer's source */
#define SPADE_RNG_TEMPLATE 0x746d706cULL /* "tmpl": a template's holes */
#define SPADE_RNG_HINT 0x68696e74ULL /* "hint": a self-written hint */
#define SPADE_RNG_AGENT 0x61676e74ULL /* "agnt": the agent's sampling in the paired plays and the look-ahead */
#define SPADE_RNG_SEED 0x73656564ULL /* "seed" + k: the k-th distinct seed of the paired plays */

#endif /* SPADE_RNG_H */
