/* source.h — environment source text as the archive, the held-out guard and
 * the diversity measure compare it: C comments and whitespace removed, string
 * and character literals kept byte for byte.
 *
 * What it is: one normaliser, so "the same environment" means one thing
 * everywhere. What it is not: a C parser (no preprocessing; a '/' '*' inside
 * a literal is literal text, which is all it needs to know).
 */
#ifndef SPADE_SOURCE_H
#define SPADE_SOURCE_H

#include <stddef.h>
#include <stdint.h>

/* Writes the normalised text of src into out (at most cap - 1 bytes, NUL-
 * terminated; cap >= len + 1 always suffices) and returns its length. */
size_t spade_source_normalise(const char *src, size_t len, char *out, size_t cap);

/* FNV-1a 64 of the normalised text. */
uint64_t spade_source_fingerprint(const char *src, size_t len);

#endif /* SPADE_SOURCE_H */
