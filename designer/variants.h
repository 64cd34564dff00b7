/* variants.h — mechanical rewrites of an environment source for designer
 * demonstrations: a copy with another name, other param defaults (within
 * each param's range) and renamed static helpers, so that a small base
 * designer sees "grounding source in the prompt -> a changed source that
 * still works" pairs (spade demos --designer).
 * What it is not: a checker. A rewrite can still break an environment (a
 * default that makes SOLVE too slow, a new name that clashes); the caller
 * runs spade check on every variant and keeps only those that pass.
 */
#ifndef SPADE_DESIGNER_VARIANTS_H
#define SPADE_DESIGNER_VARIANTS_H

#include <stddef.h>
#include <stdint.h>

#include "host.h"

/* One variant of src (whose loaded info is info), chosen by seed: the ENV name
 * gets a suffix, each param's default moves to another value in [min, max]
 * with probability 1/2 (at least one change), and each "static T name(" helper is
 * renamed (outside strings and comments) with probability 1/2. *out is
 * malloc'd. 0, or -1 with err (out of memory, no ENV(" found). */
int spade_variant_make(const char *src, size_t len, const spade_env_info *info, uint64_t seed, char **out,
                       size_t *out_len, char *err, size_t errlen);

/* The same, and what (what_cap bytes, may be NULL) receives the change in
 * words, one sentence each, as a rewrite request states it: "Name it
 * nim_alt. Make heaps 5 by default. Rename the helper pile to pile_neo." */
int spade_variant_make_told(const char *src, size_t len, const spade_env_info *info, uint64_t seed, char **out,
                            size_t *out_len, char *what, size_t what_cap, char *err, size_t errlen);

#endif /* SPADE_DESIGNER_VARIANTS_H */
