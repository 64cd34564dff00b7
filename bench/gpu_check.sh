#!/bin/sh
# bench/gpu_check.sh — the CUDA backend's checks, for a machine with an NVIDIA GPU.
#
# What it is: one short script (a few minutes) that builds spade out of tree with
# CUDA required, then
#   1. opcheck: every backend op (the Llama family's too) on "cuda" against "cpu_ref" (odd widths, several
#      blocks, offset pointers, NaN-filled outputs that must be overwritten);
#   2. the same under compute-sanitizer memcheck and racecheck, when the toolkit has it;
#   3. tests/test_policy, whose CUDA parity test runs only where a GPU is usable;
#      tests/test_grpo likewise (masked GRPO, per-role norms, spade_grpo_update);
#      tests/test_llama (the Llama family: training and decoding on cuda vs cpu);
#      tests/test_decode (the decoding batch on cuda vs cpu_ref) and bench/bench_decode
#      --backend cuda (32 episodes decoded together vs one at a time);
#   3. tests/test_policy and tests/test_attention, whose CUDA parity tests run only
#      where a GPU is usable;
#   4. bench/bench_policy --quick (the policy benchmark) and gpubench: training and
#      KV-cache sampling tokens/s on cuda as ratios against cpu measured in the same run,
#      and TF32 against full FP32 GEMMs;
# and prints a summary. opcheck.c and gpubench.c are written out from this file.
# What it is not: part of make check (no GPU there), nor a tuning tool.
#
# Usage: sh bench/gpu_check.sh           (from anywhere; the source tree is this file's ../)
# Environment: BUILD (build directory, default /tmp/spade-gpu-build), JOBS (make -j,
# default nproc), OUT (a directory: full logs go there; default $BUILD/logs).
# Exit status: 0 all passed; 1 a check failed; 2 the build failed; 3 no usable GPU.
# When the source tree has no ./configure (it is not in git), the script runs
# autoreconf -fi; without autotools, bring configure, Makefile.in, aclocal.m4,
# build-aux and config.h.in along with the tree.
set -u
SRC=$(cd "$(dirname "$0")/.." && pwd)
BUILD=${BUILD:-/tmp/spade-gpu-build}
JOBS=${JOBS:-$(nproc 2>/dev/null || echo 4)}
LOGS=${OUT:-$BUILD/logs}
mkdir -p "$BUILD" "$LOGS" || exit 2
SUMMARY="$LOGS/summary.txt"
: > "$SUMMARY"
T0=$(date +%s)
result() { printf '%-34s %-5s %s\n' "$1" "$2" "$3" >> "$SUMMARY"; }
elapsed() { echo "$(( $(date +%s) - $1 ))s"; }
finish() {
    echo
    echo "==================== gpu_check summary ($(elapsed "$T0") in all) ===================="
    cat "$SUMMARY"
    echo "logs: $LOGS"
    exit "$1"
}
# Shows the end of a log when something went wrong.
show() { echo "---- last lines of $1"; tail -n "${2:-40}" "$1"; }

echo "== GPU"
if command -v nvidia-smi >/dev/null 2>&1; then
    nvidia-smi --query-gpu=name,driver_version,memory.total,compute_cap --format=csv,noheader 2>&1 | tee "$LOGS/gpu.txt"
else
    echo "nvidia-smi not found" | tee "$LOGS/gpu.txt"
fi
NVCC_BIN=$(command -v nvcc 2>/dev/null || echo /usr/local/cuda/bin/nvcc)
"$NVCC_BIN" --version 2>&1 | tail -n 2

echo "== configure + build (out of tree in $BUILD, make -j$JOBS)"
t=$(date +%s)
if [ ! -x "$SRC/configure" ]; then
    if ! (cd "$SRC" && autoreconf -fi) > "$LOGS/autoreconf.log" 2>&1; then
        show "$LOGS/autoreconf.log" 10
        result build FAIL "no ./configure and autoreconf failed (bring configure, Makefile.in, aclocal.m4, build-aux, config.h.in)"
        finish 2
    fi
fi
cd "$BUILD" || exit 2
if ! "$SRC/configure" -q --with-cuda=yes > "$LOGS/configure.log" 2>&1; then
    show "$LOGS/configure.log" 30
    result build FAIL "configure --with-cuda=yes failed (see configure.log)"
    finish 2
fi
if ! make -j"$JOBS" libspade.a spade-cuda.so tests/test_policy tests/test_attention bench/bench_policy > "$LOGS/build.log" 2>&1; then
    show "$LOGS/build.log" 40
    result build FAIL "make failed (see build.log)"
    finish 2
fi
# The link line every spade program uses, taken from the generated Makefile itself.
cat > "$BUILD/gpu_check_vars.mk" <<'MK'
gpu-check-vars:
	@echo "CC='$(CC)'"
	@echo "LIBS='$(SPADE_LIBS) $(OPENMP_CFLAGS)'"
MK
eval "$(make -s -f Makefile -f gpu_check_vars.mk gpu-check-vars)"
mkdir -p "$BUILD/gpu_check"
cat > "$BUILD/gpu_check/opcheck.c" <<'OPCHECK_C'
/* opcheck.c — every backend op on "cuda" against "cpu_ref", on random data with
 * awkward shapes (widths not multiples of 32, several blocks, offset pointers).
 * Outputs that an op overwrites are pre-filled with NaN on the GPU side (reading
 * them would show); outputs it accumulates into are pre-filled with the same
 * random values on both sides. Exit 0 when every op agrees, 1 otherwise, 77 when
 * there is no GPU. */
#include "policy/backend.h"
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static spade_backend R, G;
static int failures;
static unsigned long long rng = 0x1234567;
static float frand(void) {
    rng = rng * 6364136223846793005ull + 1442695040888963407ull;
    return (float)((double)(rng >> 11) / 9007199254740992.0) * 2.0f - 1.0f;
}
static float *hrand(size_t n, float s) {
    float *x = malloc((n ? n : 1) * sizeof *x);
    for (size_t i = 0; i < n; i++) x[i] = s * frand();
    return x;
}
static void die(spade_backend *b, const char *what) {
    fprintf(stderr, "opcheck: %s on %s: %s\n", what, b->vt->name, b->vt->last_error(b->ctx));
    exit(1);
}
/* A device copy one element into its allocation (pointers need not start a block). */
static void *dev(spade_backend *b, const void *h, size_t bytes) {
    char *p = b->vt->alloc(b->ctx, bytes + 64);
    if (!p) die(b, "alloc");
    if (h && b->vt->upload(b->ctx, p + 4, h, bytes)) die(b, "upload");
    return p + 4;
}
static void *devnan(spade_backend *b, size_t bytes) {
    float *h = malloc(bytes + 4);
    for (size_t i = 0; i < bytes / 4; i++) h[i] = NAN;
    void *p = dev(b, h, bytes);
    free(h);
    return p;
}
static void compare(const char *what, float *r, float *g, size_t n, double rel) {
    float *hr = malloc(n * 4 + 4), *hg = malloc(n * 4 + 4);
    if (R.vt->download(R.ctx, hr, r, n * 4)) die(&R, "download");
    if (G.vt->download(G.ctx, hg, g, n * 4)) die(&G, "download");
    double mx = 0, md = 0;
    size_t at = 0;
    int bad = 0;
    for (size_t i = 0; i < n; i++) {
        mx = fmax(mx, fabs(hr[i]));
        double d = fabs((double)hr[i] - hg[i]);
        if (isnan(hg[i]) != isnan(hr[i]) || d > md) { md = isnan(d) ? INFINITY : d; at = i; }
        if (isnan(hg[i]) && !isnan(hr[i])) bad = 1;
    }
    int ok = !bad && md <= rel * (mx > 1 ? mx : 1);
    printf("  %-40s %s  max|ref| %.3g  max diff %.3g (at %zu: ref %.7g cuda %.7g)\n", what,
           ok ? "ok  " : "FAIL", mx, md, at, n ? hr[at] : 0.0f, n ? hg[at] : 0.0f);
    failures += !ok;
    free(hr);
    free(hg);
}
#define BOTH(call_r, call_g)                     \
    do {                                         \
        if (call_r) die(&R, #call_r);            \
        if (call_g) die(&G, #call_g);            \
    } while (0)

static void run(int B, int T, int C, int NH, int maxT, int V, int Vp) {
    int N = B * T, C3 = 3 * C;
    printf("shape B=%d T=%d C=%d NH=%d maxT=%d V=%d Vp=%d\n", B, T, C, NH, maxT, V, Vp);
    const double tol = 2e-5;
    /* encoder */
    int *tok = malloc(N * sizeof *tok);
    for (int i = 0; i < N; i++) tok[i] = i % 5 == 0 ? 7 : (int)((frand() + 1) * 0.5f * V) % V;
    float *wte = hrand((size_t)Vp * C, 1), *wpe = hrand((size_t)maxT * C, 1);
    int *tr = dev(&R, tok, N * 4), *tg = dev(&G, tok, N * 4);
    float *wter = dev(&R, wte, (size_t)Vp * C * 4), *wteg = dev(&G, wte, (size_t)Vp * C * 4);
    float *wper = dev(&R, wpe, (size_t)maxT * C * 4), *wpeg = dev(&G, wpe, (size_t)maxT * C * 4);
    float *outr = dev(&R, NULL, (size_t)N * C * 4), *outg = devnan(&G, (size_t)N * C * 4);
    int pos0 = maxT - T;
    BOTH(R.vt->encoder_forward(R.ctx, outr, tr, wter, wper, B, T, C, pos0),
         G.vt->encoder_forward(G.ctx, outg, tg, wteg, wpeg, B, T, C, pos0));
    compare("encoder_forward (pos0 > 0)", outr, outg, (size_t)N * C, tol);
    float *dout = hrand((size_t)N * C, 1);
    float *dor = dev(&R, dout, (size_t)N * C * 4), *dog = dev(&G, dout, (size_t)N * C * 4);
    BOTH(R.vt->encoder_backward(R.ctx, wter, wper, dor, tr, B, T, C),
         G.vt->encoder_backward(G.ctx, wteg, wpeg, dog, tg, B, T, C));
    compare("encoder_backward dwte (+=)", wter, wteg, (size_t)Vp * C, tol);
    compare("encoder_backward dwpe (+=)", wper, wpeg, (size_t)maxT * C, tol);

    /* layernorm */
    float *x = hrand((size_t)N * C, 2), *w = hrand(C, 1), *bb = hrand(C, 1);
    for (int i = 0; i < N * C; i++) x[i] += (float)(i / C % 3); /* nonzero row means */
    float *xr = dev(&R, x, (size_t)N * C * 4), *xg = dev(&G, x, (size_t)N * C * 4);
    float *wr = dev(&R, w, C * 4), *wg = dev(&G, w, C * 4), *br = dev(&R, bb, C * 4), *bg = dev(&G, bb, C * 4);
    float *mr = dev(&R, NULL, N * 4), *mg = devnan(&G, N * 4), *rr = dev(&R, NULL, N * 4), *rg = devnan(&G, N * 4);
    BOTH(R.vt->layernorm_forward(R.ctx, outr, mr, rr, xr, wr, br, N, C),
         G.vt->layernorm_forward(G.ctx, outg, mg, rg, xg, wg, bg, N, C));
    compare("layernorm_forward out", outr, outg, (size_t)N * C, tol);
    compare("layernorm_forward mean", mr, mg, N, tol);
    compare("layernorm_forward rstd", rr, rg, N, tol);
    BOTH(R.vt->layernorm_forward(R.ctx, outr, NULL, NULL, xr, wr, br, N, C),
         G.vt->layernorm_forward(G.ctx, outg, NULL, NULL, xg, wg, bg, N, C));
    compare("layernorm_forward out (no mean/rstd)", outr, outg, (size_t)N * C, tol);
    float *acc = hrand((size_t)N * C, 1);
    float *dir = dev(&R, acc, (size_t)N * C * 4), *dig = dev(&G, acc, (size_t)N * C * 4);
    float *dw0 = hrand(C, 1);
    float *dwr = dev(&R, dw0, C * 4), *dwg = dev(&G, dw0, C * 4), *dbr = dev(&R, dw0, C * 4), *dbg = dev(&G, dw0, C * 4);
    BOTH(R.vt->layernorm_backward(R.ctx, dir, dwr, dbr, dor, xr, wr, mr, rr, N, C),
         G.vt->layernorm_backward(G.ctx, dig, dwg, dbg, dog, xg, wg, mg, rg, N, C));
    compare("layernorm_backward dinp (+=)", dir, dig, (size_t)N * C, 1e-4);
    compare("layernorm_backward dweight (+=)", dwr, dwg, C, 1e-4);
    compare("layernorm_backward dbias (+=)", dbr, dbg, C, 1e-4);

    /* matmul: (N, C) -> (N, 3C) */
    float *W = hrand((size_t)C3 * C, 0.5f), *bias = hrand(C3, 1);
    float *Wr = dev(&R, W, (size_t)C3 * C * 4), *Wg = dev(&G, W, (size_t)C3 * C * 4);
    float *biasr = dev(&R, bias, C3 * 4), *biasg = dev(&G, bias, C3 * 4);
    float *qkvr = dev(&R, NULL, (size_t)N * C3 * 4), *qkvg = devnan(&G, (size_t)N * C3 * 4);
    BOTH(R.vt->matmul_forward(R.ctx, qkvr, xr, Wr, biasr, N, C, C3),
         G.vt->matmul_forward(G.ctx, qkvg, xg, Wg, biasg, N, C, C3));
    compare("matmul_forward (bias)", qkvr, qkvg, (size_t)N * C3, tol);
    BOTH(R.vt->matmul_forward(R.ctx, qkvr, xr, Wr, NULL, N, C, C3),
         G.vt->matmul_forward(G.ctx, qkvg, xg, Wg, NULL, N, C, C3));
    compare("matmul_forward (no bias)", qkvr, qkvg, (size_t)N * C3, tol);
    float *dq = hrand((size_t)N * C3, 1);
    float *dqr = dev(&R, dq, (size_t)N * C3 * 4), *dqg = dev(&G, dq, (size_t)N * C3 * 4);
    float *dWr = dev(&R, W, (size_t)C3 * C * 4), *dWg = dev(&G, W, (size_t)C3 * C * 4);
    float *dbiasr = dev(&R, bias, C3 * 4), *dbiasg = dev(&G, bias, C3 * 4);
    float *dxr = dev(&R, NULL, (size_t)N * C * 4), *dxg = devnan(&G, (size_t)N * C * 4);
    BOTH(R.vt->matmul_backward(R.ctx, dxr, dWr, dbiasr, dqr, xr, Wr, N, C, C3),
         G.vt->matmul_backward(G.ctx, dxg, dWg, dbiasg, dqg, xg, Wg, N, C, C3));
    compare("matmul_backward dinp (=)", dxr, dxg, (size_t)N * C, tol);
    compare("matmul_backward dweight (+=)", dWr, dWg, (size_t)C3 * C, tol);
    compare("matmul_backward dbias (+=)", dbiasr, dbiasg, C3, tol);
    BOTH(R.vt->matmul_backward(R.ctx, dxr, dWr, NULL, dqr, xr, Wr, N, C, C3),
         G.vt->matmul_backward(G.ctx, dxg, dWg, NULL, dqg, xg, Wg, N, C, C3));
    compare("matmul_backward dweight (no dbias)", dWr, dWg, (size_t)C3 * C, tol);

    /* attention on a fresh qkv */
    float *qkv = hrand((size_t)N * C3, 1.5f);
    if (R.vt->upload(R.ctx, qkvr, qkv, (size_t)N * C3 * 4)) die(&R, "upload");
    if (G.vt->upload(G.ctx, qkvg, qkv, (size_t)N * C3 * 4)) die(&G, "upload");
    size_t A = (size_t)B * NH * T * T, NL = (size_t)B * NH * T;
    float *attr = dev(&R, NULL, A * 4); /* cpu_ref keeps T x T probabilities; cuda is tiled */
    float *lser = dev(&R, NULL, NL * 4), *lseg = devnan(&G, NL * 4);
    BOTH(R.vt->attention_forward(R.ctx, outr, lser, attr, qkvr, B, T, C, NH),
         G.vt->attention_forward(G.ctx, outg, lseg, NULL, qkvg, B, T, C, NH));
    compare("attention_forward out", outr, outg, (size_t)N * C, tol);
    compare("attention_forward lse", lser, lseg, NL, tol);
    float *dqkvr = dev(&R, NULL, (size_t)N * C3 * 4), *dqkvg = devnan(&G, (size_t)N * C3 * 4);
    BOTH(R.vt->attention_backward(R.ctx, dqkvr, dor, qkvr, outr, lser, attr, B, T, C, NH),
         G.vt->attention_backward(G.ctx, dqkvg, dog, qkvg, outg, lseg, NULL, B, T, C, NH));
    compare("attention_backward dqkv (=)", dqkvr, dqkvg, (size_t)N * C3, 1e-4);
    /* KV cache: positions before pos0 already hold keys/values */
    size_t KC = (size_t)B * maxT * C;
    float *kc = hrand(KC, 1), *vc = hrand(KC, 1);
    float *kcr = dev(&R, kc, KC * 4), *kcg = dev(&G, kc, KC * 4), *vcr = dev(&R, vc, KC * 4), *vcg = dev(&G, vc, KC * 4);
    BOTH(R.vt->attention_forward_kv(R.ctx, outr, qkvr, kcr, vcr, B, T, C, NH, pos0, maxT),
         G.vt->attention_forward_kv(G.ctx, outg, qkvg, kcg, vcg, B, T, C, NH, pos0, maxT));
    compare("attention_forward_kv out (pos0 > 0)", outr, outg, (size_t)N * C, tol);
    compare("attention_forward_kv kcache", kcr, kcg, KC, 0);
    compare("attention_forward_kv vcache", vcr, vcg, KC, 0);
    if (!G.vt->attention_forward_kv(G.ctx, outg, qkvg, kcg, vcg, B, T, C, NH, maxT - T + 1, maxT)) {
        printf("  attention_forward_kv past the context      FAIL (accepted)\n");
        failures++;
    } else
        printf("  attention_forward_kv past the context      ok    (%s)\n", G.vt->last_error(G.ctx));
    /* the decoding batch: rows interleaved over B slots (row i: slot i % B at
     * position pos0 + i / B), after cache rows that are already there */
    {
        int *sl = malloc(N * sizeof *sl), *ps = malloc(N * sizeof *ps);
        for (int i = 0; i < N; i++) {
            sl[i] = i % B;
            ps[i] = pos0 + i / B;
        }
        int *slr = dev(&R, sl, N * 4), *slg = dev(&G, sl, N * 4), *psr = dev(&R, ps, N * 4), *psg = dev(&G, ps, N * 4);
        float *k2r = dev(&R, kc, KC * 4), *k2g = dev(&G, kc, KC * 4), *v2r = dev(&R, vc, KC * 4), *v2g = dev(&G, vc, KC * 4);
        float *o2r = dev(&R, NULL, (size_t)N * C * 4), *o2g = devnan(&G, (size_t)N * C * 4);
        BOTH(R.vt->attention_forward_kv_at(R.ctx, o2r, qkvr, k2r, v2r, slr, psr, N, C, NH, B, maxT, maxT),
             G.vt->attention_forward_kv_at(G.ctx, o2g, qkvg, k2g, v2g, slg, psg, N, C, NH, B, maxT, maxT));
        compare("attention_forward_kv_at out (slots)", o2r, o2g, (size_t)N * C, tol);
        compare("attention_forward_kv_at kcache", k2r, k2g, KC, 0);
        compare("attention_forward_kv_at vcache", v2r, v2g, KC, 0);
        float *e2r = dev(&R, NULL, (size_t)N * C * 4), *e2g = devnan(&G, (size_t)N * C * 4);
        BOTH(R.vt->encoder_forward_at(R.ctx, e2r, tr, psr, wter, wper, N, C),
             G.vt->encoder_forward_at(G.ctx, e2g, tg, psg, wteg, wpeg, N, C));
        compare("encoder_forward_at (per-row positions)", e2r, e2g, (size_t)N * C, tol);
        free(sl);
        free(ps);
    }

    /* elementwise */
    size_t n = (size_t)N * C3;
    BOTH(R.vt->gelu_forward(R.ctx, dxr, xr, (size_t)N * C), G.vt->gelu_forward(G.ctx, dxg, xg, (size_t)N * C));
    compare("gelu_forward", dxr, dxg, (size_t)N * C, tol);
    BOTH(R.vt->gelu_backward(R.ctx, dxr, xr, dor, (size_t)N * C), G.vt->gelu_backward(G.ctx, dxg, xg, dog, (size_t)N * C));
    compare("gelu_backward", dxr, dxg, (size_t)N * C, tol);
    BOTH(R.vt->residual_forward(R.ctx, dqkvr, qkvr, dqr, n), G.vt->residual_forward(G.ctx, dqkvg, qkvg, dqg, n));
    compare("residual_forward", dqkvr, dqkvg, n, 0);

    /* cross-entropy over (N, Vp) */
    size_t NV = (size_t)N * Vp;
    float *logits = hrand(NV, 4);
    int *tgt = malloc(N * 4);
    float *dl = hrand(N, 1);
    for (int i = 0; i < N; i++) {
        tgt[i] = i % 4 == 3 ? -1 : (i * 37) % V;
        if (i % 6 == 1) dl[i] = 0.0f;
    }
    float *lr = dev(&R, logits, NV * 4), *lg = dev(&G, logits, NV * 4);
    int *tgr = dev(&R, tgt, N * 4), *tgg = dev(&G, tgt, N * 4);
    float *pr = dev(&R, NULL, NV * 4), *pg = devnan(&G, NV * 4);
    float *lpr = dev(&R, NULL, N * 4), *lpg = devnan(&G, N * 4);
    BOTH(R.vt->crossentropy_forward(R.ctx, pr, lpr, lr, tgr, N, V, Vp),
         G.vt->crossentropy_forward(G.ctx, pg, lpg, lg, tgg, N, V, Vp));
    compare("crossentropy_forward probs (0 past V)", pr, pg, NV, tol);
    compare("crossentropy_forward logp (0 for target -1)", lpr, lpg, N, tol);
    float *dlr = dev(&R, dl, N * 4), *dlg = dev(&G, dl, N * 4);
    float *dLr = dev(&R, NULL, NV * 4), *dLg = devnan(&G, NV * 4);
    BOTH(R.vt->crossentropy_backward(R.ctx, dLr, pr, tgr, dlr, N, V, Vp),
         G.vt->crossentropy_backward(G.ctx, dLg, pg, tgg, dlg, N, V, Vp));
    compare("crossentropy_backward dlogits (=)", dLr, dLg, NV, tol);

    /* AdamW on the logits buffer, step 3 */
    float *m0 = hrand(NV, 0.1f), *v0 = hrand(NV, 0.1f);
    for (size_t i = 0; i < NV; i++) v0[i] = fabsf(v0[i]);
    float *mr_ = dev(&R, m0, NV * 4), *mg_ = dev(&G, m0, NV * 4), *vr_ = dev(&R, v0, NV * 4), *vg_ = dev(&G, v0, NV * 4);
    BOTH(R.vt->adamw(R.ctx, lr, pr, mr_, vr_, NV, 1e-3f, 0.9f, 0.95f, 1e-8f, 0.1f, 0.5f, 3),
         G.vt->adamw(G.ctx, lg, pg, mg_, vg_, NV, 1e-3f, 0.9f, 0.95f, 1e-8f, 0.1f, 0.5f, 3));
    compare("adamw params", lr, lg, NV, 1e-6);
    compare("adamw m", mr_, mg_, NV, 1e-6);
    compare("adamw v", vr_, vg_, NV, 1e-6);
    double sr, sg;
    BOTH(R.vt->sumsq(R.ctx, lr, NV, &sr), G.vt->sumsq(G.ctx, lg, NV, &sg));
    int ok = fabs(sr - sg) <= 1e-6 * sr;
    printf("  %-40s %s  ref %.10g cuda %.10g\n", "sumsq", ok ? "ok  " : "FAIL", sr, sg);
    failures += !ok;

    /* the Llama family: RMSNorm, rotary positions (both pairings, partial, per-row
     * positions and i % T), SwiGLU, kv_expand/kv_reduce, the encoder without wpe */
    {
        int hs = C / NH, KVH = NH % 3 == 0 ? NH / 3 : NH % 2 == 0 ? NH / 2 : 1, KV = KVH * hs;
        int W = C + 2 * KV, F = C + 5;
        float *rsr = dev(&R, NULL, N * 4), *rsg = devnan(&G, N * 4);
        BOTH(R.vt->rmsnorm_forward(R.ctx, outr, rsr, xr, wr, N, C, 1e-5f),
             G.vt->rmsnorm_forward(G.ctx, outg, rsg, xg, wg, N, C, 1e-5f));
        compare("rmsnorm_forward out", outr, outg, (size_t)N * C, tol);
        compare("rmsnorm_forward rstd", rsr, rsg, N, tol);
        float *d3r = dev(&R, acc, (size_t)N * C * 4), *d3g = dev(&G, acc, (size_t)N * C * 4);
        float *w3r = dev(&R, dw0, C * 4), *w3g = dev(&G, dw0, C * 4);
        BOTH(R.vt->rmsnorm_backward(R.ctx, d3r, w3r, dor, xr, wr, rsr, N, C),
             G.vt->rmsnorm_backward(G.ctx, d3g, w3g, dog, xg, wg, rsg, N, C));
        compare("rmsnorm_backward dinp (+=)", d3r, d3g, (size_t)N * C, 1e-4);
        compare("rmsnorm_backward dweight (+=)", w3r, w3g, C, 1e-4);
        float *qc = hrand((size_t)N * W, 1);
        float *qcr = dev(&R, qc, (size_t)N * W * 4), *qcg = dev(&G, qc, (size_t)N * W * 4);
        int *ps = malloc(N * sizeof *ps);
        for (int i = 0; i < N; i++) ps[i] = (i * 7) % maxT;
        int *psr = dev(&R, ps, N * 4), *psg = dev(&G, ps, N * 4);
        for (int neox = 0; neox < 2; neox++) {
            int rot = neox ? hs : hs - 2 > 1 ? hs - 2 : hs;
            BOTH(R.vt->rope(R.ctx, qcr, psr, N, T, W, NH + KVH, hs, rot, 1e6f, neox, 0),
                 G.vt->rope(G.ctx, qcg, psg, N, T, W, NH + KVH, hs, rot, 1e6f, neox, 0));
            compare(neox ? "rope (half pairing, per-row pos)" : "rope (adjacent, partial, per-row pos)", qcr, qcg,
                    (size_t)N * W, tol);
            BOTH(R.vt->rope(R.ctx, qcr, NULL, N, T, W, NH + KVH, hs, rot, 1e4f, neox, 1),
                 G.vt->rope(G.ctx, qcg, NULL, N, T, W, NH + KVH, hs, rot, 1e4f, neox, 1));
            compare("rope inverse (pos = i % T)", qcr, qcg, (size_t)N * W, tol);
        }
        float *exr = dev(&R, NULL, (size_t)N * C3 * 4), *exg = devnan(&G, (size_t)N * C3 * 4);
        BOTH(R.vt->kv_expand(R.ctx, exr, qcr, N, NH, KVH, hs), G.vt->kv_expand(G.ctx, exg, qcg, N, NH, KVH, hs));
        compare("kv_expand (=)", exr, exg, (size_t)N * C3, 0);
        float *rdr = dev(&R, NULL, (size_t)N * W * 4), *rdg = devnan(&G, (size_t)N * W * 4);
        BOTH(R.vt->kv_reduce(R.ctx, rdr, dqr, N, NH, KVH, hs), G.vt->kv_reduce(G.ctx, rdg, dqg, N, NH, KVH, hs));
        compare("kv_reduce (=)", rdr, rdg, (size_t)N * W, tol);
        float *gu = hrand((size_t)N * 2 * F, 3), *dy = hrand((size_t)N * F, 1);
        float *gur = dev(&R, gu, (size_t)N * 2 * F * 4), *gug = dev(&G, gu, (size_t)N * 2 * F * 4);
        float *dyr = dev(&R, dy, (size_t)N * F * 4), *dyg = dev(&G, dy, (size_t)N * F * 4);
        float *swr = dev(&R, NULL, (size_t)N * F * 4), *swg = devnan(&G, (size_t)N * F * 4);
        float *dsr = dev(&R, NULL, (size_t)N * 2 * F * 4), *dsg = devnan(&G, (size_t)N * 2 * F * 4);
        BOTH(R.vt->swiglu_forward(R.ctx, swr, gur, N, F), G.vt->swiglu_forward(G.ctx, swg, gug, N, F));
        compare("swiglu_forward", swr, swg, (size_t)N * F, tol);
        BOTH(R.vt->swiglu_backward(R.ctx, dsr, gur, dyr, N, F), G.vt->swiglu_backward(G.ctx, dsg, gug, dyg, N, F));
        compare("swiglu_backward (=)", dsr, dsg, (size_t)N * 2 * F, tol);
        BOTH(R.vt->encoder_forward(R.ctx, outr, tr, wter, NULL, B, T, C, 0),
             G.vt->encoder_forward(G.ctx, outg, tg, wteg, NULL, B, T, C, 0));
        compare("encoder_forward (no wpe)", outr, outg, (size_t)N * C, tol);
        BOTH(R.vt->encoder_backward(R.ctx, wter, NULL, dor, tr, B, T, C),
             G.vt->encoder_backward(G.ctx, wteg, NULL, dog, tg, B, T, C));
        compare("encoder_backward dwte (no wpe)", wter, wteg, (size_t)Vp * C, tol);
        /* the compact cache: rows interleaved over B slots as above, KVH heads a position */
        {
            size_t KC2 = (size_t)B * maxT * KV;
            int *sl2 = malloc(N * sizeof *sl2), *ps2 = malloc(N * sizeof *ps2);
            for (int i = 0; i < N; i++) {
                sl2[i] = i % B;
                ps2[i] = pos0 + i / B;
            }
            int *s2r = dev(&R, sl2, N * 4), *s2g = dev(&G, sl2, N * 4), *p2r = dev(&R, ps2, N * 4), *p2g = dev(&G, ps2, N * 4);
            float *kc2 = hrand(KC2, 1), *vc2 = hrand(KC2, 1);
            float *k3r = dev(&R, kc2, KC2 * 4), *k3g = dev(&G, kc2, KC2 * 4), *v3r = dev(&R, vc2, KC2 * 4), *v3g = dev(&G, vc2, KC2 * 4);
            float *o3r = dev(&R, NULL, (size_t)N * C * 4), *o3g = devnan(&G, (size_t)N * C * 4);
            BOTH(R.vt->attention_forward_kv_at_gqa(R.ctx, o3r, qcr, k3r, v3r, s2r, p2r, N, C, NH, KVH, B, maxT, maxT),
                 G.vt->attention_forward_kv_at_gqa(G.ctx, o3g, qcg, k3g, v3g, s2g, p2g, N, C, NH, KVH, B, maxT, maxT));
            compare("attention_forward_kv_at_gqa out", o3r, o3g, (size_t)N * C, tol);
            compare("attention_forward_kv_at_gqa kcache", k3r, k3g, KC2, 0);
            compare("attention_forward_kv_at_gqa vcache", v3r, v3g, KC2, 0);
            free(sl2); free(ps2); free(kc2); free(vc2);
        }
        free(qc); free(ps); free(gu); free(dy);
    }

    /* memory ops */
    BOTH(R.vt->copy(R.ctx, dxr, outr, (size_t)N * C * 4), G.vt->copy(G.ctx, dxg, outg, (size_t)N * C * 4));
    compare("copy", dxr, dxg, (size_t)N * C, tol);
    BOTH(R.vt->zero(R.ctx, dxr, (size_t)N * C * 4), G.vt->zero(G.ctx, dxg, (size_t)N * C * 4));
    compare("zero", dxr, dxg, (size_t)N * C, 0);
    BOTH(R.vt->sync(R.ctx), G.vt->sync(G.ctx));
    /* the device buffers live until the process ends: this is a short-lived check */
    free(tok); free(wte); free(wpe); free(dout); free(x); free(w); free(bb); free(acc); free(dw0);
    free(W); free(bias); free(dq); free(qkv); free(kc); free(vc); free(logits); free(tgt); free(dl);
    free(m0); free(v0);
}

int main(void) {
    char err[512];
    int rc = spade_backend_cuda_load(&G, err, sizeof err); /* the module spade-cuda.so, as spade loads it */
    if (rc == SPADE_POLICY_ENODEV) {
        printf("opcheck: SKIP: %s\n", err);
        return 77;
    }
    if (rc) {
        printf("opcheck: FAIL: %s\n", err);
        return 1;
    }
    if (spade_backend_cpu_ref_new(&R, err, sizeof err)) {
        printf("opcheck: %s\n", err);
        return 1;
    }
    run(2, 7, 48, 3, 12, 263, 320);     /* hs 16, widths not multiples of 32 */
    run(4, 64, 96, 4, 80, 263, 320);    /* several blocks per kernel */
    run(1, 1, 64, 2, 8, 263, 320);      /* one row (a decode step) */
    spade_backend_close(&R);
    spade_backend_close(&G);
    printf("opcheck: %s (%d failure%s)\n", failures ? "FAIL" : "ok", failures, failures == 1 ? "" : "s");
    return failures ? 1 : 0;
}
OPCHECK_C
cat > "$BUILD/gpu_check/gpubench.c" <<'GPUBENCH_C'
/* gpubench.c — the policy's GPU numbers as ratios against the cpu backend measured
 * in the same run: training tokens/s (forward + backward + AdamW) and KV-cache
 * sampling tokens/s. Exit 77 when there is no GPU. */
#include "policy/policy.h"
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static char err[512];
static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}
#define DIE(...) do { fprintf(stderr, "gpubench: "); fprintf(stderr, __VA_ARGS__); fprintf(stderr, "\n"); exit(1); } while (0)

static spade_policy *make(const char *be, int L, int C, int NH, int T) {
    spade_gpt_config c;
    spade_gpt_config_default(&c);
    c.layers = L; c.width = C; c.heads = NH; c.context = T;
    snprintf(c.backend, sizeof c.backend, "%s", be);
    spade_policy *p;
    if (spade_policy_new(&p, &c, err, sizeof err)) DIE("%s", err);
    return p;
}

/* tokens/s of training steps; the first step warms up (allocations, cuBLAS heuristics) */
static double train(const char *be, int L, int C, int NH, int T, int B, int steps) {
    spade_policy *p = make(be, L, C, NH, T);
    int N = B * T;
    int *tok = malloc(N * sizeof(int)), *tg = malloc(N * sizeof(int));
    uint64_t s = 1;
    for (int i = 0; i < N; i++) { s = s * 6364136223846793005ull + 1; tok[i] = (int)((s >> 33) % 256); }
    for (int i = 0; i < N; i++) tg[i] = (i + 1) % T ? tok[i + 1] : -1;
    spade_adamw_opts o;
    spade_adamw_opts_default(&o);
    double t0 = 0;
    float loss = 0;
    for (int it = 0; it <= steps; it++) {
        if (it == 1) t0 = now();
        if (spade_policy_forward(p, tok, tg, NULL, B, T, &loss, NULL, err, sizeof err) ||
            spade_policy_backward(p, 1.0f, err, sizeof err) || spade_policy_step(p, &o, NULL, err, sizeof err))
            DIE("%s: %s", be, err);
    }
    double dt = now() - t0, tps = (double)N * steps / dt;
    printf("  train %-4s L=%-2d C=%-4d T=%-4d B=%-2d %7.2fM params: %9.0f tokens/s (%d steps, %.2fs, loss %.3f)\n",
           be, L, C, T, B, spade_policy_num_params(p) / 1e6, tps, steps, dt, loss);
    free(tok); free(tg);
    spade_policy_free(p);
    return tps;
}

static double sample(const char *be, int L, int C, int NH, int G, int plen, int ntok) {
    spade_policy *p = make(be, L, C, NH, 512);
    int *prompt = malloc(plen * sizeof(int)), *out = malloc((size_t)G * ntok * sizeof(int)), len[64];
    for (int i = 0; i < plen; i++) prompt[i] = 'a' + i % 26;
    spade_sample_opts o;
    spade_sample_opts_default(&o);
    o.n_stop = 0;
    o.seed = 5;
    o.max_tokens = 4;
    if (spade_policy_sample(p, prompt, plen, G, &o, out, NULL, len, err, sizeof err)) DIE("%s: %s", be, err);
    o.max_tokens = ntok;
    double t0 = now();
    if (spade_policy_sample(p, prompt, plen, G, &o, out, NULL, len, err, sizeof err)) DIE("%s: %s", be, err);
    double dt = now() - t0;
    long total = 0;
    for (int g = 0; g < G; g++) total += len[g];
    printf("  sample %-4s L=%-2d C=%-4d G=%d prompt %d, %d new tokens: %8.0f tokens/s\n", be, L, C, G, plen, ntok,
           total / dt);
    free(prompt); free(out);
    spade_policy_free(p);
    return total / dt;
}

int main(void) {
    spade_backend be;
    char note[512];
    int rc = spade_backend_open("cuda", &be, note, sizeof note, err, sizeof err);
    if (rc == SPADE_POLICY_ENODEV) { printf("gpubench: SKIP: %s\n", err); return 77; }
    if (rc) DIE("%s", err);
    spade_backend_close(&be);
    printf("gpubench: training and sampling, cuda vs cpu in the same run\n");
    double c10 = train("cpu", 6, 384, 6, 256, 8, 2), g10 = train("cuda", 6, 384, 6, 256, 8, 10);
    printf("RATIO train ~10M params: cuda is %.1fx cpu\n", g10 / c10);
    double g124 = train("cuda", 12, 768, 12, 1024, 8, 5);
    setenv("SPADE_CUDA_TF32", "1", 1);
    double t124 = train("cuda", 12, 768, 12, 1024, 8, 5);
    unsetenv("SPADE_CUDA_TF32");
    printf("RATIO train ~124M params: TF32 GEMMs are %.2fx full FP32 (%.0f vs %.0f tokens/s)\n", t124 / g124,
           t124, g124);
    /* long context: the tiled attention keeps no T x T buffer (T = 8192 needs ~0.4 GB) */
    double cl = train("cpu", 4, 128, 4, 2048, 1, 1), gl = train("cuda", 4, 128, 4, 2048, 1, 5);
    printf("RATIO train T=2048 L4 C128: cuda is %.1fx cpu\n", gl / cl);
    double g8k = train("cuda", 4, 128, 4, 8192, 1, 3);
    printf("RATIO train T=8192 L4 C128: cuda %.0f tokens/s\n", g8k);
    double cs = sample("cpu", 6, 384, 6, 8, 32, 96), gs = sample("cuda", 6, 384, 6, 8, 32, 96);
    printf("RATIO sampling ~10M params, KV cache: cuda is %.1fx cpu\n", gs / cs);
    return 0;
}
GPUBENCH_C
for p in opcheck gpubench; do
    if ! $CC -std=c11 -O2 -include config.h -I"$SRC" -I"$SRC/core" -o "gpu_check/$p" "gpu_check/$p.c" \
            $LIBS >> "$LOGS/build.log" 2>&1; then
        show "$LOGS/build.log" 30
        result build FAIL "compiling $p failed (see build.log)"
        finish 2
    fi
done
result build PASS "$(elapsed "$t"): libspade.a, spade-cuda.so, test_policy, bench_policy, opcheck, gpubench"

STATUS=0
NOGPU=0
# run NAME LOG CMD...: runs a check, records PASS / FAIL / SKIP (exit 77) / TIME (timeout's 124).
run() {
    name=$1 log=$2
    shift 2
    echo "== $name"
    t=$(date +%s)
    "$@" > "$log" 2>&1
    rc=$?
    if [ $rc -eq 0 ]; then
        result "$name" PASS "$(elapsed "$t")"
    elif [ $rc -eq 77 ]; then
        result "$name" SKIP "$(grep -m1 SKIP "$log")"
        NOGPU=1
    elif [ $rc -eq 124 ]; then
        result "$name" TIME "stopped by its time limit after $(elapsed "$t"): not a verdict"
    else
        result "$name" FAIL "exit $rc after $(elapsed "$t") (see $(basename "$log"))"
        show "$log"
        STATUS=1
    fi
    return $rc
}

run "opcheck (every op, cuda vs cpu_ref)" "$LOGS/opcheck.log" ./gpu_check/opcheck
grep -E "FAIL|opcheck:" "$LOGS/opcheck.log" | head -n 20

SAN=$(command -v compute-sanitizer 2>/dev/null || true)
[ -z "$SAN" ] && [ -x /usr/local/cuda/bin/compute-sanitizer ] && SAN=/usr/local/cuda/bin/compute-sanitizer
if [ -n "$SAN" ] && [ $NOGPU -eq 0 ]; then
    for tool in memcheck racecheck; do
        run "compute-sanitizer $tool opcheck" "$LOGS/sanitizer-$tool.log" \
            timeout 120 "$SAN" --tool "$tool" --error-exitcode 9 ./gpu_check/opcheck
        grep -E "ERROR SUMMARY|RACECHECK SUMMARY" "$LOGS/sanitizer-$tool.log" | tail -n 2
    done
else
    result "compute-sanitizer" SKIP "not in this toolkit or no GPU"
fi

echo "== tests/test_policy"
t=$(date +%s)
./tests/test_policy > "$LOGS/test_policy.log" 2>&1
rc=$?
grep -E "backend auto|cuda parity|Checks:" "$LOGS/test_policy.log"
if [ $rc -ne 0 ]; then
    result "test_policy (CUDA parity)" FAIL "exit $rc after $(elapsed "$t") (see test_policy.log)"
    show "$LOGS/test_policy.log"
    STATUS=1
elif grep -q "SKIP cuda parity" "$LOGS/test_policy.log"; then
    result "test_policy (CUDA parity)" SKIP "$(grep -m1 'SKIP cuda parity' "$LOGS/test_policy.log")"
    NOGPU=1
else
    result "test_policy (CUDA parity)" PASS "$(elapsed "$t")"
fi

echo "== tests/test_grpo"
t=$(date +%s)
if make -j"$JOBS" tests/test_grpo > "$LOGS/build-test_grpo.log" 2>&1; then
    ./tests/test_grpo > "$LOGS/test_grpo.log" 2>&1
    rc=$?
    grep -E "grpo parity|Checks:" "$LOGS/test_grpo.log"
    if [ $rc -ne 0 ]; then
        result "test_grpo (CUDA parity)" FAIL "exit $rc after $(elapsed "$t") (see test_grpo.log)"
        show "$LOGS/test_grpo.log"
        STATUS=1
    elif grep -q "SKIP cuda grpo parity" "$LOGS/test_grpo.log"; then
        result "test_grpo (CUDA parity)" SKIP "$(grep -m1 'SKIP cuda grpo parity' "$LOGS/test_grpo.log")"
        NOGPU=1
    else
        result "test_grpo (CUDA parity)" PASS "$(elapsed "$t")"
    fi
else
    show "$LOGS/build-test_grpo.log" 20
    result "test_grpo (CUDA parity)" FAIL "make tests/test_grpo failed (see build-test_grpo.log)"
    STATUS=1
fi

echo "== tests/test_llama"
t=$(date +%s)
if make -j"$JOBS" tests/test_llama > "$LOGS/build-test_llama.log" 2>&1; then
    ./tests/test_llama > "$LOGS/test_llama.log" 2>&1
    rc=$?
    grep -E "cuda parity|Checks:" "$LOGS/test_llama.log"
    if [ $rc -ne 0 ]; then
        result "test_llama (CUDA parity)" FAIL "exit $rc after $(elapsed "$t") (see test_llama.log)"
        show "$LOGS/test_llama.log"
        STATUS=1
    elif grep -q "SKIP cuda parity" "$LOGS/test_llama.log"; then
        result "test_llama (CUDA parity)" SKIP "$(grep -m1 'SKIP cuda parity' "$LOGS/test_llama.log")"
    else
        result "test_llama (CUDA parity)" PASS "$(elapsed "$t")"
    fi
else
    show "$LOGS/build-test_llama.log" 20
    result "test_llama (CUDA parity)" FAIL "make tests/test_llama failed (see build-test_llama.log)"
    STATUS=1
fi

echo "== tests/test_decode"
t=$(date +%s)
if make -j"$JOBS" tests/test_decode bench/bench_decode > "$LOGS/build-test_decode.log" 2>&1; then
    ./tests/test_decode > "$LOGS/test_decode.log" 2>&1
    rc=$?
    grep -E "decoding parity|Checks:" "$LOGS/test_decode.log"
    if [ $rc -ne 0 ]; then
        result "test_decode (CUDA parity)" FAIL "exit $rc after $(elapsed "$t") (see test_decode.log)"
        show "$LOGS/test_decode.log"
        STATUS=1
    elif grep -q "SKIP cuda decoding parity" "$LOGS/test_decode.log"; then
        result "test_decode (CUDA parity)" SKIP "$(grep -m1 'SKIP cuda decoding parity' "$LOGS/test_decode.log")"
        NOGPU=1
    else
        result "test_decode (CUDA parity)" PASS "$(elapsed "$t")"
    fi
    if [ $NOGPU -eq 0 ] && run "bench_decode --backend cuda" "$LOGS/bench_decode.log" \
            timeout 300 ./bench/bench_decode --backend cuda; then
        cat "$LOGS/bench_decode.log"
    fi
else
    show "$LOGS/build-test_decode.log" 20
    result "test_decode (CUDA parity)" FAIL "make tests/test_decode bench/bench_decode failed (see build-test_decode.log)"
    STATUS=1
fi

echo "== tests/test_attention"
t=$(date +%s)
./tests/test_attention > "$LOGS/test_attention.log" 2>&1
rc=$?
grep -E "cuda attention|Checks:" "$LOGS/test_attention.log"
if [ $rc -ne 0 ]; then
    result "test_attention (tiled, cuda)" FAIL "exit $rc after $(elapsed "$t") (see test_attention.log)"
    show "$LOGS/test_attention.log"
    STATUS=1
elif grep -q "SKIP cuda attention" "$LOGS/test_attention.log"; then
    result "test_attention (tiled, cuda)" SKIP "$(grep -m1 'SKIP cuda attention' "$LOGS/test_attention.log")"
    NOGPU=1
else
    result "test_attention (tiled, cuda)" PASS "$(elapsed "$t")"
fi

if run "bench_policy --quick" "$LOGS/bench_policy.log" ./bench/bench_policy --quick; then
    grep -E "backend auto|RATIO" "$LOGS/bench_policy.log"
fi
if run "gpubench (cuda vs cpu)" "$LOGS/gpubench.log" ./gpu_check/gpubench; then
    cat "$LOGS/gpubench.log"
fi
grep -h RATIO "$LOGS/bench_policy.log" "$LOGS/gpubench.log" "$LOGS/bench_decode.log" 2>/dev/null >> "$SUMMARY"

if [ $STATUS -eq 0 ] && [ $NOGPU -eq 1 ]; then
    echo "gpu_check: no usable GPU here: the CUDA paths were not exercised" >> "$SUMMARY"
    finish 3
fi
finish $STATUS
