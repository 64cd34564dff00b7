/* vendi.h — diversity of a set of environments: the Vendi score of their
 * embeddings under a cosine kernel, and the default embedding (hashed
 * character n-grams of the normalised source).
 *
 * What it is: Vendi(X) = exp(-sum_i l_i log l_i), l_i the eigenvalues of K/n,
 * K[a][b] = cos(x_a, x_b) over the n rows of X (n x d). It is 1 for n copies
 * of one environment and n for n environments with nothing in common; spade
 * reports Vendi/n (1/n .. 1). With a linear kernel the nonzero eigenvalues of
 * K/n = X'X'^T/n (X' = X with unit rows) are those of X'^T X'/n, so when d < n
 * the d x d dual is decomposed instead: thousands of environments stay cheap.
 * Eigenvalues come from LAPACK (dsyevd) when configure found LAPACKE, else
 * from spade_vendi_ref's Jacobi sweeps; the reference path is what the tests
 * compare the fast one against.
 * What it is not: a measure of quality or difficulty, nor of what an
 * environment does at run time (two files that play alike but are written
 * differently count as different; the policy's hidden states could later give
 * a semantic embedding with the same score function).
 */
#ifndef SPADE_VENDI_H
#define SPADE_VENDI_H

#include <stddef.h>

/* Default embedding width (hashed n-gram buckets) and n-gram length. */
#define SPADE_VENDI_DIM 1024
#define SPADE_VENDI_NGRAM 5

/* Vendi score of the n rows of X (n x d, row-major); rows are scaled to unit
 * length here. A zero row (an empty source) is an error, so is n < 1 or d < 1
 * or a non-finite entry. 0, or -1 with a message. */
int spade_vendi(const double *X, int n, int d, double *score, char *err, size_t errlen);
/* The same by the direct O(n^3) route: the n x n kernel, cyclic Jacobi. */
int spade_vendi_ref(const double *X, int n, int d, double *score, char *err, size_t errlen);

/* The embedding of one environment source: counts of hashed character
 * SPADE_VENDI_NGRAM-grams of its normalised text (spade_source_normalise),
 * into x[0..d). A source shorter than one n-gram counts as one gram. */
void spade_vendi_embed(const char *src, size_t len, double *x, int d);

#endif /* SPADE_VENDI_H */
