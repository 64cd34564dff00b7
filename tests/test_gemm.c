/* test_gemm.c — Check suite for spade's own SGEMM (core/policy/gemm.h).
 *
 * What it is: every kernel this CPU runs (c, avx2, avx512), at every shape
 * class the cpu backend calls it with — the matmul forward (A times B^T),
 * its two backward products (A B and A^T B), the attention strips, the
 * decoding rows (1 to 63 rows) — at odd sizes, one row, sizes that are not
 * multiples of a tile or a block, strided sub-matrices, alpha and beta,
 * against a reference summed in double. The bound on each output is
 * 8 K eps sum_k |a_ik b_kj| (the float error of any summation order is at most
 * about K eps times that sum).
 * What it is not: the backend-level comparisons against cpu_ref
 * (tests/test_policy.c, test_llama.c, test_attention.c), or a benchmark
 * (bench/bench_gemm.c).
 */
#include <check.h>
#include <float.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "policy/gemm.h"
#include "testutil.h"

/* Every test starts its draws from this state (rng_reset, a checked fixture), as in Check's fork
 * mode, also with CK_FORK=no where the tests share one process. */
#define RNG_SEED 7
static uint64_t rng_state = RNG_SEED;
static void rng_reset(void) { rng_state = RNG_SEED; }
static float urand(void) { /* uniform [-1, 1) */
    rng_state = rng_state * 6364136223846793005ull + 1442695040888963407ull;
    return (float)((double)(rng_state >> 11) / 9007199254740992.0 * 2.0 - 1.0);
}
static float *rnd(size_t n) {
    float *x = malloc((n ? n : 1) * sizeof(float));
    for (size_t i = 0; i < n; i++) x[i] = urand();
    return x;
}
static float el(int t, const float *X, int ld, int r, int c) {
    return t ? X[(size_t)c * ld + r] : X[(size_t)r * ld + c];
}

/* One product on the current kernel against the double reference; pad adds
 * that many unused floats to every leading dimension. Returns the largest
 * error as a fraction of its bound (must be <= 1). */
static double check_one(int ta, int tb, int M, int N, int K, float alpha, float beta, int pad) {
    int lda = (ta ? M : K) + pad, ldb = (tb ? K : N) + pad, ldc = N + pad;
    float *A = rnd((size_t)(ta ? K : M) * lda), *B = rnd((size_t)(tb ? N : K) * ldb), *C = rnd((size_t)M * ldc);
    float *C0 = malloc((size_t)M * ldc * sizeof(float));
    for (size_t i = 0; i < (size_t)M * ldc; i++) {
        if (beta == 0.0f) C[i] = NAN; /* beta 0 must not read C */
        C0[i] = C[i];
    }
    spade_sgemm(ta, tb, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
    double worst = 0.0;
    for (int i = 0; i < M; i++)
        for (int j = 0; j < ldc; j++) {
            size_t o = (size_t)i * ldc + j;
            if (j >= N) { /* the padding is never written */
                ck_assert_msg(isnan(C0[o]) ? isnan(C[o]) : C[o] == C0[o], "wrote padding at %d,%d", i, j);
                continue;
            }
            double s = 0.0, mag = 0.0;
            for (int k = 0; k < K; k++) {
                double p = (double)el(ta, A, lda, i, k) * el(tb, B, ldb, k, j);
                s += p;
                mag += fabs(p);
            }
            double want = alpha * s + (beta == 0.0f ? 0.0 : (double)beta * C0[o]);
            double bound = 8.0 * (K + 2) * FLT_EPSILON * (fabs(alpha) * mag + fabs(beta * C0[o])) + 1e-30;
            ck_assert_msg(isfinite(C[o]), "%s ta %d tb %d %dx%dx%d: C[%d,%d] = %g",
                          spade_gemm_kernel_name(spade_gemm_kernel()), ta, tb, M, N, K, i, j, C[o]);
            double e = fabs(C[o] - want) / bound;
            if (e > worst) worst = e;
        }
    free(A);
    free(B);
    free(C);
    free(C0);
    return worst;
}

/* Runs every shape in dims through both the best and every other kernel. */
static void check_shapes(int ta, int tb, const int (*dims)[3], int n) {
    static const float ab[][2] = {{1.0f, 0.0f}, {1.0f, 1.0f}, {0.125f, 0.0f}, {-0.5f, 0.75f}};
    for (int kern = SPADE_GEMM_C; kern <= SPADE_GEMM_AVX512; kern++) {
        if (!spade_gemm_supported(kern)) {
            fprintf(stderr, "test_gemm: this CPU lacks the %s kernel, not tested\n", spade_gemm_kernel_name(kern));
            continue;
        }
        ck_assert_int_eq(spade_gemm_force(kern), 0);
        for (int s = 0; s < n; s++)
            for (int v = 0; v < 4; v++) {
                int pad = (s + v) % 3 == 0 ? 5 : 0;
                double e = check_one(ta, tb, dims[s][0], dims[s][1], dims[s][2], ab[v][0], ab[v][1], pad);
                ck_assert_msg(e <= 1.0, "%s ta %d tb %d M %d N %d K %d alpha %g beta %g pad %d: error %.2f x bound",
                              spade_gemm_kernel_name(kern), ta, tb, dims[s][0], dims[s][1], dims[s][2], ab[v][0],
                              ab[v][1], pad, e);
            }
    }
    ck_assert_int_eq(spade_gemm_force(-1), 0);
}

/* M x N x K. Rows 1..5 and 63 are the decoding products (the dot path below
 * 5 rows, packed above); 100, 129, 300 cross the 6-, 8- and 128-row blocks;
 * K 255..257 and 600 cross the 256 block; N 2100 crosses the 2048 block and
 * N 600 with one row the 512-column chunk of the row-times-matrix path. */
static const int shapes[][3] = {
    {1, 1, 1},    {1, 37, 576},  {2, 33, 17},    {3, 65, 64},  {4, 96, 255},   {5, 40, 257},
    {7, 31, 9},   {13, 17, 600}, {63, 50, 64},   {64, 64, 64}, {100, 33, 256}, {129, 70, 31},
    {300, 19, 5}, {6, 2100, 3},  {17, 16, 1536}, {1, 600, 70},
};
#define NSHAPES ((int)(sizeof shapes / sizeof shapes[0]))

START_TEST(test_forward_a_bt) { check_shapes(0, 1, shapes, NSHAPES); } /* out = inp w^T, scores q k^T */
END_TEST
START_TEST(test_backward_a_b) { check_shapes(0, 0, shapes, NSHAPES); } /* dinp = dout w, P v */
END_TEST
START_TEST(test_backward_at_b) { check_shapes(1, 0, shapes, NSHAPES); } /* dw = dout^T inp, dk, dv */
END_TEST
START_TEST(test_at_bt) { check_shapes(1, 1, shapes, NSHAPES); } /* not used by the backend; covered anyway */
END_TEST

START_TEST(test_degenerate) {
    float C[6] = {1, 2, 3, 4, 5, 6}, A[1] = {NAN}, B[1] = {NAN};
    spade_sgemm(0, 1, 2, 3, 0, 1.0f, A, 1, B, 1, 2.0f, C, 3); /* K 0: C = beta C */
    for (int i = 0; i < 6; i++) ck_assert(C[i] == 2.0f * (i + 1));
    spade_sgemm(0, 0, 2, 3, 1, 0.0f, A, 1, B, 3, 0.0f, C, 3); /* alpha 0, beta 0: zeros, A and B unread */
    for (int i = 0; i < 6; i++) ck_assert(C[i] == 0.0f);
    spade_sgemm(0, 0, 0, 3, 1, 1.0f, A, 1, B, 3, 0.0f, NULL, 3); /* M 0: nothing touched */
    ck_assert_int_eq(spade_gemm_force(99), -1);
    ck_assert(spade_gemm_supported(SPADE_GEMM_C));
    fprintf(stderr, "test_gemm: this CPU runs the %s kernel\n", spade_gemm_kernel_name(spade_gemm_kernel()));
}
END_TEST

int main(void) {
    Suite *s = suite_create("gemm");
    TCase *t = tcase_create("core");
    tcase_add_checked_fixture(t, rng_reset, NULL);
    tcase_set_timeout(t, 120);
    tcase_add_test(t, test_forward_a_bt);
    tcase_add_test(t, test_backward_a_b);
    tcase_add_test(t, test_backward_at_b);
    tcase_add_test(t, test_at_bt);
    tcase_add_test(t, test_degenerate);
    suite_add_tcase(s, t);
    return tu_run(s);
}
