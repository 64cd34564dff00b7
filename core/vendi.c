/* vendi.c — the Vendi score (vendi.h): unit rows, the smaller of the primal
 * (n x n) and dual (d x d) Gram matrix, its eigenvalues, their entropy.
 *
 * What it is not: an embedding model. spade_vendi_embed is a fixed hashed
 * n-gram count over the normalised source.
 */
#include "vendi.h"

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "errbuf.h"
#include "source.h"

#ifdef SPADE_HAVE_LAPACKE
#include <lapacke.h>
#endif

/* Unit-length copy of X; -1 with a message on a zero or non-finite row. */
static double *unit_rows(const double *X, int n, int d, char *err, size_t errlen) {
    if (n < 1 || d < 1) {
        spade_errf(err, errlen, "vendi: %d items of dimension %d (both must be >= 1)", n, d);
        return NULL;
    }
    double *U = malloc((size_t)n * d * sizeof *U);
    if (!U) {
        spade_errf(err, errlen, "vendi: out of memory for %d x %d", n, d);
        return NULL;
    }
    for (int i = 0; i < n; i++) {
        double ss = 0;
        for (int k = 0; k < d; k++) {
            double v = X[(size_t)i * d + k];
            if (!isfinite(v)) {
                spade_errf(err, errlen, "vendi: item %d has a non-finite feature %d", i, k);
                free(U);
                return NULL;
            }
            ss += v * v;
        }
        if (ss == 0) {
            spade_errf(err, errlen, "vendi: item %d has an all-zero embedding (an empty source?)", i);
            free(U);
            return NULL;
        }
        double s = 1 / sqrt(ss);
        for (int k = 0; k < d; k++) U[(size_t)i * d + k] = X[(size_t)i * d + k] * s;
    }
    return U;
}

/* exp of the entropy of the eigenvalues (clamped at 0: round-off makes tiny
 * negatives), normalised to sum 1 (they sum to trace(K)/n = 1 up to rounding). */
static double entropy_exp(const double *w, int m) {
    double sum = 0, h = 0;
    for (int i = 0; i < m; i++) sum += w[i] > 0 ? w[i] : 0;
    for (int i = 0; i < m; i++) {
        double l = w[i] > 0 ? w[i] / sum : 0;
        if (l > 0) h -= l * log(l);
    }
    return exp(h);
}

/* Eigenvalues of the symmetric m x m matrix A (destroyed) into w, by cyclic
 * Jacobi rotations until the off-diagonal mass is negligible. */
static void jacobi_eigenvalues(double *A, int m, double *w) {
    for (int sweep = 0; sweep < 100; sweep++) {
        double off = 0, diag = 0;
        for (int p = 0; p < m; p++) {
            diag += A[(size_t)p * m + p] * A[(size_t)p * m + p];
            for (int q = p + 1; q < m; q++) off += A[(size_t)p * m + q] * A[(size_t)p * m + q];
        }
        if (off <= 1e-30 * (diag > 0 ? diag : 1)) break;
        for (int p = 0; p < m; p++)
            for (int q = p + 1; q < m; q++) {
                double apq = A[(size_t)p * m + q];
                if (fabs(apq) < 1e-300) continue;
                double app = A[(size_t)p * m + p], aqq = A[(size_t)q * m + q];
                double theta = (aqq - app) / (2 * apq);
                double t = (theta >= 0 ? 1 : -1) / (fabs(theta) + sqrt(theta * theta + 1));
                double c = 1 / sqrt(t * t + 1), s = t * c;
                for (int k = 0; k < m; k++) { /* rotate rows/columns p and q */
                    double akp = A[(size_t)k * m + p], akq = A[(size_t)k * m + q];
                    A[(size_t)k * m + p] = c * akp - s * akq;
                    A[(size_t)k * m + q] = s * akp + c * akq;
                }
                for (int k = 0; k < m; k++) {
                    double apk = A[(size_t)p * m + k], aqk = A[(size_t)q * m + k];
                    A[(size_t)p * m + k] = c * apk - s * aqk;
                    A[(size_t)q * m + k] = s * apk + c * aqk;
                }
            }
    }
    for (int i = 0; i < m; i++) w[i] = A[(size_t)i * m + i];
}

/* G = U U^T / n (primal, m = n) or U^T U / n (dual, m = d). */
static double *gram(const double *U, int n, int d, int dual, int *m_out) {
    int m = dual ? d : n;
    double *G = calloc((size_t)m * m, sizeof *G);
    if (!G) return NULL;
    for (int a = 0; a < m; a++)
        for (int b = a; b < m; b++) {
            double s = 0;
            if (dual)
                for (int i = 0; i < n; i++) s += U[(size_t)i * d + a] * U[(size_t)i * d + b];
            else
                for (int k = 0; k < d; k++) s += U[(size_t)a * d + k] * U[(size_t)b * d + k];
            G[(size_t)a * m + b] = G[(size_t)b * m + a] = s / n;
        }
    *m_out = m;
    return G;
}

static int score_with(const double *X, int n, int d, double *score, int reference, char *err, size_t errlen) {
    double *U = unit_rows(X, n, d, err, errlen);
    if (!U) return -1;
    int m = 0, dual = !reference && d < n;
    double *G = gram(U, n, d, dual, &m), *w = malloc((size_t)(n > d ? n : d) * sizeof *w);
    free(U);
    if (!G || !w) {
        free(G);
        free(w);
        spade_errf(err, errlen, "vendi: out of memory for a %d x %d kernel", n, n);
        return -1;
    }
    int rc = 0;
#ifdef SPADE_HAVE_LAPACKE
    if (!reference) {
        int info = LAPACKE_dsyevd(LAPACK_ROW_MAJOR, 'N', 'U', m, G, m, w);
        if (info != 0) {
            spade_errf(err, errlen, "vendi: LAPACK dsyevd failed (info %d) on a %d x %d kernel", info, m, m);
            rc = -1;
        }
    } else
#endif
        jacobi_eigenvalues(G, m, w);
    if (rc == 0) *score = entropy_exp(w, m);
    free(G);
    free(w);
    return rc;
}

int spade_vendi(const double *X, int n, int d, double *score, char *err, size_t errlen) {
    return score_with(X, n, d, score, 0, err, errlen);
}

int spade_vendi_ref(const double *X, int n, int d, double *score, char *err, size_t errlen) {
    return score_with(X, n, d, score, 1, err, errlen);
}

void spade_vendi_embed(const char *src, size_t len, double *x, int d) {
    char *t = malloc(len + 1);
    memset(x, 0, (size_t)d * sizeof *x);
    if (!t || d < 1) {
        free(t);
        return;
    }
    size_t n = spade_source_normalise(src, len, t, len + 1);
    size_t grams = n >= SPADE_VENDI_NGRAM ? n - SPADE_VENDI_NGRAM + 1 : (n ? 1 : 0);
    for (size_t i = 0; i < grams; i++) {
        uint64_t h = 1469598103934665603ULL;
        for (size_t k = i; k < i + SPADE_VENDI_NGRAM && k < n; k++) h = (h ^ (unsigned char)t[k]) * 1099511628211ULL;
        x[(h ^ (h >> 29)) % (uint64_t)d] += 1;
    }
    free(t);
}
