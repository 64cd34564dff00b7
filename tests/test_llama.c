/* test_llama.c — Check suite for the Llama family as the policy's second
 * architecture (policy.arch = llama; core/policy/llama.c and the ops it adds
 * to backend.h).
 *
 * What it is: the new ops against their definitions (the rotary pairing
 * pinned to llama.cpp's two conventions, kv_expand/kv_reduce adjoint),
 * finite-difference gradients of every parameter tensor of a tiny random
 * Llama (GQA, partial rotary, tied head) and a tiny Qwen2-style model
 * (Q/K/V biases, half pairing, separate head), cpu against cpu_ref, the
 * decoding batch against the full forward, checkpoints (the architecture
 * kept, bytes round-tripped, GPT files in version 2 and 3 loading), a
 * pretrain run through `spade pretrain`, a GRPO update and a
 * finite-difference check of the masked multi-turn GRPO loss.
 * What it is not: a test of GGUF weights (no model file is read here) or of
 * the GPT (tests/test_policy.c).
 */
#include <check.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../cli/cmd_pretrain.h"
#include "policy/backend.h"
#include "policy/policy.h"
#include "testutil.h"

static char err[512];

/* ------------------------------------------------------------ helpers */

/* A tiny Llama: 4 query heads over 2 key/value heads (GQA), head size 8 with
 * 6 rotated dimensions (partial rotary), SwiGLU width 24, tied head. */
static spade_gpt_config llama_cfg(const char *backend) {
    spade_gpt_config c;
    spade_gpt_config_default(&c);
    char e[200];
    ck_assert(spade_gpt_config_set(&c, "arch", "llama", e, sizeof e) == 0);
    c.layers = 2;
    c.heads = 4;
    c.kv_heads = 2;
    c.width = 32;
    c.ffn = 24;
    c.rope_dims = 6;
    c.rope_base = 10000;
    c.norm_eps = 1e-5f;
    c.context = 16;
    c.seed = 11;
    snprintf(c.backend, sizeof c.backend, "%s", backend);
    return c;
}

/* A tiny Qwen2: Q/K/V biases, the half (NEOX) pairing over the whole head,
 * 4 heads over 1 key/value head, a separate output head, rope base 1e6. */
static spade_gpt_config qwen_cfg(const char *backend) {
    spade_gpt_config c = llama_cfg(backend);
    char e[200];
    ck_assert(spade_gpt_config_set(&c, "qkv_bias", "1", e, sizeof e) == 0);
    ck_assert(spade_gpt_config_set(&c, "rope_pairing", "half", e, sizeof e) == 0);
    ck_assert(spade_gpt_config_set(&c, "tied", "0", e, sizeof e) == 0);
    ck_assert(spade_gpt_config_set(&c, "rope_base", "1e6", e, sizeof e) == 0);
    c.kv_heads = 1;
    c.rope_dims = 0;
    c.ffn = 20;
    c.seed = 12;
    return c;
}

static spade_policy *make(const spade_gpt_config *c) {
    spade_policy *p = NULL;
    int rc = spade_policy_new(&p, c, err, sizeof err);
    ck_assert_msg(rc == 0, "spade_policy_new: %s", err);
    return p;
}

/* The tests' random draws. Every test starts from the same state (rng_reset, a checked fixture): in
 * Check's fork mode each test's process starts from it anyway, but with CK_FORK=no the tests share
 * one process, and a test's data would otherwise depend on which tests ran before it. */
#define RNG_SEED 99
static uint64_t rng_state = RNG_SEED;
static void rng_reset(void) { rng_state = tu_rng_seed(RNG_SEED); }
static double urand(void) {
    rng_state = rng_state * 6364136223846793005ull + 1442695040888963407ull;
    return (double)(rng_state >> 11) / 9007199254740992.0;
}

static void fill_tokens(int *t, size_t n, int vmax) {
    for (size_t i = 0; i < n; i++) t[i] = (int)(urand() * vmax);
}

/* Scales the weights away from the initialisation (larger, better
 * conditioned gradients for finite differences); gains near 1, biases
 * nonzero, padded vocabulary rows left at 0. */
static void heat(spade_policy *p, float s) {
    size_t P = spade_policy_num_params(p);
    float *h = malloc(P * sizeof(float));
    ck_assert(spade_policy_get_params(p, h, err, sizeof err) == 0);
    const char *name;
    size_t off, cnt;
    int C = spade_policy_config(p)->width;
    for (int i = 0; spade_policy_tensor(p, i, &name, &off, &cnt) == 0; i++) {
        int gain = !strcmp(name, "ln1w") || !strcmp(name, "ln2w") || !strcmp(name, "lnfw");
        int vocab = !strcmp(name, "wte") || !strcmp(name, "head");
        for (size_t j = 0; j < cnt; j++) {
            if (vocab && j >= (size_t)SPADE_VOCAB * C) break;
            if (gain)
                h[off + j] = 1.0f + 0.2f * (float)(urand() - 0.5);
            else
                h[off + j] = h[off + j] * s + 0.05f * (float)(urand() - 0.5);
        }
    }
    ck_assert(spade_policy_set_params(p, h, err, sizeof err) == 0);
    free(h);
}

/* ------------------------------------------------------------ config */

START_TEST(test_config_keys) {
    spade_gpt_config c;
    spade_gpt_config_default(&c);
    ck_assert_str_eq(c.arch, "gpt");
    char e[300];
    ck_assert_int_eq(spade_gpt_config_set(&c, "policy.arch", "mamba", e, sizeof e), SPADE_POLICY_EINVAL);
    ck_assert_ptr_nonnull(strstr(e, "policy.arch"));
    ck_assert_int_eq(spade_gpt_config_set(&c, "rope_pairing", "odd", e, sizeof e), SPADE_POLICY_EINVAL);
    ck_assert_int_eq(spade_gpt_config_set(&c, "rope_base", "0.5", e, sizeof e), SPADE_POLICY_EINVAL);
    ck_assert_int_eq(spade_gpt_config_set(&c, "norm_eps", "nan", e, sizeof e), SPADE_POLICY_EINVAL);
    /* a Llama key on a GPT is named, not ignored */
    c.kv_heads = 2;
    ck_assert_int_eq(spade_gpt_config_validate(&c, e, sizeof e), SPADE_POLICY_EINVAL);
    ck_assert_msg(strstr(e, "kv_heads") && strstr(e, "llama"), "%s", e);
    c = llama_cfg("cpu_ref");
    ck_assert_int_eq(spade_gpt_config_validate(&c, e, sizeof e), 0);
    c.kv_heads = 3; /* does not divide 4 heads */
    ck_assert_int_eq(spade_gpt_config_validate(&c, e, sizeof e), SPADE_POLICY_EINVAL);
    ck_assert_msg(strstr(e, "policy.kv_heads"), "%s", e);
    c = llama_cfg("cpu_ref");
    c.rope_dims = 5; /* odd */
    ck_assert_int_eq(spade_gpt_config_validate(&c, e, sizeof e), SPADE_POLICY_EINVAL);
    ck_assert_msg(strstr(e, "policy.rope_dims"), "%s", e);
    c.rope_dims = 10; /* more than the head size 8 */
    ck_assert_int_eq(spade_gpt_config_validate(&c, e, sizeof e), SPADE_POLICY_EINVAL);
    /* the parameter count follows the layout: V=263, Vp=320, C=32, L=2, QKV=32+2*2*8=64, F=24 */
    c = llama_cfg("cpu_ref");
    size_t want = 320 * 32 + 2 * 32 + 2 * 64 * 32 + 0 + 2 * 32 * 32 + 2 * 32 + 2 * 48 * 32 + 2 * 32 * 24 + 32 + 0;
    ck_assert_uint_eq(spade_gpt_config_num_params(&c), want);
    c = qwen_cfg("cpu_ref"); /* QKV = 32 + 2*8 = 48, biases, separate head, F = 20 */
    want = 320 * 32 + 2 * 32 + 2 * 48 * 32 + 2 * 48 + 2 * 32 * 32 + 2 * 32 + 2 * 40 * 32 + 2 * 32 * 20 + 32 + 320 * 32;
    ck_assert_uint_eq(spade_gpt_config_num_params(&c), want);
}
END_TEST

/* ------------------------------------------------------------ ops */

/* The rotary convention, pinned: a unit vector in dimension 0 (adjacent
 * pairing) or in 0 and hs/2... rotates by theta = p * base^(-2j/rot) in the
 * plane of its pair; the inverse undoes it; columns past rot are untouched. */
static void rope_checks(const char *backend) {
    spade_backend be;
    ck_assert_msg(spade_backend_open(backend, &be, NULL, 0, err, sizeof err) == 0, "%s", err);
    int hs = 8, rot = 6, nh = 2, N = 3, stride = nh * hs + 4;
    float base = 100.0f;
    size_t n = (size_t)N * stride;
    float *h = malloc(n * 4), *h0 = malloc(n * 4);
    int pos[3] = {0, 5, 2};
    for (int neox = 0; neox < 2; neox++) {
        for (size_t i = 0; i < n; i++) h0[i] = (float)(2 * urand() - 1);
        float *x = be.vt->alloc(be.ctx, n * 4);
        int *pd = be.vt->alloc(be.ctx, sizeof pos);
        ck_assert(be.vt->upload(be.ctx, x, h0, n * 4) == 0);
        ck_assert(be.vt->upload(be.ctx, pd, pos, sizeof pos) == 0);
        ck_assert(be.vt->rope(be.ctx, x, pd, N, 1, stride, nh, hs, rot, base, neox, 0) == 0);
        ck_assert(be.vt->download(be.ctx, h, x, n * 4) == 0);
        for (int i = 0; i < N; i++)
            for (int hh = 0; hh < nh; hh++)
                for (int j = 0; j < rot / 2; j++) {
                    int a = neox ? j : 2 * j, b = neox ? j + rot / 2 : 2 * j + 1;
                    double th = pos[i] * pow(base, -2.0 * j / rot);
                    const float *v0 = h0 + (size_t)i * stride + hh * hs;
                    const float *v1 = h + (size_t)i * stride + hh * hs;
                    double ea = v0[a] * cos(th) - v0[b] * sin(th), eb = v0[a] * sin(th) + v0[b] * cos(th);
                    ck_assert_msg(fabs(v1[a] - ea) < 1e-5 && fabs(v1[b] - eb) < 1e-5,
                                  "%s rope neox=%d row %d head %d pair %d: (%g, %g) expected (%g, %g)", backend, neox,
                                  i, hh, j, v1[a], v1[b], ea, eb);
                }
        for (int i = 0; i < N; i++) {
            for (int c = nh * hs; c < stride; c++) /* past the heads */
                ck_assert(h[(size_t)i * stride + c] == h0[(size_t)i * stride + c]);
            for (int hh = 0; hh < nh; hh++) /* past rot within a head */
                for (int c = rot; c < hs; c++)
                    ck_assert(h[(size_t)i * stride + hh * hs + c] == h0[(size_t)i * stride + hh * hs + c]);
        }
        /* inverse, and pos = NULL reading i % T: rows (B=1, T=3) at 0, 1, 2 */
        ck_assert(be.vt->rope(be.ctx, x, pd, N, 1, stride, nh, hs, rot, base, neox, 1) == 0);
        ck_assert(be.vt->download(be.ctx, h, x, n * 4) == 0);
        for (size_t i = 0; i < n; i++) ck_assert_msg(fabsf(h[i] - h0[i]) < 1e-6f, "inverse at %zu", i);
        int seq[3] = {0, 1, 2};
        float *y = be.vt->alloc(be.ctx, n * 4);
        ck_assert(be.vt->upload(be.ctx, y, h0, n * 4) == 0);
        ck_assert(be.vt->upload(be.ctx, pd, seq, sizeof seq) == 0);
        ck_assert(be.vt->rope(be.ctx, x, pd, N, 1, stride, nh, hs, rot, base, neox, 0) == 0);
        ck_assert(be.vt->rope(be.ctx, y, NULL, N, 3, stride, nh, hs, rot, base, neox, 0) == 0);
        float *h2 = malloc(n * 4);
        be.vt->upload(be.ctx, x, h0, n * 4);
        be.vt->rope(be.ctx, x, pd, N, 1, stride, nh, hs, rot, base, neox, 0);
        be.vt->download(be.ctx, h, x, n * 4);
        be.vt->download(be.ctx, h2, y, n * 4);
        ck_assert(memcmp(h, h2, n * 4) == 0);
        free(h2);
        be.vt->dealloc(be.ctx, x);
        be.vt->dealloc(be.ctx, y);
        be.vt->dealloc(be.ctx, pd);
    }
    free(h);
    free(h0);
    spade_backend_close(&be);
}

/* <kv_expand(x), y> = <x, kv_reduce(y)> (adjoint), expand's copy exact;
 * SwiGLU and RMSNorm against their formulas and their finite differences. */
static void small_op_checks(const char *backend) {
    spade_backend be;
    ck_assert(spade_backend_open(backend, &be, NULL, 0, err, sizeof err) == 0);
    const spade_backend_vtable *vt = be.vt;
    void *cx = be.ctx;
    int N = 5, NH = 6, KVH = 2, hs = 4, C = NH * hs, W = C + 2 * KVH * hs, F = 7;
    float *x = malloc((size_t)N * W * 4), *y = malloc((size_t)N * 3 * C * 4);
    float *ex = malloc((size_t)N * 3 * C * 4), *ry = malloc((size_t)N * W * 4);
    for (int i = 0; i < N * W; i++) x[i] = (float)(2 * urand() - 1);
    for (int i = 0; i < N * 3 * C; i++) y[i] = (float)(2 * urand() - 1);
    float *dx = vt->alloc(cx, (size_t)N * W * 4), *dy = vt->alloc(cx, (size_t)N * 3 * C * 4);
    vt->upload(cx, dx, x, (size_t)N * W * 4);
    ck_assert(vt->kv_expand(cx, dy, dx, N, NH, KVH, hs) == 0);
    vt->download(cx, ex, dy, (size_t)N * 3 * C * 4);
    for (int i = 0; i < N; i++)
        for (int h = 0; h < NH; h++)
            for (int e = 0; e < hs; e++) {
                int kh = h / (NH / KVH);
                ck_assert(ex[(size_t)i * 3 * C + h * hs + e] == x[(size_t)i * W + h * hs + e]);
                ck_assert(ex[(size_t)i * 3 * C + C + h * hs + e] == x[(size_t)i * W + C + kh * hs + e]);
                ck_assert(ex[(size_t)i * 3 * C + 2 * C + h * hs + e] == x[(size_t)i * W + C + KVH * hs + kh * hs + e]);
            }
    vt->upload(cx, dy, y, (size_t)N * 3 * C * 4);
    ck_assert(vt->kv_reduce(cx, dx, dy, N, NH, KVH, hs) == 0);
    vt->download(cx, ry, dx, (size_t)N * W * 4);
    double l = 0, r = 0;
    for (int i = 0; i < N * 3 * C; i++) l += (double)ex[i] * y[i];
    for (int i = 0; i < N * W; i++) r += (double)x[i] * ry[i];
    ck_assert_msg(fabs(l - r) < 1e-4 * fabs(l) + 1e-5, "%s kv adjoint: %g vs %g", backend, l, r);
    /* the compact cache: attention_forward_kv_at_gqa over compact rows equals
     * attention_forward_kv_at over kv_expand's rows (rows: slot 0 at 0, 1, 2,
     * slot 1 at 0, 1), and its cache holds the KVH heads only */
    {
        int S = 2, maxT = 4, sl[5] = {0, 0, 0, 1, 1}, ps[5] = {0, 1, 2, 0, 1};
        size_t KW = (size_t)KVH * hs;
        int *bsl = vt->alloc(cx, sizeof sl), *bps = vt->alloc(cx, sizeof ps);
        vt->upload(cx, bsl, sl, sizeof sl);
        vt->upload(cx, bps, ps, sizeof ps);
        float *kc1 = vt->alloc(cx, S * maxT * KW * 4), *vc1 = vt->alloc(cx, S * maxT * KW * 4);
        float *kc3 = vt->alloc(cx, S * maxT * (size_t)C * 4), *vc3 = vt->alloc(cx, S * maxT * (size_t)C * 4);
        float *o1 = vt->alloc(cx, (size_t)N * C * 4), *o3 = vt->alloc(cx, (size_t)N * C * 4);
        vt->upload(cx, dx, x, (size_t)N * W * 4);
        ck_assert(vt->kv_expand(cx, dy, dx, N, NH, KVH, hs) == 0);
        ck_assert(vt->attention_forward_kv_at(cx, o3, dy, kc3, vc3, bsl, bps, N, C, NH, S, maxT, 3) == 0);
        ck_assert_msg(vt->attention_forward_kv_at_gqa(cx, o1, dx, kc1, vc1, bsl, bps, N, C, NH, KVH, S, maxT, 3) == 0,
                      "%s", vt->last_error(cx));
        float *h1 = malloc((size_t)N * C * 4), *h3 = malloc((size_t)N * C * 4), *hk = malloc(S * maxT * KW * 4);
        vt->download(cx, h1, o1, (size_t)N * C * 4);
        vt->download(cx, h3, o3, (size_t)N * C * 4);
        for (int i = 0; i < N * C; i++)
            ck_assert_msg(fabsf(h1[i] - h3[i]) <= 1e-6f, "%s kv_at_gqa %d: %g vs %g", backend, i, h1[i], h3[i]);
        vt->download(cx, hk, kc1, S * maxT * KW * 4);
        for (int i = 0; i < N; i++)
            ck_assert(!memcmp(hk + ((size_t)sl[i] * maxT + ps[i]) * KW, x + (size_t)i * W + C, KW * 4));
        ck_assert(vt->attention_forward_kv_at_gqa(cx, o1, dx, kc1, vc1, bsl, bps, N, C, NH, 4, S, maxT, 3) != 0);
        free(h1);
        free(h3);
        free(hk);
        vt->dealloc(cx, bsl);
        vt->dealloc(cx, bps);
        vt->dealloc(cx, kc1);
        vt->dealloc(cx, vc1);
        vt->dealloc(cx, kc3);
        vt->dealloc(cx, vc3);
        vt->dealloc(cx, o1);
        vt->dealloc(cx, o3);
    }
    vt->dealloc(cx, dx);
    vt->dealloc(cx, dy);
    /* SwiGLU */
    float *in = malloc((size_t)N * 2 * F * 4), *out = malloc((size_t)N * F * 4), *g = malloc((size_t)N * F * 4);
    float *din = malloc((size_t)N * 2 * F * 4);
    for (int i = 0; i < N * 2 * F; i++) in[i] = (float)(4 * urand() - 2);
    for (int i = 0; i < N * F; i++) g[i] = (float)(2 * urand() - 1);
    float *bi = vt->alloc(cx, (size_t)N * 2 * F * 4), *bo = vt->alloc(cx, (size_t)N * F * 4);
    float *bg = vt->alloc(cx, (size_t)N * F * 4), *bd = vt->alloc(cx, (size_t)N * 2 * F * 4);
    vt->upload(cx, bi, in, (size_t)N * 2 * F * 4);
    vt->upload(cx, bg, g, (size_t)N * F * 4);
    ck_assert(vt->swiglu_forward(cx, bo, bi, N, F) == 0);
    ck_assert(vt->swiglu_backward(cx, bd, bi, bg, N, F) == 0);
    vt->download(cx, out, bo, (size_t)N * F * 4);
    vt->download(cx, din, bd, (size_t)N * 2 * F * 4);
    for (int i = 0; i < N; i++)
        for (int j = 0; j < F; j++) {
            double gg = in[i * 2 * F + j], u = in[i * 2 * F + F + j];
            double want = gg / (1 + exp(-gg)) * u;
            ck_assert_msg(fabs(out[i * F + j] - want) < 1e-5, "%s swiglu %g vs %g", backend, out[i * F + j], want);
            double hh = 1e-3,
                   dg = ((gg + hh) / (1 + exp(-(gg + hh))) - (gg - hh) / (1 + exp(-(gg - hh)))) / (2 * hh) * u;
            double du = gg / (1 + exp(-gg));
            ck_assert_msg(fabs(din[i * 2 * F + j] - g[i * F + j] * dg) < 1e-4, "%s swiglu dg", backend);
            ck_assert_msg(fabs(din[i * 2 * F + F + j] - g[i * F + j] * du) < 1e-5, "%s swiglu du", backend);
        }
    vt->dealloc(cx, bi);
    vt->dealloc(cx, bo);
    vt->dealloc(cx, bg);
    vt->dealloc(cx, bd);
    /* RMSNorm: forward against the formula, backward (dinp accumulates) against differences */
    int Cn = 9;
    float *xi = malloc((size_t)N * Cn * 4), *w = malloc(Cn * 4), *o = malloc((size_t)N * Cn * 4);
    float *go = malloc((size_t)N * Cn * 4), *rs = malloc(N * 4), *gi = malloc((size_t)N * Cn * 4), *gw = malloc(Cn * 4);
    for (int i = 0; i < N * Cn; i++) xi[i] = (float)(2 * urand() - 1), go[i] = (float)(2 * urand() - 1);
    for (int c = 0; c < Cn; c++) w[c] = (float)(0.5 + urand());
    float *bx = vt->alloc(cx, (size_t)N * Cn * 4), *bw = vt->alloc(cx, Cn * 4),
          *bo2 = vt->alloc(cx, (size_t)N * Cn * 4);
    float *br = vt->alloc(cx, N * 4), *bgo = vt->alloc(cx, (size_t)N * Cn * 4),
          *bgi = vt->alloc(cx, (size_t)N * Cn * 4);
    float *bgw = vt->alloc(cx, Cn * 4);
    vt->upload(cx, bx, xi, (size_t)N * Cn * 4);
    vt->upload(cx, bw, w, Cn * 4);
    vt->upload(cx, bgo, go, (size_t)N * Cn * 4);
    float eps = 1e-5f;
    ck_assert(vt->rmsnorm_forward(cx, bo2, br, bx, bw, N, Cn, eps) == 0);
    ck_assert(vt->rmsnorm_backward(cx, bgi, bgw, bgo, bx, bw, br, N, Cn) == 0);
    vt->download(cx, o, bo2, (size_t)N * Cn * 4);
    vt->download(cx, rs, br, N * 4);
    vt->download(cx, gi, bgi, (size_t)N * Cn * 4);
    vt->download(cx, gw, bgw, Cn * 4);
    double gwn[9] = {0};
    for (int i = 0; i < N; i++) {
        double ms = 0;
        for (int c = 0; c < Cn; c++) ms += (double)xi[i * Cn + c] * xi[i * Cn + c];
        double s = 1 / sqrt(ms / Cn + eps);
        ck_assert(fabs(rs[i] - s) < 1e-5 * s);
        for (int c = 0; c < Cn; c++) {
            ck_assert(fabs(o[i * Cn + c] - xi[i * Cn + c] * s * w[c]) < 1e-5);
            gwn[c] += go[i * Cn + c] * xi[i * Cn + c] * s;
        }
        /* d/dx_k of sum_c go_c x_c s w_c */
        for (int k = 0; k < Cn; k++) {
            double hh = 1e-3, lp = 0, lm = 0;
            for (int sgn = -1; sgn <= 1; sgn += 2) {
                double xs[9], m2 = 0;
                for (int c = 0; c < Cn; c++) xs[c] = xi[i * Cn + c] + (c == k ? sgn * hh : 0);
                for (int c = 0; c < Cn; c++) m2 += xs[c] * xs[c];
                double s2 = 1 / sqrt(m2 / Cn + eps), L = 0;
                for (int c = 0; c < Cn; c++) L += go[i * Cn + c] * xs[c] * s2 * w[c];
                if (sgn < 0)
                    lm = L;
                else
                    lp = L;
            }
            double num = (lp - lm) / (2 * hh);
            ck_assert_msg(fabs(gi[i * Cn + k] - num) < 1e-3 * fmax(1, fabs(num)), "%s rmsnorm dx %g vs %g", backend,
                          gi[i * Cn + k], num);
        }
    }
    for (int c = 0; c < Cn; c++) ck_assert(fabs(gw[c] - gwn[c]) < 1e-4 * fmax(1, fabs(gwn[c])));
    vt->dealloc(cx, bx);
    vt->dealloc(cx, bw);
    vt->dealloc(cx, bo2);
    vt->dealloc(cx, br);
    vt->dealloc(cx, bgo);
    vt->dealloc(cx, bgi);
    vt->dealloc(cx, bgw);
    free(xi);
    free(w);
    free(o);
    free(go);
    free(rs);
    free(gi);
    free(gw);
    free(in);
    free(out);
    free(g);
    free(din);
    free(x);
    free(y);
    free(ex);
    free(ry);
    spade_backend_close(&be);
}

START_TEST(test_ops_ref) {
    rope_checks("cpu_ref");
    small_op_checks("cpu_ref");
}
END_TEST
START_TEST(test_ops_cpu) {
    rope_checks("cpu");
    small_op_checks("cpu");
}
END_TEST

/* ------------------------------------------------------------ gradients */

/* Directional finite differences per parameter tensor on cpu_ref, as
 * test_policy's GPT check but Richardson-extrapolated, (4 D(h/2) - D(h)) / 3
 * with D the central difference at h = 1e-3 (loss differenced in double),
 * bound |num - ana| <= 3e-3 * max(|ana|, 0.05 ||grad||). Every tensor must
 * carry gradient: its own gradient's norm over 1e-3 ||grad|| (a tensor the
 * backward forgets fails twice: zero analytic, nonzero numeric). Started
 * from RNG states 1..200, the plain D(1e-3) and a carry check on |ana| failed
 * 22 (llama) and 34 (qwen2) times: D's O(h^2) error over the bound at heat 15
 * (0.0067 of 2.003 at h = 1e-3, 0.057 at 3e-3) 14 and 16 times alone, |ana|
 * (one random direction's projection, near 0 by chance) 9 and 20 alone;
 * these checks 0 and 0 times (Wilson 95% 0-1.9% each). */
static double model_loss(spade_policy *p, const float *w, const int *tok, const int *tg, const float *mask, int B,
                         int T) {
    ck_assert(spade_policy_set_params(p, w, err, sizeof err) == 0);
    float loss;
    ck_assert_msg(spade_policy_forward(p, tok, tg, mask, B, T, &loss, NULL, err, sizeof err) == 0, "%s", err);
    return loss;
}

typedef struct model_loss_ctx {
    spade_policy *p;
    const int *tok, *tg;
    const float *mask;
    int B, T;
} model_loss_ctx;

static double model_loss_at(void *ctx, const float *w) {
    model_loss_ctx *c = ctx;
    return model_loss(c->p, w, c->tok, c->tg, c->mask, c->B, c->T);
}

static void gradient_check(spade_gpt_config c, int want_tensors) {
    spade_policy *p = make(&c);
    heat(p, 15.0f);
    int B = 2, T = 9, N = B * T;
    int tok[18], tg[18];
    float mask[18];
    fill_tokens(tok, N, SPADE_VOCAB);
    fill_tokens(tg, N, SPADE_VOCAB);
    for (int i = 0; i < N; i++) mask[i] = i % 5 == 0 ? 0.0f : 1.0f;
    tg[4] = -1;
    size_t P = spade_policy_num_params(p);
    float *w = malloc(P * 4), *g = malloc(P * 4), *wd = malloc(P * 4), *d = malloc(P * 4);
    ck_assert(spade_policy_get_params(p, w, err, sizeof err) == 0);
    ck_assert(spade_policy_zero_grad(p, err, sizeof err) == 0);
    float loss;
    ck_assert(spade_policy_forward(p, tok, tg, mask, B, T, &loss, NULL, err, sizeof err) == 0);
    ck_assert(isfinite(loss));
    ck_assert(spade_policy_backward(p, 1.0f, err, sizeof err) == 0);
    ck_assert(spade_policy_get_grads(p, g, err, sizeof err) == 0);
    double gn = 0;
    for (size_t i = 0; i < P; i++) gn += (double)g[i] * g[i];
    gn = sqrt(gn);
    const char *name;
    size_t off, cnt;
    int checked = 0;
    for (int t = 0; spade_policy_tensor(p, t, &name, &off, &cnt) == 0; t++) {
        if (!cnt) continue; /* a tied head, no biases */
        memset(d, 0, P * 4);
        double ana = 0;
        for (size_t j = 0; j < cnt; j++) {
            d[off + j] = (float)(2 * urand() - 1);
            ana += (double)g[off + j] * d[off + j];
        }
        model_loss_ctx lc = {.p = p, .tok = tok, .tg = tg, .mask = mask, .B = B, .T = T};
        double num = tu_richardson_diff(model_loss_at, &lc, w, wd, d, P, 1e-3);
        double tol = 3e-3 * fmax(fabs(ana), 0.05 * gn);
        ck_assert_msg(fabs(num - ana) <= tol, "%s tensor %s: numeric %.6g vs analytic %.6g (tol %.2g)", c.arch, name,
                      num, ana, tol);
        double tn2 = 0;
        for (size_t j = 0; j < cnt; j++) tn2 += (double)g[off + j] * g[off + j];
        ck_assert_msg(sqrt(tn2) > 1e-3 * gn, "%s tensor %s carries no gradient (norm %.3g of %.3g)", c.arch, name,
                      sqrt(tn2), gn);
        checked++;
    }
    ck_assert_int_eq(checked, want_tensors);
    free(w);
    free(g);
    free(wd);
    free(d);
    spade_policy_free(p);
}

START_TEST(test_gradient_check_llama) { gradient_check(llama_cfg("cpu_ref"), 8); }
END_TEST
START_TEST(test_gradient_check_qwen2) { gradient_check(qwen_cfg("cpu_ref"), 10); }
END_TEST

/* ------------------------------------------------------------ cpu vs cpu_ref */

/* Bounds as test_policy's GPT check: loss 1e-5 relative, every gradient
 * tensor within 2e-5 * its max, one AdamW step's parameters within 1e-5. */
static void cpu_vs_ref(spade_gpt_config c) {
    c.context = 24;
    spade_policy *r = make(&c), *f = NULL;
    heat(r, 3.0f);
    ck_assert(spade_policy_clone(&f, r, "cpu", err, sizeof err) == 0);
    int B = 3, T = 24, N = B * T;
    int *tok = malloc(N * 4), *tg = malloc(N * 4);
    fill_tokens(tok, N, 256);
    for (int i = 0; i < N; i++) tg[i] = (i + 1) % T ? tok[i + 1] : -1;
    float lr_, lf;
    ck_assert(spade_policy_forward(r, tok, tg, NULL, B, T, &lr_, NULL, err, sizeof err) == 0);
    ck_assert(spade_policy_forward(f, tok, tg, NULL, B, T, &lf, NULL, err, sizeof err) == 0);
    ck_assert_msg(fabsf(lr_ - lf) <= 1e-5f * fabsf(lr_), "loss ref %.8f cpu %.8f", lr_, lf);
    ck_assert(spade_policy_backward(r, 1.0f, err, sizeof err) == 0);
    ck_assert(spade_policy_backward(f, 1.0f, err, sizeof err) == 0);
    size_t P = spade_policy_num_params(r);
    float *gr = malloc(P * 4), *gf = malloc(P * 4);
    spade_policy_get_grads(r, gr, err, sizeof err);
    spade_policy_get_grads(f, gf, err, sizeof err);
    tu_assert_grads_close(r, gr, gf, 2e-5, "%s, cpu_ref vs cpu", c.arch);
    spade_adamw_opts o;
    spade_adamw_opts_default(&o);
    ck_assert(spade_policy_step(r, &o, NULL, err, sizeof err) == 0);
    ck_assert(spade_policy_step(f, &o, NULL, err, sizeof err) == 0);
    spade_policy_get_params(r, gr, err, sizeof err);
    spade_policy_get_params(f, gf, err, sizeof err);
    for (size_t j = 0; j < P; j++) ck_assert_msg(fabsf(gr[j] - gf[j]) <= 1e-5f, "param %zu", j);
    free(tok);
    free(tg);
    free(gr);
    free(gf);
    spade_policy_free(r);
    spade_policy_free(f);
}

START_TEST(test_cpu_matches_reference) {
    cpu_vs_ref(llama_cfg("cpu_ref"));
    cpu_vs_ref(qwen_cfg("cpu_ref"));
}
END_TEST

/* ------------------------------------------------------------ decoding */

/* The full forward's log-softmax at the last position of seq[0..T). */
static void full_last_logprobs(spade_policy *p, const int *seq, int T, float *out) {
    int V = SPADE_VOCAB;
    /* the log-prob of every candidate v at the last position: a batch of V
     * rows that differ only in the last target */
    int *toks = malloc((size_t)V * T * 4), *tgs = malloc((size_t)V * T * 4);
    float *lps = malloc((size_t)V * T * 4);
    for (int v = 0; v < V; v++)
        for (int t = 0; t < T; t++) {
            toks[(size_t)v * T + t] = seq[t];
            tgs[(size_t)v * T + t] = t == T - 1 ? v : -1;
        }
    ck_assert_msg(spade_policy_forward(p, toks, tgs, NULL, V, T, NULL, lps, err, sizeof err) == 0, "%s", err);
    for (int v = 0; v < V; v++) out[v] = lps[(size_t)v * T + T - 1];
    free(toks);
    free(tgs);
    free(lps);
}

/* Three slots prefilled in one batched pass (prompts of 3, 7 and 5 tokens),
 * then four greedy tokens each: after every step the decoder's next-token
 * log-probs equal the full forward's over the slot's tokens. On cpu_ref the
 * arithmetic of a row does not depend on the pass it is in, so the bound is
 * 1e-5 (measured 0); on cpu 2e-4 (summation orders of cblas). A copied slot
 * continues as its source. */
static void decode_vs_full(spade_gpt_config c, double tol) {
    spade_policy *p = make(&c);
    heat(p, 3.0f);
    spade_decoder *d = NULL;
    ck_assert_msg(spade_decoder_new(&d, p, 4, err, sizeof err) == 0, "%s", err);
    int pr[3][7], n[3] = {3, 7, 5}, slots[3] = {0, 1, 2};
    const int *tp[3] = {pr[0], pr[1], pr[2]};
    for (int s = 0; s < 3; s++) fill_tokens(pr[s], n[s], SPADE_VOCAB);
    ck_assert_msg(spade_decoder_append_batch(d, slots, tp, n, 3, NULL, err, sizeof err) == 0, "%s", err);
    float a[SPADE_VOCAB], b[SPADE_VOCAB];
    spade_sample_opts so;
    spade_sample_opts_default(&so);
    so.temperature = 0;
    so.max_tokens = 1;
    for (int step = 0; step < 5; step++) {
        for (int s = 0; s < 3; s++) {
            ck_assert(spade_decoder_next_logprobs(d, s, a, err, sizeof err) == 0);
            full_last_logprobs(p, spade_decoder_tokens(d, s), spade_decoder_len(d, s), b);
            double md = 0;
            for (int v = 0; v < SPADE_VOCAB; v++) md = fmax(md, fabs(a[v] - b[v]));
            ck_assert_msg(md <= tol, "%s on %s: slot %d step %d: max |decode - full| = %.3g", c.arch, c.backend, s,
                          step, md);
        }
        if (step == 4) break;
        int out[3], len[3];
        ck_assert(spade_decoder_sample(d, slots, 3, &so, NULL, NULL, out, NULL, len, NULL, err, sizeof err) == 0);
    }
    ck_assert(spade_decoder_copy(d, 3, 1, err, sizeof err) == 0);
    int extra[2] = {5, 9};
    ck_assert(spade_decoder_append(d, 3, extra, 2, err, sizeof err) == 0);
    ck_assert(spade_decoder_next_logprobs(d, 3, a, err, sizeof err) == 0);
    full_last_logprobs(p, spade_decoder_tokens(d, 3), spade_decoder_len(d, 3), b);
    for (int v = 0; v < SPADE_VOCAB; v++) ck_assert(fabs(a[v] - b[v]) <= tol);
    /* the cache holds KVH heads a position: fewer key/value heads, less memory by at least that */
    if (c.kv_heads && c.kv_heads < c.heads) {
        spade_gpt_config c2 = c;
        c2.kv_heads = c.heads;
        spade_policy *p2 = make(&c2);
        spade_decoder *d2 = NULL;
        ck_assert(spade_decoder_new(&d2, p2, 4, err, sizeof err) == 0);
        size_t hs = (size_t)c.width / c.heads,
               fewer = 2 * (size_t)c.layers * 4 * c.context * (c.heads - c.kv_heads) * hs * 4;
        ck_assert_msg(spade_decoder_bytes(d2) >= spade_decoder_bytes(d) + fewer,
                      "decoder bytes %zu with %d kv heads, %zu with %d", spade_decoder_bytes(d), c.kv_heads,
                      spade_decoder_bytes(d2), c.heads);
        spade_decoder_free(d2);
        spade_policy_free(p2);
    }
    spade_decoder_free(d);
    spade_policy_free(p);
}

START_TEST(test_decode_matches_full_ref) {
    decode_vs_full(llama_cfg("cpu_ref"), 1e-5);
    decode_vs_full(qwen_cfg("cpu_ref"), 1e-5);
}
END_TEST
START_TEST(test_decode_matches_full_cpu) {
    decode_vs_full(llama_cfg("cpu"), 2e-4);
    decode_vs_full(qwen_cfg("cpu"), 2e-4);
}
END_TEST

/* spade_decoder_append_shared against append_batch of the same prompts:
 * four slots whose prompts share a 9-token opening (one of them is only the
 * opening), a slot that already holds tokens (not a sharer) and one whose
 * prompt passes the context (refused alike). The next-token log-probs of
 * every slot and 6 sampled tokens with their log-probs: bit for bit on
 * cpu_ref (tol 0), on cpu the same tokens and log-probs within tol. */
static void shared_vs_separate(spade_gpt_config c, double tol) {
    c.context = 24;
    spade_policy *p = make(&c);
    heat(p, 3.0f);
    enum { NS = 6, NT = 6 };
    int pr[NS][30], n[NS] = {12, 9, 14, 11, 3, 30}, slots[NS] = {4, 0, 2, 5, 1, 3};
    const int *tp[NS];
    for (int s = 0; s < NS; s++) {
        fill_tokens(pr[s], 30, SPADE_VOCAB);
        if (s < 4) memcpy(pr[s], pr[0], 9 * sizeof(int)); /* the shared opening */
        tp[s] = pr[s];
    }
    pr[2][9] = pr[0][9] ^ 1; /* not part of the prefix: the common prefix is exactly 9 */
    int held[2] = {7, 8};
    float lp[2][NS][SPADE_VOCAB], slp[2][NS * NT];
    int tok[2][NS * NT], len[2][NS], st[2][NS];
    for (int way = 0; way < 2; way++) {
        spade_decoder *d = NULL;
        ck_assert_msg(spade_decoder_new(&d, p, NS, err, sizeof err) == 0, "%s", err);
        ck_assert(spade_decoder_append(d, 1, held, 2, err, sizeof err) == 0); /* slot 1 is not empty */
        int rc = way ? spade_decoder_append_shared(d, slots, tp, n, NS, st[way], err, sizeof err)
                     : spade_decoder_append_batch(d, slots, tp, n, NS, st[way], err, sizeof err);
        ck_assert_msg(rc == 0, "%s", err);
        ck_assert_int_eq(st[way][5], SPADE_SLOT_CONTEXT_FULL);
        ck_assert_int_eq(spade_decoder_len(d, 3), 0);
        int live[5] = {4, 0, 2, 5, 1};
        for (int s = 0; s < 5; s++) {
            ck_assert_int_eq(st[way][s], 0);
            ck_assert(spade_decoder_next_logprobs(d, live[s], lp[way][s], err, sizeof err) == 0);
        }
        spade_sample_opts so;
        spade_sample_opts_default(&so);
        so.max_tokens = NT;
        so.n_stop = 0;
        so.seed = 3;
        ck_assert(spade_decoder_sample(d, live, 5, &so, NULL, NULL, tok[way], slp[way], len[way], NULL, err,
                                       sizeof err) == 0);
        spade_decoder_free(d);
    }
    for (int s = 0; s < 5; s++) {
        double md = 0;
        for (int v = 0; v < SPADE_VOCAB; v++) md = fmax(md, fabs(lp[0][s][v] - lp[1][s][v]));
        ck_assert_msg(md <= tol, "%s on %s: slot %d: next log-probs shared vs separate differ by %.3g", c.arch,
                      c.backend, slots[s], md);
        ck_assert_int_eq(len[0][s], len[1][s]);
        for (int j = 0; j < len[0][s]; j++) {
            ck_assert_int_eq(tok[0][s * NT + j], tok[1][s * NT + j]);
            ck_assert_msg(fabs(slp[0][s * NT + j] - slp[1][s * NT + j]) <= tol, "%s on %s: slot %d token %d: %g vs %g",
                          c.arch, c.backend, slots[s], j, slp[0][s * NT + j], slp[1][s * NT + j]);
        }
    }
    spade_policy_free(p);
}

START_TEST(test_shared_prefix_ref) {
    shared_vs_separate(llama_cfg("cpu_ref"), 0);
    shared_vs_separate(qwen_cfg("cpu_ref"), 0);
}
END_TEST
START_TEST(test_shared_prefix_cpu) {
    shared_vs_separate(llama_cfg("cpu"), 1e-4);
    shared_vs_separate(qwen_cfg("cpu"), 1e-4);
}
END_TEST

/* spade_policy_sample (the decoder under it) with and without the KV cache:
 * the same seeded tokens. */
START_TEST(test_sample_cache_equals_recompute) {
    spade_gpt_config c = qwen_cfg("cpu_ref");
    spade_policy *p = make(&c);
    heat(p, 3.0f);
    int prompt[4] = {10, 20, 30, 40}, o1[3 * 8], o2[3 * 8], l1[3], l2[3];
    spade_sample_opts so;
    spade_sample_opts_default(&so);
    so.max_tokens = 8;
    so.seed = 5;
    ck_assert(spade_policy_sample(p, prompt, 4, 3, &so, o1, NULL, l1, err, sizeof err) == 0);
    so.no_kv_cache = 1;
    ck_assert(spade_policy_sample(p, prompt, 4, 3, &so, o2, NULL, l2, err, sizeof err) == 0);
    for (int i = 0; i < 3; i++) {
        ck_assert_int_eq(l1[i], l2[i]);
        for (int j = 0; j < l1[i]; j++) ck_assert_int_eq(o1[i * 8 + j], o2[i * 8 + j]);
    }
    spade_policy_free(p);
}
END_TEST

/* ------------------------------------------------------------ checkpoints */

static char tmpdir[256];

static unsigned char *slurp(const char *path, size_t *n) {
    FILE *f = fopen(path, "rb");
    ck_assert_ptr_nonnull(f);
    fseek(f, 0, SEEK_END);
    *n = (size_t)ftell(f);
    fseek(f, 0, SEEK_SET);
    unsigned char *b = malloc(*n);
    ck_assert(fread(b, 1, *n, f) == *n);
    fclose(f);
    return b;
}

static void spit(const char *path, const unsigned char *b, size_t n) {
    FILE *f = fopen(path, "wb");
    ck_assert_ptr_nonnull(f);
    ck_assert(fwrite(b, 1, n, f) == n);
    fclose(f);
}

static uint64_t fnv(const unsigned char *b, size_t n) {
    uint64_t h = 0xCBF29CE484222325ull;
    for (size_t i = 0; i < n; i++) {
        h ^= b[i];
        h *= 0x100000001B3ull;
    }
    return h;
}

/* Save, load, save again: the same bytes, the architecture and its keys
 * kept, the weights and moments equal, and the loaded model computes the
 * same loss. A damaged architecture field is refused with its name. */
START_TEST(test_checkpoint_roundtrip) {
    tu_mkdtemp(tmpdir, sizeof tmpdir, "llama");
    char a[512], b[512], bad[512];
    snprintf(a, sizeof a, "%s/a.ckpt", tmpdir);
    snprintf(b, sizeof b, "%s/b.ckpt", tmpdir);
    snprintf(bad, sizeof bad, "%s/bad.ckpt", tmpdir);
    spade_gpt_config c = qwen_cfg("cpu_ref");
    spade_policy *p = make(&c);
    int tok[16], tg[16];
    fill_tokens(tok, 16, SPADE_VOCAB);
    for (int i = 0; i < 16; i++) tg[i] = i + 1 < 16 ? tok[i + 1] : -1;
    float l0, l1;
    spade_adamw_opts o;
    spade_adamw_opts_default(&o);
    ck_assert(spade_policy_forward(p, tok, tg, NULL, 1, 16, &l0, NULL, err, sizeof err) == 0);
    ck_assert(spade_policy_backward(p, 1.0f, err, sizeof err) == 0);
    ck_assert(spade_policy_step(p, &o, NULL, err, sizeof err) == 0);
    ck_assert(spade_policy_forward(p, tok, tg, NULL, 1, 16, &l0, NULL, err, sizeof err) == 0);
    ck_assert_msg(spade_policy_save(p, a, err, sizeof err) == 0, "%s", err);
    spade_gpt_config rc;
    ck_assert(spade_policy_read_config(a, &rc, err, sizeof err) == 0);
    ck_assert_str_eq(rc.arch, "llama");
    ck_assert_int_eq(rc.kv_heads, 1);
    ck_assert_int_eq(rc.ffn, 20);
    ck_assert_int_eq(rc.qkv_bias, 1);
    ck_assert_int_eq(rc.untied, 1);
    ck_assert_int_eq(rc.rope_neox, 1);
    ck_assert(rc.rope_base == 1e6);
    ck_assert(rc.norm_eps == 1e-5f);
    spade_policy *q = NULL;
    ck_assert_msg(spade_policy_load(&q, a, NULL, err, sizeof err) == 0, "%s", err);
    ck_assert_str_eq(spade_policy_config(q)->arch, "llama");
    ck_assert_int_eq(spade_policy_steps(q), 1);
    ck_assert(spade_policy_forward(q, tok, tg, NULL, 1, 16, &l1, NULL, err, sizeof err) == 0);
    ck_assert(l0 == l1);
    ck_assert(spade_policy_save(q, b, err, sizeof err) == 0);
    size_t na, nb;
    unsigned char *ba = slurp(a, &na), *bb = slurp(b, &nb);
    ck_assert_uint_eq(na, nb);
    ck_assert(memcmp(ba, bb, na) == 0);
    /* a damaged architecture name (checksum made good again) is named */
    memcpy(ba + 96, "mamba\0\0\0", 8);
    uint64_t h = fnv(ba, na - 8);
    memcpy(ba + na - 8, &h, 8);
    spit(bad, ba, na);
    spade_policy *z = NULL;
    ck_assert(spade_policy_load(&z, bad, NULL, err, sizeof err) == SPADE_POLICY_EFORMAT);
    ck_assert_msg(strstr(err, "architecture"), "%s", err);
    /* kv_heads that do not divide the heads: refused by the config check */
    free(ba);
    ba = slurp(a, &na);
    int32_t three = 3;
    memcpy(ba + 104, &three, 4);
    h = fnv(ba, na - 8);
    memcpy(ba + na - 8, &h, 8);
    spit(bad, ba, na);
    ck_assert(spade_policy_load(&z, bad, NULL, err, sizeof err) == SPADE_POLICY_EFORMAT);
    ck_assert_msg(strstr(err, "kv_heads"), "%s", err);
    free(ba);
    free(bb);
    spade_policy_free(p);
    spade_policy_free(q);
    tu_rm_rf(tmpdir);
}
END_TEST

/* A GPT is saved as version 2 (no architecture, 96-byte header: what every
 * checkpoint before this one is) and loads as a GPT; so does a version-3
 * file that says gpt (made here from it by inserting the 40 architecture
 * bytes), with the same weights. */
START_TEST(test_checkpoint_gpt_versions) {
    tu_mkdtemp(tmpdir, sizeof tmpdir, "llama");
    char a[512], b[512];
    snprintf(a, sizeof a, "%s/gpt2.ckpt", tmpdir);
    snprintf(b, sizeof b, "%s/gpt3.ckpt", tmpdir);
    spade_gpt_config c;
    spade_gpt_config_default(&c);
    c.layers = 1;
    c.heads = 2;
    c.width = 16;
    c.context = 8;
    snprintf(c.backend, sizeof c.backend, "cpu_ref");
    spade_policy *p = make(&c);
    ck_assert(spade_policy_save(p, a, err, sizeof err) == 0);
    size_t n;
    unsigned char *f = slurp(a, &n);
    uint32_t v;
    memcpy(&v, f + 8, 4);
    ck_assert_uint_eq(v, 2);
    memcpy(&v, f + 16, 4);
    ck_assert_uint_eq(v, 96);
    size_t m = n + 40;
    unsigned char *g = calloc(1, m);
    memcpy(g, f, 96);
    memcpy(g + 96, "gpt", 3);
    memcpy(g + 136, f + 96, n - 96);
    v = 3;
    memcpy(g + 8, &v, 4);
    v = 136;
    memcpy(g + 16, &v, 4);
    uint64_t h = fnv(g, m - 8);
    memcpy(g + m - 8, &h, 8);
    spit(b, g, m);
    size_t P = spade_policy_num_params(p);
    float *w1 = malloc(P * 4), *w2 = malloc(P * 4);
    spade_policy_get_params(p, w1, err, sizeof err);
    const char *paths[2] = {a, b};
    for (int k = 0; k < 2; k++) {
        spade_policy *q = NULL;
        ck_assert_msg(spade_policy_load(&q, paths[k], NULL, err, sizeof err) == 0, "%s", err);
        ck_assert_str_eq(spade_policy_config(q)->arch, "gpt");
        ck_assert_uint_eq(spade_policy_num_params(q), P);
        spade_policy_get_params(q, w2, err, sizeof err);
        ck_assert(memcmp(w1, w2, P * 4) == 0);
        spade_policy_free(q);
    }
    /* a GPT file of version 3 whose llama keys are set is refused */
    int32_t one = 1; /* kv_heads 1 of 2 heads */
    memcpy(g + 104, &one, 4);
    h = fnv(g, m - 8);
    memcpy(g + m - 8, &h, 8);
    spit(b, g, m);
    spade_policy *z = NULL;
    ck_assert(spade_policy_load(&z, b, NULL, err, sizeof err) == SPADE_POLICY_EFORMAT);
    ck_assert_msg(strstr(err, "kv_heads"), "%s", err);
    free(w1);
    free(w2);
    free(f);
    free(g);
    spade_policy_free(p);
    tu_rm_rf(tmpdir);
}
END_TEST

/* ------------------------------------------------------------ training */

/* Runs `spade pretrain` on the config text, output captured; returns its
 * status, the output in *out (malloc()ed). */
static int run_pretrain(const char *text, char **out) {
    char path[512], log[512];
    snprintf(path, sizeof path, "%s/run.ini", tmpdir);
    FILE *f = fopen(path, "w");
    fputs(text, f);
    fclose(f);
    snprintf(log, sizeof log, "%s/log.txt", tmpdir);
    fflush(stdout);
    fflush(stderr);
    int so = dup(1), se = dup(2), fd = open(log, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    dup2(fd, 1);
    dup2(fd, 2);
    close(fd);
    char *argv[] = {"pretrain", path, NULL};
    int rc = spade_cmd_pretrain(2, argv);
    fflush(stdout);
    fflush(stderr);
    dup2(so, 1);
    dup2(se, 2);
    close(so);
    close(se);
    size_t n;
    unsigned char *b = slurp(log, &n);
    b = realloc(b, n + 1);
    b[n] = 0;
    *out = (char *)b;
    return rc;
}

/* `spade pretrain` on a Llama config, unchanged: it runs its steps, writes a
 * checkpoint that is a Llama, resumes from it, and refuses to resume it as
 * a GPT of the same shape (or a Llama with other KV heads). */
START_TEST(test_pretrain_runs) {
    tu_mkdtemp(tmpdir, sizeof tmpdir, "llama-pretrain");
    char path[512], text[2048];
    snprintf(path, sizeof path, "%s/data", tmpdir);
    ck_assert_int_eq(mkdir(path, 0755), 0);
    snprintf(path, sizeof path, "%s/data/a.c", tmpdir);
    FILE *f = fopen(path, "w");
    fputs("int main(void) { return 0; }\nstatic int step(int x) { return x + 1; }\n", f);
    fclose(f);
    const char *fmt = "[policy]\n%slayers = 1\nheads = 4\nwidth = 16\ncontext = 32\n"
                      "backend = cpu\nseed = 3\n\n[pretrain]\ndata = %s/data\nout = %s/out\nsteps = %d\n"
                      "batch = 2\nlr = 1e-3\nwarmup = 1\ncheckpoint_every = 2\nsample_every = 2\nsample_tokens = 8\n";
    const char *llama = "arch = llama\nkv_heads = 2\nffn = 24\nrope_base = 10000\n";
    char *out;
    snprintf(text, sizeof text, fmt, llama, tmpdir, tmpdir, 4);
    int rc = run_pretrain(text, &out);
    ck_assert_msg(rc == 0, "pretrain failed: %s", out);
    free(out);
    char ckpt[512];
    snprintf(ckpt, sizeof ckpt, "%s/out/policy.ckpt", tmpdir);
    spade_policy *p = NULL;
    ck_assert_msg(spade_policy_load(&p, ckpt, NULL, err, sizeof err) == 0, "%s", err);
    ck_assert_str_eq(spade_policy_config(p)->arch, "llama");
    ck_assert_int_eq(spade_policy_config(p)->kv_heads, 2);
    ck_assert_int_eq(spade_policy_steps(p), 4);
    spade_policy_free(p);
    snprintf(text, sizeof text, fmt, llama, tmpdir, tmpdir, 6);
    rc = run_pretrain(text, &out);
    ck_assert_msg(rc == 0 && strstr(out, "resuming at step 4"), "resume: %s", out);
    free(out);
    snprintf(text, sizeof text, fmt, "", tmpdir, tmpdir, 8);
    rc = run_pretrain(text, &out);
    ck_assert_msg(rc != 0 && strstr(out, "cannot resume") && strstr(out, "arch llama"), "as a gpt: %s", out);
    free(out);
    snprintf(text, sizeof text, fmt, "arch = llama\nkv_heads = 4\nffn = 24\n", tmpdir, tmpdir, 8);
    rc = run_pretrain(text, &out);
    ck_assert_msg(rc != 0 && strstr(out, "cannot resume"), "other kv heads: %s", out);
    free(out);
    tu_rm_rf(tmpdir);
}
END_TEST

/* Training moves the model: a few AdamW steps on one batch lower its loss. */
START_TEST(test_overfit_steps) {
    spade_gpt_config c = qwen_cfg("cpu");
    spade_policy *p = make(&c);
    int tok[32], tg[32];
    fill_tokens(tok, 32, 64);
    for (int i = 0; i < 32; i++) tg[i] = (i + 1) % 16 ? tok[i + 1] : -1;
    spade_adamw_opts o;
    spade_adamw_opts_default(&o);
    o.lr = 3e-3f;
    float first = 0, loss = 0;
    for (int s = 0; s < 30; s++) {
        ck_assert(spade_policy_forward(p, tok, tg, NULL, 2, 16, &loss, NULL, err, sizeof err) == 0);
        if (!s) first = loss;
        ck_assert(spade_policy_backward(p, 1.0f, err, sizeof err) == 0);
        ck_assert(spade_policy_step(p, &o, NULL, err, sizeof err) == 0);
    }
    ck_assert_msg(loss < 0.5f * first, "loss %.3f after 30 steps from %.3f", loss, first);
    spade_policy_free(p);
}
END_TEST

/* A GRPO update (masked form, two groups, a frozen reference) runs on a
 * Llama and changes the weights in the direction of the better sample. */
START_TEST(test_grpo_step) {
    spade_gpt_config c = llama_cfg("cpu");
    spade_policy *p = make(&c), *ref = NULL;
    heat(p, 3.0f);
    ck_assert(spade_policy_clone(&ref, p, NULL, err, sizeof err) == 0);
    int prompt[4] = {1, 2, 3, 4}, comp[4][5];
    float old[4][5];
    spade_grpo_sample s[4];
    float rw[4] = {1, 0, 0.3f, 0.7f};
    for (int i = 0; i < 4; i++) {
        fill_tokens(comp[i], 5, SPADE_VOCAB);
        ck_assert(spade_policy_completion_logprobs(p, prompt, 4, comp[i], 5, old[i], err, sizeof err) == 0);
        s[i] = (spade_grpo_sample){.prompt = prompt,
                                   .prompt_len = 4,
                                   .completion = comp[i],
                                   .completion_len = 5,
                                   .old_logprobs = old[i],
                                   .reward = rw[i],
                                   .group = i / 2};
    }
    spade_grpo_opts go;
    spade_grpo_opts_default(&go);
    go.beta = 0.1f;
    spade_adamw_opts ao;
    spade_adamw_opts_default(&ao);
    ao.lr = 1e-3f;
    float before[5], after[5];
    ck_assert(spade_policy_completion_logprobs(p, prompt, 4, comp[0], 5, before, err, sizeof err) == 0);
    spade_grpo_stats st;
    ck_assert_msg(spade_grpo_update(p, ref, s, 4, &go, &ao, &st, err, sizeof err) == 0, "%s", err);
    ck_assert_int_eq(st.n_steps, 1);
    ck_assert(st.grad_norm > 0 && isfinite(st.grad_norm));
    ck_assert(spade_policy_completion_logprobs(p, prompt, 4, comp[0], 5, after, err, sizeof err) == 0);
    double db = 0, da = 0;
    for (int j = 0; j < 5; j++) db += before[j], da += after[j];
    ck_assert_msg(da > db, "the rewarded completion's log-prob went %.5f -> %.5f", db, da);
    spade_policy_free(p);
    spade_policy_free(ref);
}
END_TEST

/* Masked multi-turn GRPO on a Qwen2-style model: episodes of context (mask
 * 0) and action (mask 1) segments, two groups, a reference that differs,
 * micro-batches of 2 (rows of different lengths padded together). The
 * directional derivative of the loss against finite differences, h = 1e-3,
 * cpu_ref; bound as test_grpo's: |num - ana| <= 2e-2 |ana| + 1e-4. */
static double grpo_loss(spade_policy *p, spade_policy *ref, const float *w, const spade_grpo_sample *s, int n,
                        const spade_grpo_opts *o) {
    ck_assert(spade_policy_set_params(p, w, err, sizeof err) == 0);
    spade_grpo_stats st;
    ck_assert_msg(spade_grpo_batch(p, ref, s, n, o, &st, err, sizeof err) == 0, "%s", err);
    return st.loss;
}

START_TEST(test_grpo_masked_gradient_check) {
    spade_gpt_config c = qwen_cfg("cpu_ref");
    spade_policy *p = make(&c), *ref = NULL;
    heat(p, 15.0f);
    ck_assert(spade_policy_clone(&ref, p, NULL, err, sizeof err) == 0);
    heat(ref, 1.0f);
    enum { E = 4, LEN = 16 };
    int tok[E][LEN];
    unsigned char mask[E][LEN];
    float old[E][LEN];
    int len[E] = {16, 11, 14, 9};
    spade_grpo_sample s[E];
    float rw[E] = {1.0f, 0.2f, 0.5f, 0.9f};
    for (int e = 0; e < E; e++) {
        /* context 3, action 3, observation 2, action ... */
        for (int t = 0; t < len[e]; t++) {
            mask[e][t] = t >= 3 && (t - 3) % 5 < 3;
            tok[e][t] = mask[e][t] ? (int)(urand() * SPADE_VOCAB) : (int)(urand() * 256);
        }
        float lp[LEN];
        ck_assert(spade_policy_logprobs(p, tok[e], 1, len[e], lp, err, sizeof err) == 0);
        for (int t = 0; t < len[e]; t++)
            old[e][t] = t && mask[e][t] ? lp[t - 1] + 0.1f * (float)(2 * urand() - 1) : 0.0f;
        s[e] = (spade_grpo_sample){.tokens = tok[e],
                                   .len = len[e],
                                   .mask = mask[e],
                                   .old_logprobs = old[e],
                                   .reward = rw[e],
                                   .group = e / 2,
                                   .role = 0};
    }
    spade_grpo_opts o;
    spade_grpo_opts_default(&o);
    o.beta = 0.3f;
    o.micro_batch = 2;
    size_t P = spade_policy_num_params(p);
    float *w = malloc(P * 4), *g = malloc(P * 4), *wd = malloc(P * 4), *d = malloc(P * 4);
    ck_assert(spade_policy_get_params(p, w, err, sizeof err) == 0);
    ck_assert(spade_policy_zero_grad(p, err, sizeof err) == 0);
    spade_grpo_stats st;
    ck_assert_msg(spade_grpo_batch(p, ref, s, E, &o, &st, err, sizeof err) == 0, "%s", err);
    ck_assert(st.clip_frac == 0.0f && st.kl > 0.0f && st.n_samples == E);
    ck_assert(spade_policy_get_grads(p, g, err, sizeof err) == 0);
    for (int rep = 0; rep < 3; rep++) {
        double ana = 0;
        for (size_t j = 0; j < P; j++) {
            d[j] = (float)(2 * urand() - 1);
            ana += (double)g[j] * d[j];
        }
        double h = 1e-3;
        for (size_t j = 0; j < P; j++) wd[j] = w[j] + (float)h * d[j];
        double lp = grpo_loss(p, ref, wd, s, E, &o);
        for (size_t j = 0; j < P; j++) wd[j] = w[j] - (float)h * d[j];
        double lm = grpo_loss(p, ref, wd, s, E, &o);
        double num = (lp - lm) / (2 * h);
        ck_assert_msg(fabs(num - ana) <= 2e-2 * fabs(ana) + 1e-4, "masked grpo: numeric %.6g vs analytic %.6g", num,
                      ana);
    }
    free(w);
    free(g);
    free(wd);
    free(d);
    spade_policy_free(p);
    spade_policy_free(ref);
}
END_TEST

/* ------------------------------------------------------------ CUDA */

/* Compiled only with the CUDA backend; skipped at run time, saying so, with no GPU.
 * Bounds as test_policy's CUDA parity: loss 1e-4 relative, gradients 2e-3 of
 * each tensor's max, and the decoder's next-token log-probs within 1e-3. */
START_TEST(test_cuda_parity) {
#ifndef SPADE_POLICY_CUDA
    fprintf(stderr, "test_llama: SKIP cuda parity: this build has no CUDA backend\n");
    return;
#else
    spade_backend be;
    char note[256];
    int rc = spade_backend_open("cuda", &be, note, sizeof note, err, sizeof err);
    if (rc == SPADE_POLICY_ENODEV) {
        fprintf(stderr, "test_llama: SKIP cuda parity: no GPU present (%s)\n", err);
        return;
    }
    ck_assert_msg(rc == 0, "cuda backend: %s", err);
    spade_backend_close(&be);
    for (int k = 0; k < 2; k++) {
        spade_gpt_config c = k ? qwen_cfg("cpu") : llama_cfg("cpu");
        c.context = 24;
        spade_policy *r = make(&c), *g = NULL;
        heat(r, 3.0f);
        ck_assert_msg(spade_policy_clone(&g, r, "cuda", err, sizeof err) == 0, "%s", err);
        int B = 3, T = 24, N = B * T;
        int *tok = malloc(N * 4), *tg = malloc(N * 4);
        fill_tokens(tok, N, 256);
        for (int i = 0; i < N; i++) tg[i] = (i + 1) % T ? tok[i + 1] : -1;
        float l1, l2;
        ck_assert(spade_policy_forward(r, tok, tg, NULL, B, T, &l1, NULL, err, sizeof err) == 0);
        ck_assert_msg(spade_policy_forward(g, tok, tg, NULL, B, T, &l2, NULL, err, sizeof err) == 0, "%s", err);
        ck_assert_msg(fabsf(l1 - l2) <= 1e-4f * fabsf(l1), "%s loss cpu %.7f cuda %.7f", c.arch, l1, l2);
        ck_assert(spade_policy_backward(r, 1.0f, err, sizeof err) == 0);
        ck_assert_msg(spade_policy_backward(g, 1.0f, err, sizeof err) == 0, "%s", err);
        size_t P = spade_policy_num_params(r);
        float *a = malloc(P * 4), *b = malloc(P * 4);
        spade_policy_get_grads(r, a, err, sizeof err);
        spade_policy_get_grads(g, b, err, sizeof err);
        tu_assert_grads_close(r, a, b, 2e-3, "%s, cpu vs cuda", c.arch);
        spade_decoder *dr = NULL, *dg = NULL;
        ck_assert(spade_decoder_new(&dr, r, 2, err, sizeof err) == 0);
        ck_assert(spade_decoder_new(&dg, g, 2, err, sizeof err) == 0);
        float x[SPADE_VOCAB], y[SPADE_VOCAB];
        ck_assert(spade_decoder_append(dr, 1, tok, 9, err, sizeof err) == 0);
        ck_assert_msg(spade_decoder_append(dg, 1, tok, 9, err, sizeof err) == 0, "%s", err);
        ck_assert(spade_decoder_next_logprobs(dr, 1, x, err, sizeof err) == 0);
        ck_assert(spade_decoder_next_logprobs(dg, 1, y, err, sizeof err) == 0);
        for (int v = 0; v < SPADE_VOCAB; v++) ck_assert_msg(fabsf(x[v] - y[v]) < 1e-3f, "decode v %d", v);
        spade_decoder_free(dr);
        spade_decoder_free(dg);
        free(tok);
        free(tg);
        free(a);
        free(b);
        spade_policy_free(r);
        spade_policy_free(g);
    }
#endif
}
END_TEST

static Suite *llama_suite(void) {
    Suite *s = suite_create("llama");
    TCase *t = tcase_create("core");
    tcase_set_timeout(t, 300);
    tcase_add_checked_fixture(t, rng_reset, NULL);
    tcase_add_test(t, test_config_keys);
    tcase_add_test(t, test_ops_ref);
    tcase_add_test(t, test_ops_cpu);
    tcase_add_test(t, test_gradient_check_llama);
    tcase_add_test(t, test_gradient_check_qwen2);
    tcase_add_test(t, test_cpu_matches_reference);
    tcase_add_test(t, test_decode_matches_full_ref);
    tcase_add_test(t, test_decode_matches_full_cpu);
    tcase_add_test(t, test_sample_cache_equals_recompute);
    tcase_add_test(t, test_shared_prefix_ref);
    tcase_add_test(t, test_shared_prefix_cpu);
    tcase_add_test(t, test_checkpoint_roundtrip);
    tcase_add_test(t, test_checkpoint_gpt_versions);
    tcase_add_test(t, test_pretrain_runs);
    tcase_add_test(t, test_overfit_steps);
    tcase_add_test(t, test_grpo_step);
    tcase_add_test(t, test_grpo_masked_gradient_check);
    tcase_add_test(t, test_cuda_parity);
    suite_add_tcase(s, t);
    return s;
}

int main(void) { return tu_run(llama_suite()); }
