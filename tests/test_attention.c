/* test_attention.c — Check suite for the training attention ops of the policy
 * backends (core/policy/backend.h): the tiled attention of cpu (and cuda, when a
 * GPU is present) against the exact T x T reference of cpu_ref, finite
 * differences of the tiled gradient, and the KV-cache attention against it.
 *
 * What it is: op-level tests at shapes that cross the tile edges (T not a
 * multiple of the tile, T = 1, T below one tile), each bound written beside it.
 * What it is not: the whole-model checks (tests/test_policy.c) or a benchmark
 * of the long-context memory (bench/bench_policy.c --long).
 */
#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "policy/backend.h"
#include "policy/policy.h"
#include "testutil.h"

static char err[512];

/* Every test starts its draws from this state (rng_reset, a checked fixture), as in Check's fork
 * mode, also with CK_FORK=no where the tests share one process. */
#define RNG_SEED 99
static uint64_t rng_state = RNG_SEED;
static void rng_reset(void) { rng_state = tu_rng_seed(RNG_SEED); }
static float urand(void) { /* uniform [-1, 1) */
    rng_state = rng_state * 6364136223846793005ull + 1442695040888963407ull;
    return (float)((double)(rng_state >> 11) / 9007199254740992.0 * 2.0 - 1.0);
}
static float *rnd(size_t n, float scale) {
    float *x = malloc((n ? n : 1) * sizeof(float));
    for (size_t i = 0; i < n; i++) x[i] = scale * urand();
    return x;
}

/* max |a - b| <= rel * max |a| + 1e-6: the floor is for tensors that are exactly
 * 0 in the reference (dq at T = 1: the one probability is 1) and come out of the
 * tiled formula as rounding noise (~1e-7 at inputs of size 2). */
static void expect_close(const char *what, int T, const float *a, const float *b, size_t n, double rel) {
    double mx = 0, md = 0;
    size_t at = 0;
    for (size_t i = 0; i < n; i++) {
        mx = fmax(mx, fabs(a[i]));
        double d = fabs((double)a[i] - b[i]);
        if (d > md || isnan(b[i])) {
            md = isnan(b[i]) ? INFINITY : d;
            at = i;
        }
    }
    ck_assert_msg(md <= rel * mx + 1e-6, "%s at T=%d: differs from cpu_ref by %.3g at %zu (max |x| %.3g, bound %.3g)",
                  what, T, md, at, mx, rel * mx);
}

/* One shape on backend `name` against cpu_ref: out, lse and dqkv.
 * Bound: 2e-5 * max |reference| elementwise. The tiled attention sums scores,
 * exponentials and values in tiles (its own exp, online rescaling), the
 * reference row by row with libm: float rounding, ~1e-6 measured; a wrong mask,
 * a skipped tile or a missing rescale is an O(1) difference. Scores are scaled
 * up (qkv in [-2, 2]) so the softmax is far from uniform and a mask error shows. */
static void compare_with_ref(const char *name, int B, int T, int C, int NH) {
    spade_backend r, f;
    ck_assert(spade_backend_open("cpu_ref", &r, NULL, 0, err, sizeof err) == 0);
    int rc = spade_backend_open(name, &f, NULL, 0, err, sizeof err);
    ck_assert_msg(rc == 0, "%s: %s", name, err);
    ck_assert_int_eq(r.vt->attention_probs, 1);
    size_t N = (size_t)B * T, n3 = N * 3 * C, nl = (size_t)B * NH * T, na = (size_t)B * NH * T * T;
    float *qkv = rnd(n3, 2.0f), *dout = rnd(N * C, 1.0f), *att = calloc(na, 4);
    float *o1 = calloc(N * C, 4), *o2 = calloc(N * C, 4), *l1 = calloc(nl, 4), *l2 = calloc(nl, 4);
    float *d1 = rnd(n3, 3.0f), *d2 = rnd(n3, 3.0f); /* garbage: the op overwrites dqkv */
    float *h = malloc(n3 * 4); /* host copies when f is a device backend */
    void *fq = f.vt->alloc(f.ctx, n3 * 4), *fo = f.vt->alloc(f.ctx, N * C * 4), *fl = f.vt->alloc(f.ctx, nl * 4);
    void *fd = f.vt->alloc(f.ctx, n3 * 4), *fy = f.vt->alloc(f.ctx, N * C * 4);
    void *fa = f.vt->attention_probs ? f.vt->alloc(f.ctx, na * 4) : NULL;
    ck_assert(fq && fo && fl && fd && fy);
    ck_assert(f.vt->upload(f.ctx, fq, qkv, n3 * 4) == 0 && f.vt->upload(f.ctx, fy, dout, N * C * 4) == 0);
    ck_assert(f.vt->upload(f.ctx, fd, d2, n3 * 4) == 0);

    ck_assert(r.vt->attention_forward(r.ctx, o1, l1, att, qkv, B, T, C, NH) == 0);
    ck_assert(r.vt->attention_backward(r.ctx, d1, dout, qkv, o1, l1, att, B, T, C, NH) == 0);
    ck_assert_msg(f.vt->attention_forward(f.ctx, fo, fl, fa, fq, B, T, C, NH) == 0, "%s", f.vt->last_error(f.ctx));
    ck_assert_msg(f.vt->attention_backward(f.ctx, fd, fy, fq, fo, fl, fa, B, T, C, NH) == 0, "%s",
                  f.vt->last_error(f.ctx));
    ck_assert(f.vt->download(f.ctx, o2, fo, N * C * 4) == 0 && f.vt->download(f.ctx, l2, fl, nl * 4) == 0);
    ck_assert(f.vt->download(f.ctx, h, fd, n3 * 4) == 0);
    memcpy(d2, h, n3 * 4);
    char what[96];
    snprintf(what, sizeof what, "%s attention out (B=%d C=%d NH=%d)", name, B, C, NH);
    expect_close(what, T, o1, o2, N * C, 2e-5);
    snprintf(what, sizeof what, "%s attention lse", name);
    expect_close(what, T, l1, l2, nl, 2e-5);
    /* dq, dk, dv separately: each has its own scale */
    float *s1 = malloc(N * C * 4), *s2 = malloc(N * C * 4);
    static const char *part[3] = {"dq", "dk", "dv"};
    for (int k = 0; k < 3; k++) {
        for (size_t i = 0; i < N; i++) {
            memcpy(s1 + i * C, d1 + i * 3 * C + k * C, C * 4);
            memcpy(s2 + i * C, d2 + i * 3 * C + k * C, C * 4);
        }
        snprintf(what, sizeof what, "%s attention_backward %s", name, part[k]);
        expect_close(what, T, s1, s2, N * C, 2e-5);
    }
    free(s1);
    free(s2);
    f.vt->dealloc(f.ctx, fq);
    f.vt->dealloc(f.ctx, fo);
    f.vt->dealloc(f.ctx, fl);
    f.vt->dealloc(f.ctx, fd);
    f.vt->dealloc(f.ctx, fy);
    f.vt->dealloc(f.ctx, fa);
    free(qkv);
    free(dout);
    free(att);
    free(o1);
    free(o2);
    free(l1);
    free(l2);
    free(d1);
    free(d2);
    free(h);
    spade_backend_close(&r);
    spade_backend_close(&f);
}

/* T around the 64-row tile of the cpu backend and the 32-row tile of cuda:
 * 1 (a single key), below one tile, one full tile, one past it, several tiles
 * with a ragged end; head sizes 4, 16, 48. */
static const int shapes[][4] = {
    /* B, T, C, NH */
    {1, 1, 16, 2},  {2, 7, 16, 4},   {1, 32, 32, 2},  {2, 64, 32, 2},
    {1, 65, 32, 2}, {2, 100, 48, 3}, {1, 130, 96, 2}, {1, 257, 32, 2},
};

START_TEST(test_tiled_matches_reference_cpu) {
    for (size_t i = 0; i < sizeof shapes / sizeof shapes[0]; i++)
        compare_with_ref("cpu", shapes[i][0], shapes[i][1], shapes[i][2], shapes[i][3]);
    /* and the T x T cblas path kept for the benchmark */
    compare_with_ref("cpu_tt", 2, 100, 48, 3);
}
END_TEST

START_TEST(test_tiled_matches_reference_cuda) {
#ifndef SPADE_POLICY_CUDA
    fprintf(stderr, "test_attention: SKIP cuda attention parity: this build has no CUDA backend\n");
#else
    spade_backend be;
    int rc = spade_backend_open("cuda", &be, NULL, 0, err, sizeof err);
    if (rc == SPADE_POLICY_ENODEV) {
        fprintf(stderr, "test_attention: SKIP cuda attention parity: no GPU present (%s)\n", err);
        return;
    }
    ck_assert_msg(rc == 0, "cuda backend: %s", err);
    ck_assert_int_eq(be.vt->attention_probs, 0);
    spade_backend_close(&be);
    for (size_t i = 0; i < sizeof shapes / sizeof shapes[0]; i++)
        compare_with_ref("cuda", shapes[i][0], shapes[i][1], shapes[i][2], shapes[i][3]);
    compare_with_ref("cuda", 1, 300, 128, 2); /* hs = 64: over 48 KiB of shared memory */
#endif
}
END_TEST

/* Finite differences of the tiled cpu attention alone (not through cpu_ref):
 * J = sum w . out, central differences with h = 1e-2 on every qkv element.
 * Bound: |num - ana| <= 2e-3 + 1e-2 |ana|, as the per-op checks of
 * test_policy (float32 noise in J ~1e-6 gives ~1e-4 in the quotient). T = 70
 * crosses the 64-row tile, so the rescaling between tiles is differentiated too. */
START_TEST(test_tiled_finite_differences) {
    spade_backend be;
    ck_assert(spade_backend_open("cpu", &be, NULL, 0, err, sizeof err) == 0);
    ck_assert_int_eq(be.vt->attention_probs, 0);
    const int Ts[2] = {5, 70};
    for (int k = 0; k < 2; k++) {
        int B = 1, T = Ts[k], C = 8, NH = 2;
        size_t N = (size_t)B * T, n3 = N * 3 * C;
        float *qkv = rnd(n3, 1.0f), *w = rnd(N * C, 1.0f), *out = calloc(N * C, 4);
        float *lse = calloc((size_t)B * NH * T, 4), *dq = calloc(n3, 4);
        ck_assert(be.vt->attention_forward(be.ctx, out, lse, NULL, qkv, B, T, C, NH) == 0);
        ck_assert(be.vt->attention_backward(be.ctx, dq, w, qkv, out, lse, NULL, B, T, C, NH) == 0);
        const float hstep = 1e-2f;
        for (size_t i = 0; i < n3; i++) {
            float s = qkv[i];
            double j[2];
            for (int sgn = 0; sgn < 2; sgn++) {
                qkv[i] = s + (sgn ? -hstep : hstep);
                ck_assert(be.vt->attention_forward(be.ctx, out, lse, NULL, qkv, B, T, C, NH) == 0);
                double acc = 0;
                for (size_t e = 0; e < N * C; e++) acc += (double)w[e] * out[e];
                j[sgn] = acc;
            }
            qkv[i] = s;
            double num = (j[0] - j[1]) / (2.0 * hstep), ana = dq[i];
            ck_assert_msg(fabs(num - ana) <= 2e-3 + 1e-2 * fabs(ana), "T=%d dqkv[%zu]: numeric %.6g analytic %.6g", T,
                          i, num, ana);
        }
        free(qkv);
        free(w);
        free(out);
        free(lse);
        free(dq);
    }
    spade_backend_close(&be);
}
END_TEST

/* The KV-cache attention (prefill in two chunks, then one decoded position)
 * gives the rows of the tiled training attention. Bound 1e-5 absolute on
 * outputs of size ~1 (qkv in [-1, 1]): the two differ by summation order only. */
START_TEST(test_kv_matches_tiled) {
    spade_backend be;
    ck_assert(spade_backend_open("cpu", &be, NULL, 0, err, sizeof err) == 0);
    int B = 1, T = 150, C = 32, NH = 2, maxT = 160, P1 = 70;
    size_t n3 = (size_t)T * 3 * C;
    float *qkv = rnd(n3, 1.0f), *out = calloc((size_t)T * C, 4), *lse = calloc((size_t)NH * T, 4);
    float *kc = calloc((size_t)maxT * C, 4), *vc = calloc((size_t)maxT * C, 4), *o = calloc((size_t)T * C, 4);
    ck_assert(be.vt->attention_forward(be.ctx, out, lse, NULL, qkv, B, T, C, NH) == 0);
    ck_assert(be.vt->attention_forward_kv(be.ctx, o, qkv, kc, vc, 1, P1, C, NH, 0, maxT) == 0);
    ck_assert(be.vt->attention_forward_kv(be.ctx, o + (size_t)P1 * C, qkv + (size_t)P1 * 3 * C, kc, vc, 1, T - 1 - P1,
                                          C, NH, P1, maxT) == 0);
    ck_assert(be.vt->attention_forward_kv(be.ctx, o + (size_t)(T - 1) * C, qkv + (size_t)(T - 1) * 3 * C, kc, vc, 1, 1,
                                          C, NH, T - 1, maxT) == 0);
    for (size_t i = 0; i < (size_t)T * C; i++)
        ck_assert_msg(fabsf(o[i] - out[i]) <= 1e-5f, "row %zu: kv %.7g tiled %.7g", i / C, o[i], out[i]);
    free(qkv);
    free(out);
    free(lse);
    free(kc);
    free(vc);
    free(o);
    spade_backend_close(&be);
}
END_TEST

/* Whole model: the policy on cpu keeps no T x T buffer, yet its gradients at a
 * context over two tiles equal cpu_ref's (which keeps one) within the bound of
 * test_policy's cpu-vs-reference check: 2e-5 * max |reference tensor|. */
START_TEST(test_model_long_context_matches_reference) {
    spade_gpt_config c;
    spade_gpt_config_default(&c);
    c.layers = 2;
    c.heads = 2;
    c.width = 32;
    c.context = 150;
    c.seed = 3;
    snprintf(c.backend, sizeof c.backend, "cpu_ref");
    spade_policy *r = NULL, *f = NULL;
    ck_assert_msg(spade_policy_new(&r, &c, err, sizeof err) == 0, "%s", err);
    ck_assert_msg(spade_policy_clone(&f, r, "cpu", err, sizeof err) == 0, "%s", err);
    int T = 150;
    int *tok = malloc(T * 4), *tg = malloc(T * 4);
    for (int i = 0; i < T; i++) tok[i] = (int)((urand() + 1) * 100);
    for (int i = 0; i < T; i++) tg[i] = i + 1 < T ? tok[i + 1] : -1;
    float lr_, lf;
    ck_assert(spade_policy_forward(r, tok, tg, NULL, 1, T, &lr_, NULL, err, sizeof err) == 0);
    ck_assert(spade_policy_forward(f, tok, tg, NULL, 1, T, &lf, NULL, err, sizeof err) == 0);
    ck_assert_msg(fabsf(lr_ - lf) <= 1e-5f * fabsf(lr_), "loss ref %.8f cpu %.8f", lr_, lf);
    ck_assert(spade_policy_backward(r, 1.0f, err, sizeof err) == 0);
    ck_assert(spade_policy_backward(f, 1.0f, err, sizeof err) == 0);
    size_t P = spade_policy_num_params(r);
    float *gr = malloc(P * 4), *gf = malloc(P * 4);
    ck_assert(spade_policy_get_grads(r, gr, err, sizeof err) == 0);
    ck_assert(spade_policy_get_grads(f, gf, err, sizeof err) == 0);
    tu_assert_grads_close(r, gr, gf, 2e-5, "long context, cpu_ref vs cpu");
    free(tok);
    free(tg);
    free(gr);
    free(gf);
    spade_policy_free(r);
    spade_policy_free(f);
}
END_TEST

int main(void) {
    Suite *s = suite_create("attention");
    TCase *t = tcase_create("core");
    tcase_add_checked_fixture(t, rng_reset, NULL);
    tcase_set_timeout(t, 120);
    tcase_add_test(t, test_tiled_matches_reference_cpu);
    tcase_add_test(t, test_tiled_matches_reference_cuda);
    tcase_add_test(t, test_tiled_finite_differences);
    tcase_add_test(t, test_kv_matches_tiled);
    tcase_add_test(t, test_model_long_context_matches_reference);
    suite_add_tcase(s, t);
    return tu_run(s);
}
