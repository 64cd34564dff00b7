/* backend_cpu.c — the CPU backends of the policy: cpu_ref, cpu (and cpu_tt).
 *
 * What it is: one implementation of every op in backend.h, written as plain C
 * loops with a fixed summation order. The same code serves both backends:
 *   cpu_ref  runs it on one thread, GEMMs and attention as loops, attention
 *            with the exact T x T probabilities. It is the reference that
 *            tests compare every other backend against, and the path whose
 *            arithmetic does not depend on batch size (so KV-cache sampling
 *            and full recompute agree bit for bit on it).
 *   cpu      turns on OpenMP for the loops (parallel only over independent
 *            outputs, so each output's sum is still formed in the same order),
 *            does the GEMMs with spade's own kernels (gemm.h: AVX-512, AVX2
 *            or portable C, chosen by what the CPU supports, never by an
 *            environment variable), and runs the tiled attention (memory
 *            linear in T). The non-GEMM loops are vectorised (SPADE_CLONES).
 *   cpu_tt   cpu with the T x T attention of before, for the benchmark.
 * What it is not: a user of OpenBLAS's GEMMs (bench/bench_gemm.c measures
 * them against spade's), or bit-identical across machines (vector widths
 * differ between clones).
 */
#include "policy/backend.h"

#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#ifdef _OPENMP
#include <omp.h>
#endif
#ifdef SPADE_HAVE_CBLAS
#include <cblas.h>
#endif

#include "errbuf.h"
#include "policy/gemm.h"
#include "policy/team.h"

typedef struct cpu_ctx {
    int fast; /* 0: cpu_ref, 1: cpu, 2: cpu_tt (cpu with the T x T attention) */
    char err[256];
    float *scratch; /* per-call scratch (attention backward), grown on demand */
    size_t scratch_n;
} cpu_ctx;

/* The OpenMP if-clause: the reference runs the very same loops serially. */
#define FAST(c) (((cpu_ctx *)(c))->fast)
/* OpenMP only where a loop has enough work to pay for waking the team: on a
 * small or busy machine each parallel region's fork/join and barrier spin
 * also steal cycles from OpenBLAS's own threads (measured: a 1M-parameter
 * step ran 6x slower with a region per head than with one thread). */
#define PAR_MIN_WORK ((size_t)1 << 18)
/* A product with a side of LoRA's rank (lora.c: x A^T, u B^T and their
 * gradients) runs on one thread: it is a few percent of its layer's work,
 * and a parallel region for it is one more barrier where, on a machine busier
 * than its cores, a thread waits for a descheduled one (measured: with them
 * threaded a LoRA step took more CPU time than a full one). */
#define SKINNY(IC, OC) ((IC) <= 64 || (OC) <= 64)
#define PAR(work) (FAST(ctx) && (size_t)(work) >= PAR_MIN_WORK)
/* Below this many rows matmul_forward splits its output columns among the
 * threads instead of its rows (a decoding pass of up to 63 slots): split by
 * rows, every thread's sgemm packed the whole weight matrix for its few
 * rows (32 slots of SmolLM2-135M: 8.4 -> 11.3 tokens/s at load 12-15). */
#define MATMUL_FEW_ROWS 64
/* ... and runs on one thread below this many multiply-adds, the same bound
 * as every other loop's (PAR_MIN_WORK). It was 16 M for a while, tuned on a
 * machine busier than its cores (load 12 on 2 cores: decoding one slot ran at
 * 0.65 tokens/s with two threads against 6.5 with one, a parallel region
 * waiting at its barrier for a descheduled thread); on a quiet 2-core machine
 * that bound halved one-slot decoding of SmolLM2-135M (16.3 against 28.4
 * tokens/s, bench_llama decode 1 16 32, load 1.8). spade is tuned for the
 * machine a user has; on an oversubscribed one, OMP_NUM_THREADS=1. */
#define MATMUL_PAR_MIN ((size_t)1 << 18)
/* Up to this many rows (decoding a few slots) the products run on the team
 * (team.h) instead of OpenMP regions: a token of one slot is ~120 such
 * products, and an OpenMP region's barrier waits for every thread, a
 * descheduled one included (bench_llama decode 1 16 64 at
 * load 4-6 on 2 cores: 1.4-2.3 tokens/s through OpenMP). The team's items
 * are columns of about TEAM_ITEM_FLOATS weights (64 KiB). */
#define TEAM_ROWS 4
#define TEAM_ITEM_FLOATS 16384

static int fail(cpu_ctx *c, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(c->err, sizeof c->err, fmt, ap);
    va_end(ap);
    return SPADE_POLICY_EBACKEND;
}

/* exp(x) in a form the compiler vectorises (libm's expf is a call per
 * element): x = n ln2 + r with |r| <= ln2/2, exp(r) by Cephes' degree-6
 * polynomial, 2^n put into the exponent bits. Relative error <= 2 ulp on
 * [-87, 88]; below -87 it returns 0 (a probability under 1e-38 is 0 to a
 * float32 sum), above 88 it saturates at exp(88). */
static inline float spade_expf(float x) {
    x = x > 88.0f ? 88.0f : x;
    float z = x < -87.0f ? -87.0f : x;
    /* round to nearest by the 1.5 * 2^23 trick: no call, no SSE4.1 needed */
    float n = (z * 1.44269504088896341f + 12582912.0f) - 12582912.0f;
    float r = z - n * 0.693359375f;
    r = r - n * -2.12194440e-4f;
    float p = 1.9875691500e-4f;
    p = p * r + 1.3981999507e-3f;
    p = p * r + 8.3334519073e-3f;
    p = p * r + 4.1665795894e-2f;
    p = p * r + 1.6666665459e-1f;
    p = p * r + 5.0000001201e-1f;
    p = p * r * r + r + 1.0f;
    union {
        int32_t i;
        float f;
    } u;
    u.i = ((int32_t)n + 127) << 23;
    return x < -87.0f ? 0.0f : p * u.f;
}

/* The loops that are not GEMMs are built for baseline x86-64 (SSE2, 4 floats
 * a vector: binaries must run on any x86-64), plus AVX2 and AVX-512 clones of
 * each hot kernel that the loader picks by CPU (GCC function multiversioning,
 * an ifunc per function). Elementwise kernels give the same bits in every
 * clone (C11 mode: no FMA contraction); a kernel with a vector reduction sums
 * in an order that depends on the vector width, so on one machine, which is
 * what the cpu-vs-cpu_ref tests compare, both backends still agree bit for bit.
 * The default clones run in tests/test_baseline_isa.sh, under qemu-x86_64 -cpu Nehalem. */
#if defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__) && defined(__linux__) && __GNUC__ >= 12
#define SPADE_CLONES __attribute__((target_clones("default", "arch=x86-64-v3", "arch=x86-64-v4")))
#else
#define SPADE_CLONES
#endif

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

/* The same for n elements of a flat vector, cut at multiples of 16 floats
 * (64 bytes) so that two threads never share a cache line. */
static inline void split_n(size_t n, size_t *i0, size_t *i1) {
#ifdef _OPENMP
    size_t nt = (size_t)omp_get_num_threads(), id = (size_t)omp_get_thread_num();
#else
    size_t nt = 1, id = 0;
#endif
    size_t blocks = (n + 15) / 16;
    *i0 = blocks * id / nt * 16;
    *i1 = blocks * (id + 1) / nt * 16;
    if (*i0 > n) *i0 = n;
    if (*i1 > n) *i1 = n;
}

static void cpu_free(void *ctx) {
    cpu_ctx *c = ctx;
    if (!c) return;
    free(c->scratch);
    free(c);
}

static const char *cpu_last_error(void *ctx) { return ((cpu_ctx *)ctx)->err; }

/* ---- memory: plain host memory ---- */

/* Zeroed through calloc, not aligned_alloc + memset: a large block comes
 * from fresh pages the kernel has zeroed, so nothing is written and only the
 * pages the policy touches become resident (a model's gradients and AdamW
 * moments before its first step, a decoder's cache past the positions it
 * holds; memset touched them all: half of a GGUF load's time). The block
 * keeps 64 bytes of slack for the alignment; the pointer calloc returned
 * sits just below the aligned one, for dealloc. */
static void *cpu_alloc(void *ctx, size_t bytes) {
    cpu_ctx *c = ctx;
    size_t n = (bytes + 63) / 64 * 64;
    if (n == 0) n = 64;
    unsigned char *raw = n <= SIZE_MAX - 64 ? calloc(1, n + 64) : NULL;
    if (!raw) {
        fail(c, "out of host memory allocating %zu bytes", bytes);
        return NULL;
    }
    /* at least one pointer's room below the aligned block */
    unsigned char *p = raw + 64 - ((uintptr_t)raw % 64);
    memcpy(p - sizeof raw, &raw, sizeof raw);
    return p;
}
static void cpu_dealloc(void *ctx, void *p) {
    (void)ctx;
    if (!p) return;
    void *raw;
    memcpy(&raw, (unsigned char *)p - sizeof raw, sizeof raw);
    free(raw);
}
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

static int cpu_encoder_forward(void *ctx, float *out, const int *inp, const float *wte, const float *wpe, int B, int T,
                               int C, int pos0) {
    int N = B * T;
#pragma omp parallel for if (PAR((size_t)N * C))
    for (int i = 0; i < N; i++) {
        int t = i % T;
        const float *we = wte + (size_t)inp[i] * C;
        float *o = out + (size_t)i * C;
        if (!wpe) {
            memcpy(o, we, (size_t)C * sizeof(float));
            continue;
        }
        const float *pe = wpe + (size_t)(pos0 + t) * C;
        for (int c = 0; c < C; c++) o[c] = we[c] + pe[c];
    }
    return 0;
}

static int cpu_encoder_backward(void *ctx, float *dwte, float *dwpe, const float *dout, const int *inp, int B, int T,
                                int C) {
    /* Parallel over channels: several positions may carry the same token, so
     * each thread owns a strip of columns and adds rows in order
     * (deterministic), sweeping row-major within its strip. */
#pragma omp parallel if (PAR((size_t)B * T * C))
    {
        int c0, c1;
        split(C, &c0, &c1);
        for (int i = 0; i < B * T; i++) {
            const float *d = dout + (size_t)i * C;
            float *we = dwte + (size_t)inp[i] * C;
#pragma omp simd
            for (int c = c0; c < c1; c++) we[c] += d[c];
            if (dwpe) {
                float *pe = dwpe + (size_t)(i % T) * C;
#pragma omp simd
                for (int c = c0; c < c1; c++) pe[c] += d[c];
            }
        }
    }
    return 0;
}

/* ---- layernorm ---- */

SPADE_CLONES static void layernorm_rows(float *out, float *mean, float *rstd, const float *inp, const float *w,
                                        const float *b, int r0, int r1, int C) {
    for (int i = r0; i < r1; i++) {
        const float *x = inp + (size_t)i * C;
        float m = 0.0f;
#pragma omp simd reduction(+ : m)
        for (int c = 0; c < C; c++) m += x[c];
        m /= C;
        float v = 0.0f;
#pragma omp simd reduction(+ : v)
        for (int c = 0; c < C; c++) {
            float d = x[c] - m;
            v += d * d;
        }
        v /= C;
        float s = 1.0f / sqrtf(v + 1e-5f);
        float *o = out + (size_t)i * C;
#pragma omp simd
        for (int c = 0; c < C; c++) o[c] = (x[c] - m) * s * w[c] + b[c];
        if (mean) mean[i] = m;
        if (rstd) rstd[i] = s;
    }
}

static int cpu_layernorm_forward(void *ctx, float *out, float *mean, float *rstd, const float *inp, const float *w,
                                 const float *b, int N, int C) {
#pragma omp parallel if (PAR((size_t)N * C))
    {
        int r0, r1;
        split(N, &r0, &r1);
        layernorm_rows(out, mean, rstd, inp, w, b, r0, r1, C);
    }
    return 0;
}

/* Rows r0..r1 of dinp; and, for channels c0..c1, dweight and dbias summed over
 * every row in row order (row-major sweeps: the strided column walk was the
 * slow part). Each output's sum has one fixed order whatever the split. */
SPADE_CLONES static void layernorm_back_rows(float *dinp, const float *dout, const float *inp, const float *w,
                                             const float *mean, const float *rstd, int r0, int r1, int C) {
    for (int i = r0; i < r1; i++) {
        const float *x = inp + (size_t)i * C, *dy = dout + (size_t)i * C;
        float m = mean[i], s = rstd[i];
        float dn_mean = 0.0f, dnx_mean = 0.0f;
#pragma omp simd reduction(+ : dn_mean, dnx_mean)
        for (int c = 0; c < C; c++) {
            float xh = (x[c] - m) * s, dn = w[c] * dy[c];
            dn_mean += dn;
            dnx_mean += dn * xh;
        }
        dn_mean /= C;
        dnx_mean /= C;
        float *dx = dinp + (size_t)i * C;
#pragma omp simd
        for (int c = 0; c < C; c++) {
            float xh = (x[c] - m) * s, dn = w[c] * dy[c];
            dx[c] += s * (dn - dn_mean - xh * dnx_mean);
        }
    }
}
SPADE_CLONES static void layernorm_back_cols(float *dweight, float *dbias, const float *dout, const float *inp,
                                             const float *mean, const float *rstd, int N, int C, int c0, int c1) {
    for (int i = 0; i < N; i++) {
        const float *x = inp + (size_t)i * C, *dy = dout + (size_t)i * C;
        float m = mean[i], s = rstd[i];
#pragma omp simd
        for (int c = c0; c < c1; c++) {
            dbias[c] += dy[c];
            dweight[c] += (x[c] - m) * s * dy[c];
        }
    }
}

static int cpu_layernorm_backward(void *ctx, float *dinp, float *dweight, float *dbias, const float *dout,
                                  const float *inp, const float *w, const float *mean, const float *rstd, int N,
                                  int C) {
    /* dweight/dbias are summed straight into the gradient, row after row:
     * one fixed order per channel, the same on both backends. */
#pragma omp parallel if (PAR((size_t)N * C))
    {
        int r0, r1, c0, c1;
        split(N, &r0, &r1);
        split(C, &c0, &c1);
        layernorm_back_rows(dinp, dout, inp, w, mean, rstd, r0, r1, C);
        layernorm_back_cols(dweight, dbias, dout, inp, mean, rstd, N, C, c0, c1);
    }
    return 0;
}

/* ---- matmul ---- */

static void ref_matmul_forward(int fast, float *out, const float *inp, const float *w, const float *bias, int N, int IC,
                               int OC) {
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

/* A decoding product of a few rows through the team (team.h): items of
 * output columns, each a spade_sgemm of the same N rows, as the OpenMP
 * column split ran them (so the same bits whatever the split). */
typedef struct matvec_job {
    float *out;
    const float *inp, *w, *bias;
    int N, IC, OC, per;
} matvec_job;

static void matvec_item(void *arg, int item, int worker) {
    (void)worker;
    const matvec_job *j = arg;
    int a = item * j->per, b = a + j->per < j->OC ? a + j->per : j->OC;
    if (j->bias)
        for (int i = 0; i < j->N; i++)
            memcpy(j->out + (size_t)i * j->OC + a, j->bias + a, (size_t)(b - a) * sizeof(float));
    spade_sgemm(0, 1, j->N, b - a, j->IC, 1.0f, j->inp, j->IC, j->w + (size_t)a * j->IC, j->IC, j->bias ? 1.0f : 0.0f,
                j->out + a, j->OC);
}

static int cpu_matmul_forward(void *ctx, float *out, const float *inp, const float *w, const float *bias, int N, int IC,
                              int OC) {
    if (FAST(ctx) && N <= TEAM_ROWS && !SKINNY(IC, OC) && (size_t)N * OC * IC >= MATMUL_PAR_MIN) {
        /* above 2 rows spade_sgemm packs (gemm.c, DOT_MAX_M): each item packs
         * the rows again, so those items are 16 times larger */
        int per = TEAM_ITEM_FLOATS * (N > 2 ? 16 : 1) / IC / 16 * 16;
        if (per < 16) per = 16;
        matvec_job j = {out, inp, w, bias, N, IC, OC, per};
        spade_team_run(matvec_item, &j, (OC + per - 1) / per);
        return 0;
    }
    if (FAST(ctx)) {
        /* One thread pool: OpenMP splits the product, each thread runs a
         * single-threaded spade_sgemm on its block. Each thread packs its
         * share of one operand and the whole of the other, so the split is
         * along the larger one: the output columns when the weights
         * outnumber the rows (the head; decoding, where a row split also
         * left one thread the only row and the other spinning at the
         * barrier), else the rows. A split never changes an output's bits
         * (spade_sgemm sums each output alike in any block) except below 5
         * rows, which only the column split sees. Few rows use the higher
         * MATMUL_PAR_MIN: see there. */
        int by_cols = N < MATMUL_FEW_ROWS || OC >= N;
        size_t min = N < MATMUL_FEW_ROWS ? MATMUL_PAR_MIN : PAR_MIN_WORK;
#pragma omp parallel if ((size_t)N * OC * IC >= min && !SKINNY(IC, OC))
        {
            int a, b;
            split(by_cols ? OC : N, &a, &b);
            if (b > a && by_cols) {
                if (bias)
                    for (int i = 0; i < N; i++)
                        memcpy(out + (size_t)i * OC + a, bias + a, (size_t)(b - a) * sizeof(float));
                spade_sgemm(0, 1, N, b - a, IC, 1.0f, inp, IC, w + (size_t)a * IC, IC, bias ? 1.0f : 0.0f, out + a, OC);
            } else if (b > a) {
                if (bias)
                    for (int i = a; i < b; i++) memcpy(out + (size_t)i * OC, bias, OC * sizeof(float));
                spade_sgemm(0, 1, b - a, OC, IC, 1.0f, inp + (size_t)a * IC, IC, w, IC, bias ? 1.0f : 0.0f,
                            out + (size_t)a * OC, OC);
            }
        }
        return 0;
    }
    ref_matmul_forward(FAST(ctx), out, inp, w, bias, N, IC, OC);
    return 0;
}

/* dbias[o] += sum over rows of dout[:, o] for o in [o0, o1): rows swept in
 * order across a strip of BIAS_STRIP columns held in a local sum (a column
 * walk strides OC floats per element), each column's sum formed in row order
 * from 0 and then added, as a plain per-column loop would. */
#define BIAS_STRIP 256
SPADE_CLONES static void bias_colsum(float *dbias, const float *dout, int N, int OC, int o0, int o1) {
    float acc[BIAS_STRIP];
    for (int ob = o0; ob < o1; ob += BIAS_STRIP) {
        int n = o1 - ob < BIAS_STRIP ? o1 - ob : BIAS_STRIP;
        for (int j = 0; j < n; j++) acc[j] = 0.0f;
        for (int i = 0; i < N; i++) {
            const float *d = dout + (size_t)i * OC + ob;
#pragma omp simd
            for (int j = 0; j < n; j++) acc[j] += d[j];
        }
        for (int j = 0; j < n; j++) dbias[ob + j] += acc[j];
    }
}

static int cpu_matmul_backward(void *ctx, float *dinp, float *dweight, float *dbias, const float *dout,
                               const float *inp, const float *w, int N, int IC, int OC) {
    int fast = FAST(ctx);
    if (fast) {
#pragma omp parallel if (PAR((size_t)N * OC * IC) && !SKINNY(IC, OC))
        {
            /* dinp splits along the larger of its rows and its columns
             * (see cpu_matmul_forward), dweight its rows (output channels). */
            int r0, r1, o0, o1;
            split(IC > N ? IC : N, &r0, &r1);
            split(OC, &o0, &o1);
            if (r1 > r0 && IC > N)
                spade_sgemm(0, 0, N, r1 - r0, OC, 1.0f, dout, OC, w + r0, IC, 0.0f, dinp + r0, IC);
            else if (r1 > r0)
                spade_sgemm(0, 0, r1 - r0, IC, OC, 1.0f, dout + (size_t)r0 * OC, OC, w, IC, 0.0f,
                            dinp + (size_t)r0 * IC, IC);
            if (dweight && o1 > o0)
                spade_sgemm(1, 0, o1 - o0, IC, N, 1.0f, dout + o0, OC, inp, IC, 1.0f, dweight + (size_t)o0 * IC, IC);
        }
        goto bias;
    }
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
    for (int o = 0; o < (dweight ? OC : 0); o++) { /* NULL: a frozen weight (LoRA) */
        float *dw = dweight + (size_t)o * IC;
        for (int i = 0; i < N; i++) {
            float d = dout[(size_t)i * OC + o];
            const float *x = inp + (size_t)i * IC;
            for (int k = 0; k < IC; k++) dw[k] += d * x[k];
        }
    }
bias:
    if (dbias) {
#pragma omp parallel if (fast && (size_t)N * OC >= PAR_MIN_WORK)
        {
            int o0, o1;
            split(OC, &o0, &o1);
            bias_colsum(dbias, dout, N, OC, o0, o1);
        }
    }
    return 0;
}

/* ---- attention ---- */

/* One query row of one head: scores against nk keys (stride kstride floats
 * apart), causal softmax, weighted sum of values. Shared by the training
 * attention and the KV-cache attention so both do identical arithmetic.
 * att receives the nk probabilities. */
static void attn_row(float *out, float *att, const float *q, const float *k, const float *v, size_t kstride, int nk,
                     int hs, float scale) {
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

/* The log-sum-exp of one causal row of scores, recomputed from q and k
 * (attn_row keeps no max or sum, and it is shared with the KV-cache path,
 * so it stays as it is). Only cpu_ref's training forward calls it. */
static float ref_row_lse(const float *q, const float *k, size_t kstride, int nk, int hs, float scale) {
    float mx = -INFINITY;
    for (int j = 0; j < nk; j++) {
        const float *kj = k + (size_t)j * kstride;
        float s = 0.0f;
        for (int i = 0; i < hs; i++) s += q[i] * kj[i];
        s *= scale;
        if (s > mx) mx = s;
    }
    double sum = 0.0;
    for (int j = 0; j < nk; j++) {
        const float *kj = k + (size_t)j * kstride;
        float s = 0.0f;
        for (int i = 0; i < hs; i++) s += q[i] * kj[i];
        sum += exp((double)(s * scale) - mx);
    }
    return mx + (float)log(sum);
}

/* Row-major C(M,N) = alpha op(A) op(B) + beta C on one thread (gemm.h). */
static void gemm(int ta, int tb, int M, int N, int K, float alpha, const float *A, int lda, const float *B, int ldb,
                 float beta, float *Cm, int ldc) {
    spade_sgemm(ta, tb, M, N, K, alpha, A, lda, B, ldb, beta, Cm, ldc);
}

/* Causal softmax of one score row in place: entries 0..t kept, rest zeroed
 * (only the T x T attention path, cpu_tt, scores whole rows). Returns
 * the row's log-sum-exp. */
static float causal_softmax_row(float *row, int t, int T) {
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
    return mx + logf(sum);
}

/* The tiled attention of the cpu backend: queries in blocks of FA_BQ rows,
 * each block against all the keys it may see at once — a strip of FA_BQ x t
 * scores, t <= T: memory per thread linear in T (4 MiB at T = 8192), and the
 * keys after the block's last query never scored. The strip's softmax is
 * exact (two passes over it), its log-sum-exp per row is kept, and backward
 * recomputes the strip from it. A strip rather than FlashAttention's
 * 64 x 64 tiles with an online softmax: on a CPU it is 2-3.5x faster
 * (measured at the four bench configurations and T = 2048), because a few
 * bigger sgemm calls per block beat many tile-sized ones (a strip is 64 x T
 * floats: in this machine's 2 MiB of L2 per core up to T = 8192). */
#define FA_BQ 64

static int fa_threads(void) {
#ifdef _OPENMP
    return omp_get_max_threads();
#else
    return 1;
#endif
}
static int fa_thread(void) {
#ifdef _OPENMP
    return omp_get_thread_num();
#else
    return 0;
#endif
}

/* Softmax of one strip row in place: s[0..nv) scores -> probabilities
 * exp(s - max) / sum, s[nv..n) zeroed; returns the log-sum-exp. */
SPADE_CLONES static float strip_softmax_row(float *s, int nv, int n) {
    float mx = -INFINITY;
#pragma omp simd reduction(max : mx)
    for (int j = 0; j < nv; j++) mx = s[j] > mx ? s[j] : mx;
    float sum = 0.0f;
#pragma omp simd reduction(+ : sum)
    for (int j = 0; j < nv; j++) {
        float e = spade_expf(s[j] - mx);
        s[j] = e;
        sum += e;
    }
    float inv = 1.0f / sum;
#pragma omp simd
    for (int j = 0; j < nv; j++) s[j] *= inv;
    for (int j = nv; j < n; j++) s[j] = 0.0f;
    return mx + logf(sum);
}

/* One strip row of backward: p = exp(s - lse) (masked past nv), dp := p (dp - D). */
SPADE_CLONES static void strip_backward_row(float *s, float *dp, int nv, int n, float lse, float D) {
#pragma omp simd
    for (int j = 0; j < nv; j++) {
        float p = spade_expf(s[j] - lse);
        s[j] = p;
        dp[j] = p * (dp[j] - D);
    }
    for (int j = nv; j < n; j++) s[j] = dp[j] = 0.0f;
}

static int strip_forward(cpu_ctx *ctx, float *out, float *lse, const float *qkv, int B, int T, int C, int NH) {
    int hs = C / NH, C3 = 3 * C, nqb = (T + FA_BQ - 1) / FA_BQ;
    float scale = 1.0f / sqrtf((float)hs);
    size_t per = ((size_t)FA_BQ * T + 15) / 16 * 16;
    float *ws = scratch(ctx, per * fa_threads());
    if (!ws) return fail(ctx, "out of memory for attention scratch (%d threads x %zu floats)", fa_threads(), per);
    long ntask = (long)B * NH * nqb;
    /* One task per (b, h, query block), each writing its own rows: later
     * blocks see more keys, so dynamic scheduling, largest first. */
#pragma omp parallel for schedule(dynamic, 1) if (PAR((size_t)B * NH * T * T * hs / 2))
    for (long task = 0; task < ntask; task++) {
        int qb = nqb - 1 - (int)(task % nqb), h = (int)(task / nqb % NH), b = (int)(task / nqb / NH);
        float *S = ws + per * fa_thread();
        int i0 = qb * FA_BQ, i1 = i0 + FA_BQ < T ? i0 + FA_BQ : T, nq = i1 - i0;
        const float *base = qkv + (size_t)b * T * C3 + h * hs;
        /* the strip: these nq queries against keys 0 .. i1-1 (the rest are masked) */
        gemm(0, 1, nq, i1, hs, scale, base + (size_t)i0 * C3, C3, base + C, C3, 0.0f, S, i1);
        float *lo = lse + ((size_t)b * NH + h) * T + i0;
        for (int r = 0; r < nq; r++) lo[r] = strip_softmax_row(S + (size_t)r * i1, i0 + r + 1, i1);
        gemm(0, 0, nq, hs, i1, 1.0f, S, i1, base + 2 * C, C3, 0.0f, out + ((size_t)b * T + i0) * C + h * hs, C);
    }
    return 0;
}

static int strip_backward(cpu_ctx *ctx, float *dqkv, const float *dout, const float *qkv, const float *out,
                          const float *lse, int B, int T, int C, int NH) {
    int hs = C / NH, C3 = 3 * C;
    float scale = 1.0f / sqrtf((float)hs);
    size_t per = (2 * (size_t)FA_BQ * T + (size_t)T + 15) / 16 * 16;
    float *ws = scratch(ctx, per * fa_threads());
    if (!ws) return fail(ctx, "out of memory for attention scratch (%d threads x %zu floats)", fa_threads(), per);
        /* One task per (b, h): it owns that head's columns of dqkv, so every sum
         * is formed by one thread in one order. */
#pragma omp parallel for collapse(2) schedule(dynamic, 1) if (PAR((size_t)B * NH * T * T * hs))
    for (int b = 0; b < B; b++)
        for (int h = 0; h < NH; h++) {
            float *P = ws + per * fa_thread(), *dP = P + (size_t)FA_BQ * T, *D = dP + (size_t)FA_BQ * T;
            const float *base = qkv + (size_t)b * T * C3 + h * hs;
            float *dbase = dqkv + (size_t)b * T * C3 + h * hs;
            const float *dy = dout + (size_t)b * T * C + h * hs, *o = out + (size_t)b * T * C + h * hs;
            const float *ls = lse + ((size_t)b * NH + h) * T;
            for (int t = 0; t < T; t++) {
                const float *dyt = dy + (size_t)t * C, *ot = o + (size_t)t * C;
                float s = 0.0f;
                for (int i = 0; i < hs; i++) s += dyt[i] * ot[i];
                D[t] = s;
                float *d = dbase + (size_t)t * C3;
                memset(d + C, 0, hs * sizeof(float));
                memset(d + 2 * C, 0, hs * sizeof(float));
            }
            for (int i0 = 0; i0 < T; i0 += FA_BQ) {
                int i1 = i0 + FA_BQ < T ? i0 + FA_BQ : T, nq = i1 - i0;
                const float *q = base + (size_t)i0 * C3, *dyi = dy + (size_t)i0 * C;
                gemm(0, 1, nq, i1, hs, scale, q, C3, base + C, C3, 0.0f, P, i1);
                gemm(0, 1, nq, i1, hs, 1.0f, dyi, C, base + 2 * C, C3, 0.0f, dP, i1);
                for (int r = 0; r < nq; r++)
                    strip_backward_row(P + (size_t)r * i1, dP + (size_t)r * i1, i0 + r + 1, i1, ls[i0 + r], D[i0 + r]);
                /* dq = scale dS k (overwrites); dk += scale dS^T q; dv += P^T dy */
                gemm(0, 0, nq, hs, i1, scale, dP, i1, base + C, C3, 0.0f, dbase + (size_t)i0 * C3, C3);
                gemm(1, 0, i1, hs, nq, scale, dP, i1, q, C3, 1.0f, dbase + C, C3);
                gemm(1, 0, i1, hs, nq, 1.0f, P, i1, dyi, C, 1.0f, dbase + 2 * C, C3);
            }
        }
    return 0;
}

static int cpu_attention_forward(void *ctx, float *out, float *lse, float *att, const float *qkv, int B, int T, int C,
                                 int NH) {
    cpu_ctx *cx = ctx;
    if (cx->fast == 1) return strip_forward(cx, out, lse, qkv, B, T, C, NH);
    if (!att)
        return fail(cx, "attention_forward: the %s backend needs the T x T att buffer",
                    cx->fast ? "cpu_tt" : "cpu_ref");
    int hs = C / NH;
    float scale = 1.0f / sqrtf((float)hs);
    size_t C3 = 3 * (size_t)C;
    if (FAST(ctx)) {
        /* cpu_tt, the attention cpu had before the tiled one (kept for the
         * benchmark): scores for the full T x T square, a causal softmax per
         * row, then the values; heads in parallel, single-threaded GEMMs. */
#pragma omp parallel for collapse(2) if (PAR((size_t)B * NH * T * T * hs))
        for (int b = 0; b < B; b++)
            for (int h = 0; h < NH; h++) {
                const float *q = qkv + b * T * C3 + h * hs;
                float *a = att + ((size_t)b * NH + h) * T * T;
                float *lo = lse + ((size_t)b * NH + h) * T;
                gemm(0, 1, T, T, hs, scale, q, C3, q + C, C3, 0.0f, a, T);
                for (int t = 0; t < T; t++) lo[t] = causal_softmax_row(a + (size_t)t * T, t, T);
                gemm(0, 0, T, hs, T, 1.0f, a, T, q + 2 * C, C3, 0.0f, out + (size_t)b * T * C + h * hs, C);
            }
        return 0;
    }
    for (int b = 0; b < B; b++)
        for (int h = 0; h < NH; h++)
            for (int t = 0; t < T; t++) {
                const float *base = qkv + (size_t)b * T * C3 + h * hs;
                float *a = att + (((size_t)b * NH + h) * T + t) * T;
                attn_row(out + ((size_t)b * T + t) * C + h * hs, a, base + t * C3, base + C, base + 2 * C, C3, t + 1,
                         hs, scale);
                for (int j = t + 1; j < T; j++) a[j] = 0.0f;
                lse[((size_t)b * NH + h) * T + t] = ref_row_lse(base + t * C3, base + C, C3, t + 1, hs, scale);
            }
    return 0;
}

static int cpu_attention_backward(void *ctx, float *dqkv, const float *dout, const float *qkv, const float *out,
                                  const float *lse, const float *att, int B, int T, int C, int NH) {
    cpu_ctx *c = ctx;
    if (c->fast == 1) return strip_backward(c, dqkv, dout, qkv, out, lse, B, T, C, NH);
    if (!att)
        return fail(c, "attention_backward: the %s backend needs the T x T att buffer", c->fast ? "cpu_tt" : "cpu_ref");
    int hs = C / NH;
    float scale = 1.0f / sqrtf((float)hs);
    size_t C3 = 3 * (size_t)C;
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
                gemm(0, 1, T, T, hs, 1.0f, dy, C, v, C3, 0.0f, da, T);
                for (int t = 0; t < T; t++) {
                    const float *ar = a + (size_t)t * T;
                    float *dr = da + (size_t)t * T;
                    float sum = 0.0f;
                    for (int j = 0; j <= t; j++) sum += ar[j] * dr[j];
                    for (int j = 0; j <= t; j++) dr[j] = ar[j] * (dr[j] - sum);
                    for (int j = t + 1; j < T; j++) dr[j] = 0.0f;
                }
                gemm(0, 0, T, hs, T, scale, da, T, k, C3, 0.0f, dq, C3);
                gemm(1, 0, T, hs, T, scale, da, T, q, C3, 0.0f, dk, C3);
                gemm(1, 0, T, hs, T, 1.0f, a, T, dy, C, 0.0f, dv, C3);
            }
        return 0;
    }
    /* Reference: the classic softmax backward from the stored probabilities,
     * one thread, rows in order. */
    for (size_t i = 0; i < (size_t)B * T * C3; i++) dqkv[i] = 0.0f;
    float *da = scratch(c, (size_t)T);
    if (!da) return fail(c, "out of memory for attention scratch");
    for (int b = 0; b < B; b++)
        for (int h = 0; h < NH; h++) {
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

static int cpu_attention_forward_kv(void *ctx, float *out, const float *qkv, float *kcache, float *vcache, int B, int T,
                                    int C, int NH, int pos0, int maxT) {
    cpu_ctx *c = ctx;
    int hs = C / NH;
    float scale = 1.0f / sqrtf((float)hs);
    size_t C3 = 3 * (size_t)C;
    if (pos0 < 0 || pos0 + T > maxT)
        return fail(c, "attention_forward_kv: positions %d..%d outside the context %d", pos0, pos0 + T - 1, maxT);
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
                attn_row(out + ((size_t)b * T + t) * C + h * hs, a, qkv + ((size_t)b * T + t) * C3 + h * hs, kb, vb, C,
                         pos0 + t + 1, hs, scale);
            }
    return 0;
}

/* ---- the decoding batch: rows of several slots at their own positions ---- */

static int cpu_encoder_forward_at(void *ctx, float *out, const int *inp, const int *pos, const float *wte,
                                  const float *wpe, int N, int C) {
#pragma omp parallel for if (PAR((size_t)N * C))
    for (int i = 0; i < N; i++) {
        const float *we = wte + (size_t)inp[i] * C;
        float *o = out + (size_t)i * C;
        if (!wpe) {
            memcpy(o, we, (size_t)C * sizeof(float));
            continue;
        }
        const float *pe = wpe + (size_t)pos[i] * C;
        for (int c = 0; c < C; c++) o[c] = we[c] + pe[c];
    }
    return 0;
}

/* A prefill's attention: rows of one slot at consecutive positions (a run)
 * at least KV_RUN_MIN long take their queries KV_BQ at a time against the
 * slot's keys, the GQA group's query heads stacked (KV_BQ x group rows
 * sharing one key/value head): a strip of scores from one packed product,
 * its softmax, then one product with the values, as the training
 * attention's strips (strip_forward). Row by row, a query's scores were a
 * dot product per key, K and V read from L2 once per query and head, and
 * libm's expf per score: at a 1024-token prefill of SmolLM2-135M that was
 * more time than all the weight products. Shorter runs (decoding) keep the
 * row path. */
#define KV_RUN_MIN 16
#define KV_BQ 64

/* A block of a run: n rows from row i0 of the call, the first at position p0. */
typedef struct kv_block {
    int i0, n, p0;
} kv_block;

/* The rows of the call in runs: blocks of at most KV_BQ rows of the runs of
 * at least KV_RUN_MIN (into blk, returns their count), the other rows'
 * indices into rest (their count in *nrest). Largest blocks (most keys)
 * first, for the dynamic schedule. */
static int kv_blocks(const int *slot, const int *pos, int N, kv_block *blk, int *rest, int *nrest) {
    int nb = 0, nr = 0;
    for (int i = 0; i < N;) {
        int j = i + 1;
        while (j < N && slot[j] == slot[i] && pos[j] == pos[j - 1] + 1) j++;
        if (j - i >= KV_RUN_MIN)
            for (int b = i; b < j; b += KV_BQ) blk[nb++] = (kv_block){b, j - b < KV_BQ ? j - b : KV_BQ, pos[b]};
        else
            for (int b = i; b < j; b++) rest[nr++] = b;
        i = j;
    }
    /* insertion sort by last position, descending: a few dozen blocks */
    for (int a = 1; a < nb; a++) {
        kv_block x = blk[a];
        int b = a;
        for (; b > 0 && blk[b - 1].p0 + blk[b - 1].n < x.p0 + x.n; b--) blk[b] = blk[b - 1];
        blk[b] = x;
    }
    *nrest = nr;
    return nb;
}

/* One block against key/value head g: Q gathers the group's query heads of
 * the block's rows (row m = r group + head offset), S their scores against
 * keys 0 .. p0 + n - 1, O their outputs, scattered back to out. */
static void kv_block_attend(float *out, const float *qkv, const float *kc, const float *vc, kv_block b, int g,
                            int group, int hs, size_t C, size_t C3, size_t KW, float scale, float *ws) {
    int M = b.n * group, nk = b.p0 + b.n;
    float *Q = ws, *O = Q + (size_t)M * hs, *S = O + (size_t)M * hs;
    for (int r = 0; r < b.n; r++)
        memcpy(Q + (size_t)r * group * hs, qkv + (size_t)(b.i0 + r) * C3 + (size_t)g * group * hs,
               (size_t)group * hs * sizeof(float));
    gemm(0, 1, M, nk, hs, scale, Q, hs, kc, (int)KW, 0.0f, S, nk);
    for (int m = 0; m < M; m++) strip_softmax_row(S + (size_t)m * nk, b.p0 + m / group + 1, nk);
    gemm(0, 0, M, hs, nk, 1.0f, S, nk, vc, (int)KW, 0.0f, O, hs);
    for (int r = 0; r < b.n; r++)
        memcpy(out + (size_t)(b.i0 + r) * C + (size_t)g * group * hs, O + (size_t)r * group * hs,
               (size_t)group * hs * sizeof(float));
}

/* How many keys ahead attend_group asks for the rows it will read: a
 * decoding pass reads every slot's cache once (189 MB a pass for 4 slots
 * of SmolLM2-135M at 1,024 keys), and without the hint the loads stalled
 * (4, 8, 16 and 32 keys tried on one pass of the attention alone: 16-32
 * best, within the shared machine's noise). */
#define ATT_PF 32
#if defined(__GNUC__) || defined(__clang__)
#define PREFETCH(p) __builtin_prefetch(p)
#else
#define PREFETCH(p) ((void)(p))
#endif

/* One decoding row against its slot's nk keys for key/value head g (cpu):
 * the group of query heads that share g (q: group x hs floats, contiguous
 * in the row, as are their outputs o) scored in one pass over the keys and
 * summed in one pass over the values, so a key or value row is read from
 * memory once for the group, not once per query head. A query head at a
 * time through spade_sgemm (a dot product and an hsum per key, then a row
 * times the values through memory), a 4-slot pass of SmolLM2-135M with
 * 1,024 cached keys spent ~70 ms in its attention (BENCHMARKS.md, "The
 * decoding attention at a designer's context"). s: group x nk floats of
 * scratch. The same arithmetic whichever thread or path runs a row. */
SPADE_CLONES static void attend_group(float *o, float *s, const float *q, const float *kc, const float *vc, size_t KW,
                                      int nk, int group, int hs, float scale) {
    int hs16 = hs & ~15;
    for (int j = 0; j < nk; j++) {
        const float *k = kc + (size_t)j * KW;
        if (j + ATT_PF < nk)
            for (int c = 0; c < hs; c += 16) PREFETCH(k + ATT_PF * KW + c);
        for (int m = 0; m < group; m++) {
            const float *qm = q + (size_t)m * hs;
            float acc[16] = {0};
            for (int c = 0; c < hs16; c += 16)
                for (int l = 0; l < 16; l++) acc[l] += qm[c + l] * k[c + l];
            for (int l = 0; l < 8; l++) acc[l] += acc[l + 8];
            for (int l = 0; l < 4; l++) acc[l] += acc[l + 4];
            float d = (acc[0] + acc[2]) + (acc[1] + acc[3]);
            for (int i = hs16; i < hs; i++) d += qm[i] * k[i];
            s[(size_t)m * nk + j] = d * scale;
        }
    }
    for (int m = 0; m < group; m++) (void)strip_softmax_row(s + (size_t)m * nk, nk, nk);
    for (int i = 0; i < group * hs; i++) o[i] = 0.0f;
    /* four values a step: a quarter of the loads and stores of o */
    int j = 0;
    for (; j + 4 <= nk; j += 4) {
        const float *v0 = vc + (size_t)j * KW, *v1 = v0 + KW, *v2 = v1 + KW, *v3 = v2 + KW;
        if (j + ATT_PF + 4 <= nk)
            for (int r = 0; r < 4; r++)
                for (int c = 0; c < hs; c += 16) PREFETCH(v0 + (ATT_PF + r) * KW + c);
        for (int m = 0; m < group; m++) {
            const float *p = s + (size_t)m * nk + j;
            float p0 = p[0], p1 = p[1], p2 = p[2], p3 = p[3], *om = o + (size_t)m * hs;
#pragma omp simd
            for (int i = 0; i < hs; i++) om[i] += (p0 * v0[i] + p1 * v1[i]) + (p2 * v2[i] + p3 * v3[i]);
        }
    }
    for (; j < nk; j++) {
        const float *v = vc + (size_t)j * KW;
        for (int m = 0; m < group; m++) {
            float p = s[(size_t)m * nk + j], *om = o + (size_t)m * hs;
#pragma omp simd
            for (int i = 0; i < hs; i++) om[i] += p * v[i];
        }
    }
}

/* A decoding pass's attention (at most TEAM_ROWS rows) through the team
 * (team.h): items of (row, key/value head), each attend_group as the OpenMP
 * loop runs it, so the same bits whichever thread takes it. Through an
 * OpenMP region a layer, each waited at its barrier for a descheduled
 * thread on a machine busier than its cores: with a 1,024-token context
 * that wait and the attention were most of a 4-slot step (BENCHMARKS.md). */
typedef struct attend_job {
    float *out, *att;
    const float *qkv, *kcache, *vcache;
    const int *slot, *pos;
    int KVH, group, hs;
    size_t C, C3, KW, maxT, per;
    float scale;
} attend_job;

static void attend_item(void *arg, int item, int worker) {
    const attend_job *j = arg;
    int i = item / j->KVH, g = item % j->KVH;
    size_t base = (size_t)j->slot[i] * j->maxT * j->KW + (size_t)g * j->hs, q = (size_t)g * j->group * j->hs;
    attend_group(j->out + (size_t)i * j->C + q, j->att + (size_t)worker * j->per, j->qkv + (size_t)i * j->C3 + q,
                 j->kcache + base, j->vcache + base, j->KW, j->pos[i] + 1, j->group, j->hs, j->scale);
}

/* KVH = NH with the GPT's (N, 3C) rows is attention_forward_kv_at; KVH < NH
 * reads compact (N, C + 2KW) rows (KW = KVH hs) into a cache of KW floats a
 * position, query head h reading key/value head h / (NH / KVH). */
static int kv_at_impl(void *ctx, float *out, const float *qkv, float *kcache, float *vcache, const int *slot,
                      const int *pos, int N, int C, int NH, int KVH, int S, int maxT, int maxlen) {
    cpu_ctx *c = ctx;
    int hs = C / NH, group = NH / KVH;
    size_t KW = (size_t)KVH * hs;
    float scale = 1.0f / sqrtf((float)hs);
    size_t C3 = KVH == NH ? 3 * (size_t)C : C + 2 * KW, work = 0;
    if (maxlen > maxT) return fail(c, "attention_forward_kv_at: maxlen %d > context %d", maxlen, maxT);
    for (int i = 0; i < N; i++) {
        if (slot[i] < 0 || slot[i] >= S || pos[i] < 0 || pos[i] >= maxlen)
            return fail(c, "attention_forward_kv_at: row %d is slot %d position %d, outside %d slots x %d positions", i,
                        slot[i], pos[i], S, maxlen);
        work += (size_t)(pos[i] + 1) * C;
    }
    /* Every row is stored before any is read: a slot's later rows in this
     * call attend its earlier ones. */
    for (int i = 0; i < N; i++) {
        const float *row = qkv + (size_t)i * C3;
        size_t dst = ((size_t)slot[i] * maxT + pos[i]) * KW;
        memcpy(kcache + dst, row + C, KW * sizeof(float));
        memcpy(vcache + dst, row + C + KW, KW * sizeof(float));
    }
    if (c->fast && N <= TEAM_ROWS && PAR(work)) {
        size_t per = ((size_t)group * maxlen + 15) / 16 * 16;
        float *att = scratch(c, (size_t)spade_team_size() * per);
        if (!att) return fail(c, "out of memory for attention scratch");
        attend_job j = {out,   att, qkv,       kcache, vcache, slot,         pos, KVH,
                        group, hs,  (size_t)C, C3,     KW,     (size_t)maxT, per, scale};
        spade_team_run(attend_item, &j, N * KVH);
        return 0;
    }
#ifdef _OPENMP
    int nt = omp_get_max_threads();
#else
    int nt = 1;
#endif
    /* The runs (cpu only: cpu_ref keeps its per-row loops for every row). */
    kv_block *blk = NULL;
    int *rest = NULL, nb = 0, nrest = N;
    if (c->fast && N >= KV_RUN_MIN) {
        blk = malloc((size_t)N * sizeof *blk);
        rest = malloc((size_t)N * sizeof *rest);
        if (!blk || !rest) {
            free(blk);
            free(rest);
            return fail(c, "out of memory for the attention's row list (%d rows)", N);
        }
        nb = kv_blocks(slot, pos, N, blk, rest, &nrest);
    }
    /* One probability row per thread, not per (row, head): a prefill of a
     * long observation would otherwise hold N x NH x maxT floats; a block's
     * strip, its stacked queries and outputs when there are blocks. */
    size_t per =
        nb ? (size_t)KV_BQ * group * (2 * (size_t)hs + (size_t)maxlen) : (size_t)(c->fast ? group : 1) * (size_t)maxlen;
    per = (per + 15) / 16 * 16;
    float *att = scratch(c, (size_t)nt * per);
    if (!att) {
        free(blk);
        free(rest);
        return fail(c, "out of memory for attention scratch");
    }
#pragma omp parallel if (PAR(work))
    {
#ifdef _OPENMP
        float *a = att + (size_t)omp_get_thread_num() * per;
#else
        float *a = att;
#endif
        if (nb) {
#pragma omp for schedule(dynamic, 1) nowait
            for (long t = 0; t < (long)nb * KVH; t++) {
                kv_block b = blk[t / KVH];
                int g = (int)(t % KVH);
                size_t base = (size_t)slot[b.i0] * maxT * KW + (size_t)g * hs;
                kv_block_attend(out, qkv, kcache + base, vcache + base, b, g, group, hs, C, C3, KW, scale, a);
            }
        }
        if (c->fast) {
#pragma omp for collapse(2)
            for (int ri = 0; ri < nrest; ri++)
                for (int g = 0; g < KVH; g++) {
                    int i = rest ? rest[ri] : ri;
                    size_t base = (size_t)slot[i] * maxT * KW + (size_t)g * hs, q = (size_t)g * group * hs;
                    attend_group(out + (size_t)i * C + q, a, qkv + (size_t)i * C3 + q, kcache + base, vcache + base, KW,
                                 pos[i] + 1, group, hs, scale);
                }
        } else {
#pragma omp for collapse(2)
            for (int ri = 0; ri < nrest; ri++)
                for (int h = 0; h < NH; h++) {
                    int i = rest ? rest[ri] : ri;
                    size_t base = (size_t)slot[i] * maxT * KW + (size_t)(h / group) * hs;
                    attn_row(out + (size_t)i * C + h * hs, a, qkv + (size_t)i * C3 + h * hs, kcache + base,
                             vcache + base, KW, pos[i] + 1, hs, scale);
                }
        }
    }
    free(blk);
    free(rest);
    return 0;
}

static int cpu_attention_forward_kv_at(void *ctx, float *out, const float *qkv, float *kcache, float *vcache,
                                       const int *slot, const int *pos, int N, int C, int NH, int S, int maxT,
                                       int maxlen) {
    return kv_at_impl(ctx, out, qkv, kcache, vcache, slot, pos, N, C, NH, NH, S, maxT, maxlen);
}

static int cpu_attention_forward_kv_at_gqa(void *ctx, float *out, const float *qkv, float *kcache, float *vcache,
                                           const int *slot, const int *pos, int N, int C, int NH, int KVH, int S,
                                           int maxT, int maxlen) {
    if (KVH < 1 || NH % KVH)
        return fail(ctx, "attention_forward_kv_at_gqa: %d key/value heads do not divide %d heads", KVH, NH);
    return kv_at_impl(ctx, out, qkv, kcache, vcache, slot, pos, N, C, NH, KVH, S, maxT, maxlen);
}

/* ---- elementwise ---- */

#define GELU_K 0.7978845608028654f /* sqrt(2/pi) */

/* tanh(u) = 1 - 2 / (exp(2u) + 1) with the vectorisable exp: absolute error
 * ~1e-7, which is all GELU's 0.5 x (1 + tanh) can see. */
static inline float spade_tanhf(float u) { return 1.0f - 2.0f / (spade_expf(2.0f * u) + 1.0f); }

SPADE_CLONES static void gelu_fwd_range(float *out, const float *inp, size_t i0, size_t i1) {
#pragma omp simd
    for (size_t i = i0; i < i1; i++) {
        float x = inp[i];
        out[i] = 0.5f * x * (1.0f + spade_tanhf(GELU_K * (x + 0.044715f * x * x * x)));
    }
}

SPADE_CLONES static void gelu_bwd_range(float *dinp, const float *inp, const float *dout, size_t i0, size_t i1) {
#pragma omp simd
    for (size_t i = i0; i < i1; i++) {
        float x = inp[i];
        float u = GELU_K * (x + 0.044715f * x * x * x);
        float th = spade_tanhf(u);
        float sech2 = 1.0f - th * th;
        float g = 0.5f * (1.0f + th) + 0.5f * x * sech2 * GELU_K * (1.0f + 3.0f * 0.044715f * x * x);
        dinp[i] = g * dout[i];
    }
}

static int cpu_gelu_forward(void *ctx, float *out, const float *inp, size_t n) {
#pragma omp parallel if (PAR(n))
    {
        size_t i0, i1;
        split_n(n, &i0, &i1);
        gelu_fwd_range(out, inp, i0, i1);
    }
    return 0;
}

static int cpu_gelu_backward(void *ctx, float *dinp, const float *inp, const float *dout, size_t n) {
#pragma omp parallel if (PAR(n))
    {
        size_t i0, i1;
        split_n(n, &i0, &i1);
        gelu_bwd_range(dinp, inp, dout, i0, i1);
    }
    return 0;
}

static int cpu_axpy(void *ctx, float *y, const float *x, float alpha, size_t n) {
    (void)ctx; /* one thread: a memory-bound pass, and no barrier (see SKINNY) */
#pragma omp simd
    for (size_t i = 0; i < n; i++) y[i] += alpha * x[i];
    return 0;
}

static int cpu_residual_forward(void *ctx, float *out, const float *a, const float *b, size_t n) {
#pragma omp parallel for simd if (PAR(n))
    for (size_t i = 0; i < n; i++) out[i] = a[i] + b[i];
    return 0;
}

/* ---- softmax / cross-entropy ---- */

SPADE_CLONES static void crossentropy_rows(float *probs, float *logp, const float *logits, const int *targets, int r0,
                                           int r1, int V, int Vp) {
    for (int i = r0; i < r1; i++) {
        const float *l = logits + (size_t)i * Vp;
        float *p = probs + (size_t)i * Vp;
        float mx = -INFINITY;
#pragma omp simd reduction(max : mx)
        for (int v = 0; v < V; v++) mx = l[v] > mx ? l[v] : mx;
        float sum = 0.0f;
#pragma omp simd reduction(+ : sum)
        for (int v = 0; v < V; v++) {
            p[v] = spade_expf(l[v] - mx);
            sum += p[v];
        }
        float inv = 1.0f / sum;
#pragma omp simd
        for (int v = 0; v < V; v++) p[v] *= inv;
        for (int v = V; v < Vp; v++) p[v] = 0.0f;
        int t = targets[i];
        logp[i] = t >= 0 ? l[t] - mx - logf(sum) : 0.0f;
    }
}

static int cpu_crossentropy_forward(void *ctx, float *probs, float *logp, const float *logits, const int *targets,
                                    int N, int V, int Vp) {
#pragma omp parallel if (PAR((size_t)N * Vp))
    {
        int r0, r1;
        split(N, &r0, &r1);
        crossentropy_rows(probs, logp, logits, targets, r0, r1, V, Vp);
    }
    return 0;
}

static int cpu_crossentropy_backward(void *ctx, float *dlogits, const float *probs, const int *targets,
                                     const float *dlogp, int N, int V, int Vp) {
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
#pragma omp simd
        for (int v = 0; v < V; v++) d[v] = -w * p[v];
        d[t] += w;
        for (int v = V; v < Vp; v++) d[v] = 0.0f;
    }
    return 0;
}

/* ---- optimizer ---- */

SPADE_CLONES static void adamw_range(float *params, const float *grads, float *m, float *v, size_t i0, size_t i1,
                                     float lr, float beta1, float beta2, float eps, float wd, float grad_scale,
                                     float c1, float c2) {
#pragma omp simd
    for (size_t i = i0; i < i1; i++) {
        float g = grads[i] * grad_scale;
        float mi = beta1 * m[i] + (1.0f - beta1) * g;
        float vi = beta2 * v[i] + (1.0f - beta2) * g * g;
        m[i] = mi;
        v[i] = vi;
        float mh = mi / c1, vh = vi / c2;
        params[i] -= lr * (mh / (sqrtf(vh) + eps) + wd * params[i]);
    }
}

static int cpu_adamw(void *ctx, float *params, const float *grads, float *m, float *v, size_t n, float lr, float beta1,
                     float beta2, float eps, float wd, float grad_scale, int t) {
    float c1 = 1.0f - powf(beta1, (float)t), c2 = 1.0f - powf(beta2, (float)t);
#pragma omp parallel if (PAR(n))
    {
        size_t i0, i1;
        split_n(n, &i0, &i1);
        adamw_range(params, grads, m, v, i0, i1, lr, beta1, beta2, eps, wd, grad_scale, c1, c2);
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

/* ---- the Llama family: RMSNorm, rotary positions, SwiGLU, grouped KV heads ---- */

SPADE_CLONES static void rmsnorm_rows(float *out, float *rstd, const float *inp, const float *w, int r0, int r1, int C,
                                      float eps) {
    for (int i = r0; i < r1; i++) {
        const float *x = inp + (size_t)i * C;
        float v = 0.0f;
#pragma omp simd reduction(+ : v)
        for (int c = 0; c < C; c++) v += x[c] * x[c];
        float s = 1.0f / sqrtf(v / C + eps);
        float *o = out + (size_t)i * C;
#pragma omp simd
        for (int c = 0; c < C; c++) o[c] = x[c] * s * w[c];
        if (rstd) rstd[i] = s;
    }
}

static int cpu_rmsnorm_forward(void *ctx, float *out, float *rstd, const float *inp, const float *w, int N, int C,
                               float eps) {
#pragma omp parallel if (PAR((size_t)N * C))
    {
        int r0, r1;
        split(N, &r0, &r1);
        rmsnorm_rows(out, rstd, inp, w, r0, r1, C, eps);
    }
    return 0;
}

SPADE_CLONES static void rmsnorm_back_rows(float *dinp, const float *dout, const float *inp, const float *w,
                                           const float *rstd, int r0, int r1, int C) {
    for (int i = r0; i < r1; i++) {
        const float *x = inp + (size_t)i * C, *dy = dout + (size_t)i * C;
        float s = rstd[i], dnx_mean = 0.0f;
#pragma omp simd reduction(+ : dnx_mean)
        for (int c = 0; c < C; c++) dnx_mean += w[c] * dy[c] * x[c] * s;
        dnx_mean /= C;
        float *dx = dinp + (size_t)i * C;
#pragma omp simd
        for (int c = 0; c < C; c++) dx[c] += s * (w[c] * dy[c] - x[c] * s * dnx_mean);
    }
}
SPADE_CLONES static void rmsnorm_back_cols(float *dweight, const float *dout, const float *inp, const float *rstd,
                                           int N, int C, int c0, int c1) {
    for (int i = 0; i < N; i++) {
        const float *x = inp + (size_t)i * C, *dy = dout + (size_t)i * C;
        float s = rstd[i];
#pragma omp simd
        for (int c = c0; c < c1; c++) dweight[c] += x[c] * s * dy[c];
    }
}

static int cpu_rmsnorm_backward(void *ctx, float *dinp, float *dweight, const float *dout, const float *inp,
                                const float *w, const float *rstd, int N, int C) {
#pragma omp parallel if (PAR((size_t)N * C))
    {
        int r0, r1, c0, c1;
        split(N, &r0, &r1);
        split(C, &c0, &c1);
        rmsnorm_back_rows(dinp, dout, inp, w, rstd, r0, r1, C);
        if (dweight) rmsnorm_back_cols(dweight, dout, inp, rstd, N, C, c0, c1);
    }
    return 0;
}

/* The angles are formed in double from the position and the pair index
 * alone, so a row at position p rotates the same whichever pass (a full
 * forward, a prefill, one decode step) it is in. */
static int cpu_rope(void *ctx, float *x, const int *pos, int N, int T, int stride, int nheads, int hs, int rot,
                    float base, int neox, int inverse) {
    int half = rot / 2;
    double lb = log((double)base);
#pragma omp parallel for if (PAR((size_t)N * nheads * rot))
    for (int i = 0; i < N; i++) {
        double p = pos ? pos[i] : i % T;
        float *row = x + (size_t)i * stride;
        for (int j = 0; j < half; j++) {
            double th = p * exp(-2.0 * j / rot * lb);
            float c = (float)cos(th), sn = (float)(inverse ? -sin(th) : sin(th));
            int a = neox ? j : 2 * j, b = neox ? j + half : 2 * j + 1;
            for (int h = 0; h < nheads; h++) {
                float *v = row + (size_t)h * hs;
                float x0 = v[a], x1 = v[b];
                v[a] = x0 * c - x1 * sn;
                v[b] = x0 * sn + x1 * c;
            }
        }
    }
    return 0;
}

static inline float silu_sig(float g) { return 1.0f / (1.0f + spade_expf(-g)); }

SPADE_CLONES static void swiglu_fwd_rows(float *out, const float *inp, int r0, int r1, int F) {
    for (int i = r0; i < r1; i++) {
        const float *g = inp + (size_t)i * 2 * F, *u = g + F;
        float *o = out + (size_t)i * F;
#pragma omp simd
        for (int j = 0; j < F; j++) o[j] = g[j] * silu_sig(g[j]) * u[j];
    }
}
SPADE_CLONES static void swiglu_bwd_rows(float *dinp, const float *inp, const float *dout, int r0, int r1, int F) {
    for (int i = r0; i < r1; i++) {
        const float *g = inp + (size_t)i * 2 * F, *u = g + F, *dy = dout + (size_t)i * F;
        float *dg = dinp + (size_t)i * 2 * F, *du = dg + F;
#pragma omp simd
        for (int j = 0; j < F; j++) {
            float sg = silu_sig(g[j]);
            dg[j] = dy[j] * u[j] * sg * (1.0f + g[j] * (1.0f - sg));
            du[j] = dy[j] * g[j] * sg;
        }
    }
}

static int cpu_swiglu_forward(void *ctx, float *out, const float *inp, int N, int F) {
#pragma omp parallel if (PAR((size_t)N * F))
    {
        int r0, r1;
        split(N, &r0, &r1);
        swiglu_fwd_rows(out, inp, r0, r1, F);
    }
    return 0;
}
static int cpu_swiglu_backward(void *ctx, float *dinp, const float *inp, const float *dout, int N, int F) {
#pragma omp parallel if (PAR((size_t)N * F))
    {
        int r0, r1;
        split(N, &r0, &r1);
        swiglu_bwd_rows(dinp, inp, dout, r0, r1, F);
    }
    return 0;
}

static int cpu_kv_expand(void *ctx, float *out, const float *inp, int N, int NH, int KVH, int hs) {
    size_t C = (size_t)NH * hs, KV = (size_t)KVH * hs, W = C + 2 * KV;
    int g = NH / KVH;
#pragma omp parallel for if (PAR((size_t)N * 3 * C))
    for (int i = 0; i < N; i++) {
        const float *in = inp + (size_t)i * W;
        float *o = out + (size_t)i * 3 * C;
        memcpy(o, in, C * sizeof(float));
        for (int h = 0; h < NH; h++) {
            memcpy(o + C + (size_t)h * hs, in + C + (size_t)(h / g) * hs, (size_t)hs * sizeof(float));
            memcpy(o + 2 * C + (size_t)h * hs, in + C + KV + (size_t)(h / g) * hs, (size_t)hs * sizeof(float));
        }
    }
    return 0;
}

static int cpu_kv_reduce(void *ctx, float *dinp, const float *dout, int N, int NH, int KVH, int hs) {
    size_t C = (size_t)NH * hs, KV = (size_t)KVH * hs, W = C + 2 * KV;
    int g = NH / KVH;
#pragma omp parallel for if (PAR((size_t)N * 3 * C))
    for (int i = 0; i < N; i++) {
        const float *d = dout + (size_t)i * 3 * C;
        float *o = dinp + (size_t)i * W;
        memcpy(o, d, C * sizeof(float));
        memset(o + C, 0, 2 * KV * sizeof(float));
        for (int h = 0; h < NH; h++) {
            float *dk = o + C + (size_t)(h / g) * hs, *dv = o + C + KV + (size_t)(h / g) * hs;
            const float *sk = d + C + (size_t)h * hs, *sv = d + 2 * C + (size_t)h * hs;
            for (int e = 0; e < hs; e++) {
                dk[e] += sk[e];
                dv[e] += sv[e];
            }
        }
    }
    return 0;
}

/* ---- the head's rows (backend.h: rows_gather, rows_scatter): copies, no arithmetic ---- */

static int cpu_rows_gather(void *ctx, float *out, const float *inp, const int *idx, int n, int C) {
#pragma omp parallel for if (PAR((size_t)n * C))
    for (int i = 0; i < n; i++) memcpy(out + (size_t)i * C, inp + (size_t)idx[i] * C, (size_t)C * sizeof(float));
    return 0;
}

static int cpu_rows_scatter(void *ctx, float *out, const float *inp, const int *idx, int n, int C) {
#pragma omp parallel for if (PAR((size_t)n * C))
    for (int i = 0; i < n; i++) memcpy(out + (size_t)idx[i] * C, inp + (size_t)i * C, (size_t)C * sizeof(float));
    return 0;
}

#define CPU_VTABLE(NAME, PROBS)                                                                                        \
    {                                                                                                                  \
        NAME, cpu_free, cpu_last_error, cpu_alloc, cpu_dealloc, cpu_memcpy, cpu_memcpy, cpu_memcpy, cpu_zero,          \
            cpu_sync, cpu_encoder_forward, cpu_encoder_backward, cpu_layernorm_forward, cpu_layernorm_backward,        \
            cpu_matmul_forward, cpu_matmul_backward, cpu_attention_forward, cpu_attention_backward,                    \
            cpu_attention_forward_kv, cpu_gelu_forward, cpu_gelu_backward, cpu_residual_forward,                       \
            cpu_crossentropy_forward, cpu_crossentropy_backward, cpu_adamw, cpu_sumsq, cpu_encoder_forward_at,         \
            cpu_attention_forward_kv_at, cpu_rmsnorm_forward, cpu_rmsnorm_backward, cpu_rope, cpu_swiglu_forward,      \
            cpu_swiglu_backward, cpu_kv_expand, cpu_kv_reduce, cpu_attention_forward_kv_at_gqa, PROBS, cpu_axpy,       \
            cpu_rows_gather, cpu_rows_scatter                                                                          \
    }

static const spade_backend_vtable cpu_ref_vt = CPU_VTABLE("cpu_ref", 1);
static const spade_backend_vtable cpu_vt = CPU_VTABLE("cpu", 0);
static const spade_backend_vtable cpu_tt_vt = CPU_VTABLE("cpu_tt", 1);

static int cpu_new(spade_backend *be, int fast, char *err, size_t errlen) {
    cpu_ctx *c = calloc(1, sizeof *c);
    if (!c) {
        spade_errf(err, errlen, "out of memory creating the CPU backend");
        return SPADE_POLICY_ENOMEM;
    }
    c->fast = fast;
#if defined(SPADE_HAVE_CBLAS) && defined(OPENBLAS_VERSION) && defined(_OPENMP)
    /* One thread pool, not two: OpenMP owns the cores. The GEMMs are
     * spade's, but a cblas call elsewhere in the process (the bench's
     * OpenBLAS comparison) from inside an OpenMP region must not start
     * OpenBLAS's threads to fight OpenMP's spinning ones (6x slower on 2
     * cores). Process-wide, and deliberate. */
    if (fast) openblas_set_num_threads(1);
#endif
    be->vt = fast == 2 ? &cpu_tt_vt : fast ? &cpu_vt : &cpu_ref_vt;
    be->ctx = c;
    return 0;
}

int spade_backend_cpu_ref_new(spade_backend *be, char *err, size_t errlen) { return cpu_new(be, 0, err, errlen); }
int spade_backend_cpu_new(spade_backend *be, char *err, size_t errlen) { return cpu_new(be, 1, err, errlen); }
int spade_backend_cpu_tt_new(spade_backend *be, char *err, size_t errlen) { return cpu_new(be, 2, err, errlen); }

/* The backend note's GEMM part: spade's kernel, which no variable changes
 * (OPENBLAS_CORETYPE does not matter to the cpu backend). */
void spade_backend_cpu_blas_note(char *buf, size_t len) {
    snprintf(buf, len, "spade %s GEMMs", spade_gemm_kernel_name(spade_gemm_kernel()));
}
