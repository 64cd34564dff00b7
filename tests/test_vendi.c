/* test_vendi.c — Check suite for the Vendi score (core/vendi.h) and the source
 * normaliser it embeds (core/source.h).
 *
 * What it is: the fast path (LAPACK, primal or d x d dual) against the direct
 * O(n^3) Jacobi reference on random sets; hand-built sets with known answers
 * (n identical -> 1, n orthogonal -> n, two groups -> 2); the dual route equal
 * to the primal one; bad input refused; the embedding blind to comments and
 * layout and not to code; stdenv/ more diverse than copies of one file.
 * What it is not: a test of the CLI (tests/test_cli.sh runs `spade vendi`).
 */
#include <check.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "registry.h"
#include "source.h"
#include "testutil.h"
#include "vendi.h"

/* Every test starts its draws from this state (rng_reset, a checked fixture), as in Check's fork
 * mode, also with CK_FORK=no where the tests share one process. */
#define RNG_SEED 0x5eed
static uint64_t rng = RNG_SEED;
static void rng_reset(void) { rng = RNG_SEED; }
static double uniform(void) {
    rng ^= rng << 13, rng ^= rng >> 7, rng ^= rng << 17;
    return (double)(rng >> 11) / 9007199254740992.0;
}

static double vendi(const double *X, int n, int d) {
    char err[512];
    double v = -1;
    ck_assert_msg(spade_vendi(X, n, d, &v, err, sizeof err) == 0, "%s", err);
    return v;
}
static double vendi_ref(const double *X, int n, int d) {
    char err[512];
    double v = -1;
    ck_assert_msg(spade_vendi_ref(X, n, d, &v, err, sizeof err) == 0, "%s", err);
    return v;
}

START_TEST(identical_items_score_one) {
    double X[20 * 8];
    for (int i = 0; i < 20; i++)
        for (int k = 0; k < 8; k++) X[i * 8 + k] = (k + 1) * (i % 2 ? 3.0 : 1.0); /* same direction, other lengths */
    ck_assert_double_eq_tol(vendi(X, 20, 8), 1.0, 1e-9);
    ck_assert_double_eq_tol(vendi_ref(X, 20, 8), 1.0, 1e-9);
}
END_TEST

START_TEST(orthogonal_items_score_n) {
    enum { n = 12, d = 16 };
    double X[n * d] = {0};
    for (int i = 0; i < n; i++) X[i * d + i] = 1 + i;
    ck_assert_double_eq_tol(vendi(X, n, d), n, 1e-9);
    ck_assert_double_eq_tol(vendi_ref(X, n, d), n, 1e-9);
    /* more items than dimensions: the dual route, two orthogonal groups of 10 -> 2 */
    double Y[20 * 2] = {0};
    for (int i = 0; i < 20; i++) Y[i * 2 + (i % 2)] = 1;
    ck_assert_double_eq_tol(vendi(Y, 20, 2), 2.0, 1e-9);
    ck_assert_double_eq_tol(vendi_ref(Y, 20, 2), 2.0, 1e-9);
}
END_TEST

/* Random non-negative sets, n < d (primal) and n > d (dual), against the reference. */
START_TEST(fast_path_equals_reference) {
    static const int shapes[][2] = {{5, 40}, {30, 8}, {64, 64}, {100, 12}, {1, 3}, {17, 200}};
    for (size_t s = 0; s < sizeof shapes / sizeof *shapes; s++) {
        int n = shapes[s][0], d = shapes[s][1];
        double *X = malloc((size_t)n * d * sizeof *X);
        for (int i = 0; i < n * d; i++) X[i] = uniform() < 0.3 ? uniform() : 0;
        for (int i = 0; i < n; i++) X[(size_t)i * d + i % d] += 0.5; /* no zero row */
        double a = vendi(X, n, d), b = vendi_ref(X, n, d);
        ck_assert_msg(fabs(a - b) <= 1e-8 * b, "n %d d %d: fast %.12f reference %.12f", n, d, a, b);
        ck_assert(a >= 1 - 1e-9 && a <= n + 1e-9);
        free(X);
    }
}
END_TEST

START_TEST(bad_input_is_refused) {
    char err[512];
    double v, X[6] = {1, 0, 0, 0, 0, 0};
    ck_assert_int_eq(spade_vendi(X, 2, 3, &v, err, sizeof err), -1);
    ck_assert_ptr_nonnull(strstr(err, "item 1"));
    ck_assert_int_eq(spade_vendi(X, 0, 3, &v, err, sizeof err), -1);
    X[3] = NAN;
    ck_assert_int_eq(spade_vendi(X, 2, 3, &v, err, sizeof err), -1);
    ck_assert_ptr_nonnull(strstr(err, "non-finite"));
}
END_TEST

START_TEST(normaliser_strips_comments_and_layout_only) {
    const char *src = "int  a = 1; /* x */ // y\nsay(\"a  /* b */\");\n'\"' ;";
    char out[128];
    size_t n = spade_source_normalise(src, strlen(src), out, sizeof out);
    ck_assert_str_eq(out, "inta=1;say(\"a  /* b */\");'\"';");
    ck_assert_uint_eq(n, strlen(out));
    n = spade_source_normalise(src, strlen(src), out, 5); /* truncated, still terminated */
    ck_assert_uint_eq(n, 4);
    ck_assert_str_eq(out, "inta");
    ck_assert(spade_source_fingerprint("a b", 3) == spade_source_fingerprint("ab /**/", 7));
    ck_assert(spade_source_fingerprint("a b", 3) != spade_source_fingerprint("ac", 2));
}
END_TEST

START_TEST(embedding_sees_code_not_layout) {
    const char *a = "STEP { if (parse_int(action) == S->x) win(); else lose(); }";
    const char *b = "// same code\nSTEP {\n    if (parse_int(action) == S->x) win();\n    else lose();\n}\n";
    const char *c = "RESET { for (int i = 0; i < n; i++) S->heap[i] = rand_range(1, size); show(); }";
    double xa[SPADE_VENDI_DIM], xb[SPADE_VENDI_DIM], xc[SPADE_VENDI_DIM];
    spade_vendi_embed(a, strlen(a), xa, SPADE_VENDI_DIM);
    spade_vendi_embed(b, strlen(b), xb, SPADE_VENDI_DIM);
    spade_vendi_embed(c, strlen(c), xc, SPADE_VENDI_DIM);
    ck_assert_mem_eq(xa, xb, sizeof xa);
    double X[2 * SPADE_VENDI_DIM];
    memcpy(X, xa, sizeof xa);
    memcpy(X + SPADE_VENDI_DIM, xc, sizeof xc);
    double v = vendi(X, 2, SPADE_VENDI_DIM);
    ck_assert_msg(v > 1.8, "two unrelated snippets score %.3f of 2", v);
}
END_TEST

/* The 16+ hand-written environments are far from n copies of one. */
/* The embedding counts exactly the 5-grams (SPADE_VENDI_NGRAM, vendi.h) of the
 * normalised text, each FNV-1a hashed into a bucket: computed here the slow
 * way with the length written out, so a gram one longer or shorter fails. */
START_TEST(embedding_counts_the_five_grams) {
    ck_assert_int_eq(SPADE_VENDI_NGRAM, 5);
    const char *text = "abcdefghij"; /* an identifier: the normaliser keeps it as it is */
    enum { D = 64 };
    double x[D], want[D] = {0};
    spade_vendi_embed(text, strlen(text), x, D);
    for (size_t i = 0; i + 5 <= strlen(text); i++) {
        uint64_t h = 1469598103934665603ULL;
        for (size_t k = i; k < i + 5; k++) h = (h ^ (unsigned char)text[k]) * 1099511628211ULL;
        want[(h ^ (h >> 29)) % D] += 1;
    }
    for (int k = 0; k < D; k++) ck_assert_msg(x[k] == want[k], "bucket %d: %g, the 5-grams give %g", k, x[k], want[k]);
}
END_TEST

START_TEST(stdenv_is_diverse) {
    const char *names[] = {"maze", "nim", "bank", "carry_add", "hanoi", "latin", "push", "modpow"};
    int n = (int)(sizeof names / sizeof *names), d = SPADE_VENDI_DIM;
    double *X = malloc((size_t)n * d * sizeof *X), *Y = malloc((size_t)n * d * sizeof *Y);
    for (int i = 0; i < n; i++) {
        char path[4096], err[512], *src;
        size_t len;
        snprintf(path, sizeof path, "%s/stdenv/%s.c", tu_srcdir(), names[i]);
        ck_assert_msg(spade_read_source(path, &src, &len, err, sizeof err) == 0, "%s", err);
        spade_vendi_embed(src, len, X + (size_t)i * d, d);
        if (i == 0)
            for (int k = 0; k < n; k++) memcpy(Y + (size_t)k * d, X, (size_t)d * sizeof *X);
        free(src);
    }
    double diverse = vendi(X, n, d) / n, copies = vendi(Y, n, d) / n;
    ck_assert_double_eq_tol(copies, 1.0 / n, 1e-9);
    ck_assert_msg(diverse > 0.5, "stdenv Vendi/n %.3f", diverse);
    free(X);
    free(Y);
}
END_TEST

int main(void) {
    Suite *s = suite_create("vendi");
    TCase *c = tcase_create("vendi");
    tcase_add_checked_fixture(c, rng_reset, NULL);
    tcase_set_timeout(c,
                      60); /* not Check's default 4 s: the reference path takes 0.3 s here, more on a loaded machine */
    tcase_add_test(c, identical_items_score_one);
    tcase_add_test(c, orthogonal_items_score_n);
    tcase_add_test(c, fast_path_equals_reference);
    tcase_add_test(c, bad_input_is_refused);
    tcase_add_test(c, normaliser_strips_comments_and_layout_only);
    tcase_add_test(c, embedding_sees_code_not_layout);
    tcase_add_test(c, embedding_counts_the_five_grams);
    tcase_add_test(c, stdenv_is_diverse);
    suite_add_tcase(s, c);
    return tu_run(s);
}
