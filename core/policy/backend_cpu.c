/* backend_cpu.c — the two CPU backends of the policy: cpu_ref and cpu.
 *
 * What it is: one implementation of every op in backend.h, written as plain C
 * loops with a fixed summation order. The same code serves both backends:
 *   cpu_ref  runs it on one thread, GEMMs and attention as loops. It is the
 *            reference that tests compare every other backend against, and the
 *            path whose arithmetic does not depend on batch size (so KV-cache
 *            sampling and full recompute agree bit for bit on it).
 *   cpu      turns on OpenMP for the loops (parallel only over independent
 *            outputs, so each output's sum is still formed in the same order)
 *            and, when configure found cblas (SPADE_HAVE_CBLAS), does the GEMMs
 *            and the attention score/value products with cblas_sgemm.
 * What it is not: tuned kernels. Only the GEMMs are fast; everything else is
 * memory-bound loops that OpenMP spreads over cores.
 */
#include "policy/backend.h"

#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#ifdef _OPENMP
#include <omp.h>
#endif
#ifdef SPADE_HAVE_CBLAS
#include <cblas.h>
#endif

typedef struct cpu_ctx {
    int fast;        /* 0: cpu_ref, 1: cpu */
    char err[256];
    float *scratch;  /* per-call scratch (attention backward), grown on demand */
    size_t scratch_n;
} cpu_ctx;

/* The OpenMP if-clause: the reference runs the very same loops serially. */
#define FAST(c) (((cpu_ctx *)(c))->fast)
/* OpenMP only where a loop has enough work to pay for waking the team: on a
 * small or busy machine each parallel region's fork/join and barrier spin
 * also steal cycles from OpenBLAS's own threads (measured: a 1M-parameter
 * step ran 6x slower with a region per head than with one thread). */
#define PAR_MIN_WORK ((size_t)1 << 18)
#define PAR(work) (FAST(ctx) && (size_t)(work) >= PAR_MIN_WORK)

static int fail(cpu_ctx *c, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(c->err, sizeof c->err, fmt, ap);
    va_end(ap);
    return SPADE_POLICY_EBACKEND;
}

static float *scratch(cpu_ctx *c, size_t n) {
    if (n > c->scratch_n) {
        free(c->scratch);
        c->scratch = malloc(n * sizeof(float));
        c->scratch_n = c->scratch ? n : 0;
    }
    return c->scratch;
}

/* This thread's share [*r0, *r1) of n rows inside an OpenMP team (all of
 * them outside one). */
static inline void split(int n, int *r0, int *r1) {
#ifdef _OPENMP
    int nt = omp_get_num_threads(), id = omp_get_thread_num();
#else
    int nt = 1, id = 0;
#endif
    *r0 = (int)((long)n * id / nt);
    *r1 = (int)((long)n * (id + 1) / nt);
}

static void cpu_free(void *ctx) {
    cpu_ctx *c = ctx;
    if (!c) return;
    free(c->scratch);
    free(c);
}

static const char *cpu_last_error(void *ctx) { return ((cpu_ctx *)ctx)->err; }

/* ---- memory: plain host memory ---- */

static void *cpu_alloc(void *ctx, size_t bytes) {
    cpu_ctx *c = ctx;
    size_t n = (bytes + 63) / 64 * 64;
    if (n == 0) n = 64;
    void *p = aligned_alloc(64, n);
    if (!p) {
        fail(c, "out of host memory allocating %zu bytes", bytes);
        return NULL;
    }
    memset(p, 0, n);
    return p;
}
static void cpu_dealloc(void *ctx, void *p) { free(p); }
static int cpu_memcpy(void *ctx, void *dst, const void *src, size_t bytes) {
    if (bytes) memcpy(dst, src, bytes);
    return 0;
}
static int cpu_zero(void *ctx, void *dst, size_t bytes) {
    if (bytes) memset(dst, 0, bytes);
    return 0;
}
static int cpu_sync(void *ctx) { return 0; }

/* ---- encoder ---- */

static int cpu_encoder_forward(void *ctx, float *out, const int *inp, const float *wte,
                               const float *wpe, int B, int T, int C, int pos0) {
    int N = B * T;
#pragma omp parallel for if (PAR((size_t)N * C))
    for (int i = 0; i < N; i++) {
        int t = i % T;
        const float *we = wte + (size_t)inp[i] * C, *pe = wpe + (size_t)(pos0 + t) * C;
        float *o = out + (size_t)i * C;
        for (int c = 0; c < C; c++) o[c] = we[c] + pe[c];
    }
    return 0;
}

static int cpu_encoder_backward(void *ctx, float *dwte, float *dwpe, const float *dout,
                                const int *inp, int B, int T, int C) {
    /* Parallel over channels: several positions may carry the same token, so
     * each thread owns whole columns and adds rows in order (deterministic). */
#pragma omp parallel for if (PAR((size_t)B * T * C))
    for (int c = 0; c < C; c++) {
        for (int i = 0; i < B * T; i++) {
            float d = dout[(size_t)i * C + c];
            dwte[(size_t)inp[i] * C + c] += d;
            dwpe[(size_t)(i % T) * C + c] += d;
        }
    }
    return 0;
}

/* ---- layernorm ---- */

static int cpu_layernorm_forward(void *ctx, float *out, float *mean, float *rstd,
                                 const float *inp, const float *w, const float *b, int N,
                                 int C) {
#pragma omp parallel for if (PAR((size_t)N * C))
    for (int i = 0; i < N; i++) {
        const float *x = inp + (size_t)i * C;
        float m = 0.0f;
        for (int c = 0; c < C; c++) m += x[c];
        m /= C;
        float v = 0.0f;
        for (int c = 0; c < C; c++) {
            float d = x[c] - m;
            v += d * d;
        }
        v /= C;
        float s = 1.0f / sqrtf(v + 1e-5f);
        float *o = out + (size_t)i * C;
        for (int c = 0; c < C; c++) o[c] = (x[c] - m) * s * w[c] + b[c];
        if (mean) mean[i] = m;
        if (rstd) rstd[i] = s;
    }
    return 0;
}

static int cpu_layernorm_backward(void *ctx, float *dinp, float *dweight, float *dbias,
                                  const float *dout, const float *inp, const float *w,
                                  const float *mean, const float *rstd, int N, int C) {
#pragma omp parallel for if (PAR((size_t)N * C))
    for (int i = 0; i < N; i++) {
        const float *x = inp + (size_t)i * C, *dy = dout + (size_t)i * C;
        float m = mean[i], s = rstd[i];
        float dn_mean = 0.0f, dnx_mean = 0.0f;
        for (int c = 0; c < C; c++) {
            float xh = (x[c] - m) * s, dn = w[c] * dy[c];
            dn_mean += dn;
            dnx_mean += dn * xh;
        }
        dn_mean /= C;
        dnx_mean /= C;
        float *dx = dinp + (size_t)i * C;
        for (int c = 0; c < C; c++) {
            float xh = (x[c] - m) * s, dn = w[c] * dy[c];
            dx[c] += s * (dn - dn_mean - xh * dnx_mean);
        }
    }
    /* Column reductions: each thread owns channels, rows are summed in order. */
#pragma omp parallel for if (PAR((size_t)N * C))
    for (int c = 0; c < C; c++) {
        float dw = 0.0f, db = 0.0f;
        for (int i = 0; i < N; i++) {
            float dy = dout[(size_t)i * C + c];
            db += dy;
            dw += (inp[(size_t)i * C + c] - mean[i]) * rstd[i] * dy;
        }
        dweight[c] += dw;
        dbias[c] += db;
    }
    return 0;
}

/* ---- matmul ---- */

static void ref_matmul_forward(int fast, float *out, const float *inp, const float *w,
                               const float *bias, int N, int IC, int OC) {
#pragma omp parallel for collapse(2) if (fast && (size_t)N * OC * IC >= PAR_MIN_WORK)
    for (int i = 0; i < N; i++) {
        for (int o = 0; o < OC; o++) {
            const float *x = inp + (size_t)i * IC, *wr = w + (size_t)o * IC;
            float acc = bias ? bias[o] : 0.0f;
            for (int k = 0; k < IC; k++) acc += x[k] * wr[k];
            out[(size_t)i * OC + o] = acc;
        }
    }
}

static int cpu_matmul_forward(void *ctx, float *out, const float *inp, const float *w,
                              const float *bias, int N, int IC, int OC) {
#ifdef SPADE_HAVE_CBLAS
    if (FAST(ctx)) {
        /* One thread pool: OpenMP splits the rows, each thread runs a
         * single-threaded sgemm on its block (see spade_backend_cpu_new). */
#pragma omp parallel if (PAR((size_t)N * OC * IC))
        {
            int r0, r1;
            split(N, &r0, &r1);
            if (bias)
                for (int i = r0; i < r1; i++) memcpy(out + (size_t)i * OC, bias, OC * sizeof(float));
            if (r1 > r0)
                cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, r1 - r0, OC, IC, 1.0f,
                            inp + (size_t)r0 * IC, IC, w, IC, bias ? 1.0f : 0.0f, out + (size_t)r0 * OC, OC);
        }
        return 0;
    }
#endif
    ref_matmul_forward(FAST(ctx), out, inp, w, bias, N, IC, OC);
    return 0;
}

static int cpu_matmul_backward(void *ctx, float *dinp, float *dweight, float *dbias,
                               const float *dout, const float *inp, const float *w, int N,
                               int IC, int OC) {
    int fast = FAST(ctx);
#ifdef SPADE_HAVE_CBLAS
    if (fast) {
#pragma omp parallel if (PAR((size_t)N * OC * IC))
        {
            int r0, r1, o0, o1;
            split(N, &r0, &r1);
            split(OC, &o0, &o1);
            if (r1 > r0)
                cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, r1 - r0, IC, OC, 1.0f,
                            dout + (size_t)r0 * OC, OC, w, IC, 0.0f, dinp + (size_t)r0 * IC, IC);
            if (o1 > o0)
                cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, o1 - o0, IC, N, 1.0f, dout + o0,
                            OC, inp, IC, 1.0f, dweight + (size_t)o0 * IC, IC);
        }
        goto bias;
    }
#endif
#pragma omp parallel for if (fast && (size_t)N * OC * IC >= PAR_MIN_WORK)
    for (int i = 0; i < N; i++) {
        float *dx = dinp + (size_t)i * IC;
        const float *dy = dout + (size_t)i * OC;
        for (int k = 0; k < IC; k++) dx[k] = 0.0f;
        for (int o = 0; o < OC; o++) {
            float d = dy[o];
            const float *wr = w + (size_t)o * IC;
            for (int k = 0; k < IC; k++) dx[k] += d * wr[k];
        }
    }
#pragma omp parallel for if (fast && (size_t)N * OC * IC >= PAR_MIN_WORK)
    for (int o = 0; o < OC; o++) {
        float *dw = dweight + (size_t)o * IC;
        for (int i = 0; i < N; i++) {
            float d = dout[(size_t)i * OC + o];
            const float *x = inp + (size_t)i * IC;
            for (int k = 0; k < IC; k++) dw[k] += d * x[k];
        }
    }
#ifdef SPADE_HAVE_CBLAS
bias:
#endif
    if (dbias) {
#pragma omp parallel for if (fast && (size_t)N * OC >= PAR_MIN_WORK)
        for (int o = 0; o < OC; o++) {
            float s = 0.0f;
            for (int i = 0; i < N; i++) s += dout[(size_t)i * OC + o];
            dbias[o] += s;
        }
    }
    return 0;
}

/* ---- attention ---- */

/* One query row of one head: scores against nk keys (stride kstride floats
 * apart), causal softmax, weighted sum of values. Shared by the training
 * attention and the KV-cache attention so both do identical arithmetic.
 * att receives the nk probabilities. */
static void attn_row(float *out, float *att, const float *q, const float *k, const float *v,
                     size_t kstride, int nk, int hs, float scale) {
    float mx = -INFINITY;
    for (int j = 0; j < nk; j++) {
        const float *kj = k + (size_t)j * kstride;
        float s = 0.0f;
        for (int i = 0; i < hs; i++) s += q[i] * kj[i];
        s *= scale;
        att[j] = s;
        if (s > mx) mx = s;
    }
    float sum = 0.0f;
    for (int j = 0; j < nk; j++) {
        att[j] = expf(att[j] - mx);
        sum += att[j];
    }
    float inv = 1.0f / sum;
    for (int j = 0; j < nk; j++) att[j] *= inv;
    for (int i = 0; i < hs; i++) out[i] = 0.0f;
    for (int j = 0; j < nk; j++) {
        const float *vj = v + (size_t)j * kstride;
        float a = att[j];
        for (int i = 0; i < hs; i++) out[i] += a * vj[i];
    }
}

#ifdef SPADE_HAVE_CBLAS
/* Causal softmax of one score row in place: entries 0..t kept, rest zeroed
 * (only the cblas attention path scores whole rows). */
static void causal_softmax_row(float *row, int t, int T) {
    float mx = -INFINITY;
    for (int j = 0; j <= t; j++)
        if (row[j] > mx) mx = row[j];
    float sum = 0.0f;
    for (int j = 0; j <= t; j++) {
        row[j] = expf(row[j] - mx);
        sum += row[j];
    }
    float inv = 1.0f / sum;
    for (int j = 0; j <= t; j++) row[j] *= inv;
    for (int j = t + 1; j < T; j++) row[j] = 0.0f;
}
#endif

static int cpu_attention_forward(void *ctx, float *out, float *att, const float *qkv, int B,
                                 int T, int C, int NH) {
    int hs = C / NH;
    float scale = 1.0f / sqrtf((float)hs);
    size_t C3 = 3 * (size_t)C;
#ifdef SPADE_HAVE_CBLAS
    if (FAST(ctx)) {
        /* Scores for the full T x T square (the masked half is wasted work, but
         * one GEMM beats T small dot loops), a causal softmax per row, then the
         * values; heads in parallel, each with single-threaded GEMMs. */
#pragma omp parallel for collapse(2) if (PAR((size_t)B * NH * T * T * hs))
        for (int b = 0; b < B; b++)
            for (int h = 0; h < NH; h++) {
                const float *q = qkv + b * T * C3 + h * hs;
                float *a = att + ((size_t)b * NH + h) * T * T;
                cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, T, T, hs, scale, q, C3,
                            q + C, C3, 0.0f, a, T);
                for (int t = 0; t < T; t++) causal_softmax_row(a + (size_t)t * T, t, T);
                cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, T, hs, T, 1.0f, a, T, q + 2 * C,
                            C3, 0.0f, out + (size_t)b * T * C + h * hs, C);
            }
        return 0;
    }
#endif
#pragma omp parallel for collapse(3) if (PAR((size_t)B * NH * T * T * hs))
    for (int b = 0; b < B; b++)
        for (int h = 0; h < NH; h++)
            for (int t = 0; t < T; t++) {
                const float *base = qkv + (size_t)b * T * C3 + h * hs;
                float *a = att + (((size_t)b * NH + h) * T + t) * T;
                attn_row(out + ((size_t)b * T + t) * C + h * hs, a, base + t * C3, base + C,
                         base + 2 * C, C3, t + 1, hs, scale);
                for (int j = t + 1; j < T; j++) a[j] = 0.0f;
            }
    return 0;
}

static int cpu_attention_backward(void *ctx, float *dqkv, const float *dout, const float *qkv,
                                  const float *att, int B, int T, int C, int NH) {
    cpu_ctx *c = ctx;
    int hs = C / NH;
    float scale = 1.0f / sqrtf((float)hs);
    size_t C3 = 3 * (size_t)C;
#ifdef SPADE_HAVE_CBLAS
    if (c->fast) {
        float *dall = scratch(c, (size_t)B * NH * T * T);
        if (!dall) return fail(c, "out of memory for attention scratch (%d x %d x %d x %d)", B, NH, T, T);
#pragma omp parallel for collapse(2) if (PAR((size_t)B * NH * T * T * hs))
        for (int b = 0; b < B; b++)
            for (int h = 0; h < NH; h++) {
                const float *q = qkv + b * T * C3 + h * hs, *k = q + C, *v = q + 2 * C;
                float *dq = dqkv + b * T * C3 + h * hs, *dk = dq + C, *dv = dq + 2 * C;
                const float *dy = dout + (size_t)b * T * C + h * hs;
                const float *a = att + ((size_t)b * NH + h) * T * T;
                float *da = dall + ((size_t)b * NH + h) * T * T;
                /* datt = dy @ v^T, then the softmax backward row by row */
                cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, T, T, hs, 1.0f, dy, C, v, C3,
                            0.0f, da, T);
                for (int t = 0; t < T; t++) {
                    const float *ar = a + (size_t)t * T;
                    float *dr = da + (size_t)t * T;
                    float sum = 0.0f;
                    for (int j = 0; j <= t; j++) sum += ar[j] * dr[j];
                    for (int j = 0; j <= t; j++) dr[j] = ar[j] * (dr[j] - sum);
                    for (int j = t + 1; j < T; j++) dr[j] = 0.0f;
                }
                cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, T, hs, T, scale, da, T, k,
                            C3, 0.0f, dq, C3);
                cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, T, hs, T, scale, da, T, q,
                            C3, 0.0f, dk, C3);
                cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, T, hs, T, 1.0f, a, T, dy, C,
                            0.0f, dv, C3);
            }
        return 0;
    }
#endif
    /* Reference: parallel over (b, h) pairs; they write disjoint columns of dqkv. */
    for (size_t i = 0; i < (size_t)B * T * C3; i++) dqkv[i] = 0.0f;
    float *scr = scratch(c, (size_t)B * NH * T);
    if (!scr) return fail(c, "out of memory for attention scratch");
#pragma omp parallel for collapse(2) if (PAR((size_t)B * NH * T * T * hs))
    for (int b = 0; b < B; b++)
        for (int h = 0; h < NH; h++) {
            float *da = scr + ((size_t)b * NH + h) * T;
            const float *base = qkv + (size_t)b * T * C3 + h * hs;
            float *dbase = dqkv + (size_t)b * T * C3 + h * hs;
            for (int t = 0; t < T; t++) {
                const float *a = att + (((size_t)b * NH + h) * T + t) * T;
                const float *dy = dout + ((size_t)b * T + t) * C + h * hs;
                const float *q = base + t * C3;
                float *dq = dbase + t * C3;
                float s = 0.0f;
                for (int j = 0; j <= t; j++) {
                    const float *v = base + j * C3 + 2 * C;
                    float d = 0.0f;
                    for (int i = 0; i < hs; i++) d += dy[i] * v[i];
                    da[j] = d;
                    s += a[j] * d;
                }
                for (int j = 0; j <= t; j++) {
                    float dp = a[j] * (da[j] - s) * scale;
                    const float *k = base + j * C3 + C;
                    float *dk = dbase + j * C3 + C, *dv = dbase + j * C3 + 2 * C;
                    for (int i = 0; i < hs; i++) {
                        dq[i] += dp * k[i];
                        dk[i] += dp * q[i];
                        dv[i] += a[j] * dy[i];
                    }
                }
            }
        }
    return 0;
}

static int cpu_attention_forward_kv(void *ctx, float *out, const float *qkv, float *kcache,
                                    float *vcache, int B, int T, int C, int NH, int pos0,
                                    int maxT) {
    cpu_ctx *c = ctx;
    int hs = C / NH;
    float scale = 1.0f / sqrtf((float)hs);
    size_t C3 = 3 * (size_t)C;
    if (pos0 < 0 || pos0 + T > maxT)
        return fail(c, "attention_forward_kv: positions %d..%d outside the context %d", pos0,
                    pos0 + T - 1, maxT);
    for (int b = 0; b < B; b++)
        for (int t = 0; t < T; t++) {
            const float *row = qkv + ((size_t)b * T + t) * C3;
            memcpy(kcache + ((size_t)b * maxT + pos0 + t) * C, row + C, C * sizeof(float));
            memcpy(vcache + ((size_t)b * maxT + pos0 + t) * C, row + 2 * C, C * sizeof(float));
        }
    float *att = scratch(c, (size_t)B * NH * T * maxT);
    if (!att) return fail(c, "out of memory for attention scratch");
#pragma omp parallel for collapse(3) if (PAR((size_t)B * NH * T * (pos0 + T) * hs))
    for (int b = 0; b < B; b++)
        for (int h = 0; h < NH; h++)
            for (int t = 0; t < T; t++) {
                float *a = att + (((size_t)b * NH + h) * T + t) * maxT;
                const float *kb = kcache + (size_t)b * maxT * C + h * hs;
                const float *vb = vcache + (size_t)b * maxT * C + h * hs;
                attn_row(out + ((size_t)b * T + t) * C + h * hs, a,
                         qkv + ((size_t)b * T + t) * C3 + h * hs, kb, vb, C, pos0 + t + 1, hs,
                         scale);
            }
    return 0;
}

/* ---- the decoding batch: rows of several slots at their own positions ---- */

static int cpu_encoder_forward_at(void *ctx, float *out, const int *inp, const int *pos,
                                  const float *wte, const float *wpe, int N, int C) {
#pragma omp parallel for if (PAR((size_t)N * C))
    for (int i = 0; i < N; i++) {
        const float *we = wte + (size_t)inp[i] * C, *pe = wpe + (size_t)pos[i] * C;
        float *o = out + (size_t)i * C;
        for (int c = 0; c < C; c++) o[c] = we[c] + pe[c];
    }
    return 0;
}

static int cpu_attention_forward_kv_at(void *ctx, float *out, const float *qkv, float *kcache,
                                       float *vcache, const int *slot, const int *pos, int N,
                                       int C, int NH, int S, int maxT, int maxlen) {
    cpu_ctx *c = ctx;
    int hs = C / NH;
    float scale = 1.0f / sqrtf((float)hs);
    size_t C3 = 3 * (size_t)C, work = 0;
    if (maxlen > maxT) return fail(c, "attention_forward_kv_at: maxlen %d > context %d", maxlen, maxT);
    for (int i = 0; i < N; i++) {
        if (slot[i] < 0 || slot[i] >= S || pos[i] < 0 || pos[i] >= maxlen)
            return fail(c, "attention_forward_kv_at: row %d is slot %d position %d, outside %d slots x %d positions",
                        i, slot[i], pos[i], S, maxlen);
        work += (size_t)(pos[i] + 1) * C;
    }
    /* Every row is stored before any is read: a slot's later rows in this
     * call attend its earlier ones. */
    for (int i = 0; i < N; i++) {
        const float *row = qkv + (size_t)i * C3;
        size_t dst = ((size_t)slot[i] * maxT + pos[i]) * C;
        memcpy(kcache + dst, row + C, C * sizeof(float));
        memcpy(vcache + dst, row + 2 * C, C * sizeof(float));
    }
#ifdef _OPENMP
    int nt = omp_get_max_threads();
#else
    int nt = 1;
#endif
    /* One probability row per thread, not per (row, head): a prefill of a
     * long observation would otherwise hold N x NH x maxT floats. */
    float *att = scratch(c, (size_t)nt * maxlen);
    if (!att) return fail(c, "out of memory for attention scratch");
#pragma omp parallel if (PAR(work))
    {
#ifdef _OPENMP
        float *a = att + (size_t)omp_get_thread_num() * maxlen;
#else
        float *a = att;
#endif
#pragma omp for collapse(2)
        for (int i = 0; i < N; i++)
            for (int h = 0; h < NH; h++) {
                size_t base = (size_t)slot[i] * maxT * C + h * hs;
                float *o = out + (size_t)i * C + h * hs;
                const float *q = qkv + (size_t)i * C3 + h * hs;
#ifdef SPADE_HAVE_CBLAS
                if (c->fast) {
                    /* One query against its slot's keys is two matrix-vector
                     * products; sgemv vectorises them where the plain loops
                     * (a float sum, -O2) stay scalar, and decoding spends a
                     * third of its time here at the default width. */
                    int nk = pos[i] + 1;
                    cblas_sgemv(CblasRowMajor, CblasNoTrans, nk, hs, scale, kcache + base, C, q, 1, 0.0f,
                                a, 1);
                    float mx = -INFINITY, sum = 0.0f;
                    for (int j = 0; j < nk; j++)
                        if (a[j] > mx) mx = a[j];
                    for (int j = 0; j < nk; j++) {
                        a[j] = expf(a[j] - mx);
                        sum += a[j];
                    }
                    cblas_sgemv(CblasRowMajor, CblasTrans, nk, hs, 1.0f / sum, vcache + base, C, a, 1, 0.0f,
                                o, 1);
                    continue;
                }
#endif
                attn_row(o, a, q, kcache + base, vcache + base, C, pos[i] + 1, hs, scale);
            }
    }
    return 0;
}

/* ---- elementwise ---- */

#define GELU_K 0.7978845608028654f /* sqrt(2/pi) */

static int cpu_gelu_forward(void *ctx, float *out, const float *inp, size_t n) {
#pragma omp parallel for simd if (PAR(n))
    for (size_t i = 0; i < n; i++) {
        float x = inp[i];
        out[i] = 0.5f * x * (1.0f + tanhf(GELU_K * (x + 0.044715f * x * x * x)));
    }
    return 0;
}

static int cpu_gelu_backward(void *ctx, float *dinp, const float *inp, const float *dout,
                             size_t n) {
#pragma omp parallel for simd if (PAR(n))
    for (size_t i = 0; i < n; i++) {
        float x = inp[i];
        float u = GELU_K * (x + 0.044715f * x * x * x);
        float th = tanhf(u);
        float sech2 = 1.0f - th * th;
        float g = 0.5f * (1.0f + th) + 0.5f * x * sech2 * GELU_K * (1.0f + 3.0f * 0.044715f * x * x);
        dinp[i] = g * dout[i];
    }
    return 0;
}

static int cpu_residual_forward(void *ctx, float *out, const float *a, const float *b,
                                size_t n) {
#pragma omp parallel for simd if (PAR(n))
    for (size_t i = 0; i < n; i++) out[i] = a[i] + b[i];
    return 0;
}

/* ---- softmax / cross-entropy ---- */

static int cpu_crossentropy_forward(void *ctx, float *probs, float *logp, const float *logits,
                                    const int *targets, int N, int V, int Vp) {
#pragma omp parallel for if (PAR((size_t)N * Vp))
    for (int i = 0; i < N; i++) {
        const float *l = logits + (size_t)i * Vp;
        float *p = probs + (size_t)i * Vp;
        float mx = -INFINITY;
        for (int v = 0; v < V; v++)
            if (l[v] > mx) mx = l[v];
        float sum = 0.0f;
        for (int v = 0; v < V; v++) {
            p[v] = expf(l[v] - mx);
            sum += p[v];
        }
        float inv = 1.0f / sum;
        for (int v = 0; v < V; v++) p[v] *= inv;
        for (int v = V; v < Vp; v++) p[v] = 0.0f;
        int t = targets[i];
        logp[i] = t >= 0 ? l[t] - mx - logf(sum) : 0.0f;
    }
    return 0;
}

static int cpu_crossentropy_backward(void *ctx, float *dlogits, const float *probs,
                                     const int *targets, const float *dlogp, int N, int V,
                                     int Vp) {
#pragma omp parallel for if (PAR((size_t)N * Vp))
    for (int i = 0; i < N; i++) {
        float *d = dlogits + (size_t)i * Vp;
        const float *p = probs + (size_t)i * Vp;
        int t = targets[i];
        float w = dlogp[i];
        if (t < 0 || w == 0.0f) {
            memset(d, 0, (size_t)Vp * sizeof(float));
            continue;
        }
        for (int v = 0; v < V; v++) d[v] = -w * p[v];
        d[t] += w;
        for (int v = V; v < Vp; v++) d[v] = 0.0f;
    }
    return 0;
}

/* ---- optimizer ---- */

static int cpu_adamw(void *ctx, float *params, const float *grads, float *m, float *v,
                     size_t n, float lr, float beta1, float beta2, float eps, float wd,
                     float grad_scale, int t) {
    float c1 = 1.0f - powf(beta1, (float)t), c2 = 1.0f - powf(beta2, (float)t);
#pragma omp parallel for simd if (PAR(n))
    for (size_t i = 0; i < n; i++) {
        float g = grads[i] * grad_scale;
        float mi = beta1 * m[i] + (1.0f - beta1) * g;
        float vi = beta2 * v[i] + (1.0f - beta2) * g * g;
        m[i] = mi;
        v[i] = vi;
        float mh = mi / c1, vh = vi / c2;
        params[i] -= lr * (mh / (sqrtf(vh) + eps) + wd * params[i]);
    }
    return 0;
}

/* The gradient norm decides the clip scale, so its bits decide the whole
 * trajectory: an OpenMP reduction adds the threads' partial sums in the order
 * they arrive (and splits by thread count), which made two identical runs, or
 * a run and its resume, drift apart. Instead the vector is cut into a fixed
 * number of chunks that depend only on n, each summed in order, and the
 * chunk sums are added in order: the same bits on any thread count, and the
 * same as cpu_ref. */
#define SUMSQ_CHUNKS 256

static int cpu_sumsq(void *ctx, const float *x, size_t n, double *out) {
    double part[SUMSQ_CHUNKS];
#pragma omp parallel for if (PAR(n))
    for (int k = 0; k < SUMSQ_CHUNKS; k++) {
        size_t i0 = n / SUMSQ_CHUNKS * k + (n % SUMSQ_CHUNKS < (size_t)k ? n % SUMSQ_CHUNKS : (size_t)k);
        size_t i1 = i0 + n / SUMSQ_CHUNKS + ((size_t)k < n % SUMSQ_CHUNKS);
        double s = 0.0;
        for (size_t i = i0; i < i1; i++) s += (double)x[i] * x[i];
        part[k] = s;
    }
    double s = 0.0;
    for (int k = 0; k < SUMSQ_CHUNKS; k++) s += part[k];
    *out = s;
    return 0;
}

#define CPU_VTABLE(NAME)                                                                    \
    {                                                                                       \
        NAME, cpu_free, cpu_last_error, cpu_alloc, cpu_dealloc, cpu_memcpy, cpu_memcpy,     \
            cpu_memcpy, cpu_zero, cpu_sync, cpu_encoder_forward, cpu_encoder_backward,       \
            cpu_layernorm_forward, cpu_layernorm_backward, cpu_matmul_forward,               \
            cpu_matmul_backward, cpu_attention_forward, cpu_attention_backward,              \
            cpu_attention_forward_kv, cpu_gelu_forward, cpu_gelu_backward,                   \
            cpu_residual_forward, cpu_crossentropy_forward, cpu_crossentropy_backward,       \
            cpu_adamw, cpu_sumsq, cpu_encoder_forward_at, cpu_attention_forward_kv_at        \
    }

static const spade_backend_vtable cpu_ref_vt = CPU_VTABLE("cpu_ref");
static const spade_backend_vtable cpu_vt = CPU_VTABLE("cpu");

static int cpu_new(spade_backend *be, int fast, char *err, size_t errlen) {
    cpu_ctx *c = calloc(1, sizeof *c);
    if (!c) {
        snprintf(err, errlen, "out of memory creating the CPU backend");
        return SPADE_POLICY_ENOMEM;
    }
    c->fast = fast;
#if defined(SPADE_HAVE_CBLAS) && defined(OPENBLAS_VERSION) && defined(_OPENMP)
    /* One thread pool, not two: OpenMP owns the cores and each thread calls
     * sgemm on its own block, so OpenBLAS's threads would only fight
     * OpenMP's spinning ones (6x slower on 2 cores). Process-wide, and
     * deliberate: it is what every later BLAS call in this process wants too. */
    if (fast) openblas_set_num_threads(1);
#endif
    be->vt = fast ? &cpu_vt : &cpu_ref_vt;
    be->ctx = c;
    return 0;
}

int spade_backend_cpu_ref_new(spade_backend *be, char *err, size_t errlen) {
    return cpu_new(be, 0, err, errlen);
}
int spade_backend_cpu_new(spade_backend *be, char *err, size_t errlen) {
    return cpu_new(be, 1, err, errlen);
}

int spade_backend_cpu_has_cblas(void) {
#ifdef SPADE_HAVE_CBLAS
    return 1;
#else
    return 0;
#endif
}
