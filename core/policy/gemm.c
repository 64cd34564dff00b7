/* gemm.c — spade's own SGEMM for the cpu backend (see gemm.h).
 *
 * What it is: the BLIS loop nest. B is packed a KC x NC block at a time into
 * micro-panels of NR columns, A an MC x KC block at a time into micro-panels
 * of MR rows, and a micro-kernel multiplies one A micro-panel by one B
 * micro-panel into an MR x NR tile of C held in registers. The packing pads
 * edges with zeros, so one micro-kernel serves every shape and transpose;
 * an edge tile is written through a small buffer. Kernels:
 *   avx512  8 x 32 tile, 16 zmm accumulators (AVX-512F)
 *   avx2    6 x 16 tile, 12 ymm accumulators (AVX2 + FMA)
 *   c       4 x 16 tile in plain C (what the compiler makes of it)
 * The ISA code is compiled with target attributes, so the objects build with
 * the project's flags and run on any x86-64; the kernel is chosen once from
 * __builtin_cpu_supports. Products of a few rows against a transposed B
 * (the decoding path: activations times a weight matrix stored row per
 * output) skip packing: each output is a dot product of two contiguous rows.
 * What it is not: threaded (the caller's OpenMP team splits the product), or
 * tuned beyond one block size for all kernels.
 */
#include "policy/gemm.h"

#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define GEMM_X86 1
#include <immintrin.h>
#endif
#ifdef SPADE_HAVE_CBLAS
#include <cblas.h>
#endif

/* K per packed block: an avx512 B micro-panel (KC x 32 floats, 32 KiB) stays
 * in a 48 KiB L1 while the A block streams past it. */
#define KC 256
/* Rows of A per packed block (128 KiB at KC: fits a 1 MiB L2 beside B's panel). */
#define MC_ROWS 128
/* Columns of B per packed block (2 MiB at KC: the shared L3). */
#define NC 2048
/* The largest micro-kernel tile (avx512's), for edge tiles. */
#define TILE_MAX (8 * 32)
/* At most this many rows of A with a transposed B run as dot products (one
 * and two rows: packing the whole B for them cost more than the product;
 * four already ran faster packed). */
#define DOT_MAX_M 2

typedef void (*ukr_fn)(int kc, const float *a, const float *b, float *c, long ldc, float alpha, float beta);
typedef void (*dot_fn)(int M, int N, int K, float alpha, const float *A, int lda, const float *B, int ldb, float beta,
                       float *C, int ldc);

typedef void (*vecmat_fn)(int N, int K, float alpha, const float *a, const float *B, int ldb, float *c);

typedef struct kernel {
    const char *name;
    int mr, nr;
    ukr_fn ukr;
    dot_fn dot;
    vecmat_fn vecmat;
} kernel;

/* One row times B (K x N, not transposed), added into c (already scaled by
 * beta): c += alpha a B, row k of B at a time over column chunks that stay
 * in L1. The same loop for every kernel, vectorised for its ISA (C11 mode:
 * no FMA contraction, so every kernel gives the same bits here). */
#define VECMAT_CHUNK 512
#define VECMAT_BODY                                                                                                    \
    for (int j0 = 0; j0 < N; j0 += VECMAT_CHUNK) {                                                                     \
        int n = N - j0 < VECMAT_CHUNK ? N - j0 : VECMAT_CHUNK;                                                         \
        float *restrict o = c + j0;                                                                                    \
        for (int k = 0; k < K; k++) {                                                                                  \
            const float *restrict b = B + (size_t)k * ldb + j0;                                                        \
            float x = alpha * a[k];                                                                                    \
            _Pragma("omp simd") for (int j = 0; j < n; j++) o[j] += x * b[j];                                          \
        }                                                                                                              \
    }

/* ---- the reference loop: edges of nothing, the out-of-memory fallback ---- */

static inline float at(int t, const float *X, int ld, int r, int c) {
    return t ? X[(size_t)c * ld + r] : X[(size_t)r * ld + c];
}

static void gemm_loops(int ta, int tb, int M, int N, int K, float alpha, const float *A, int lda, const float *B,
                       int ldb, float beta, float *C, int ldc) {
    for (int i = 0; i < M; i++)
        for (int j = 0; j < N; j++) {
            float s = 0.0f;
            for (int k = 0; k < K; k++) s += at(ta, A, lda, i, k) * at(tb, B, ldb, k, j);
            float *c = C + (size_t)i * ldc + j;
            *c = alpha * s + (beta == 0.0f ? 0.0f : beta * *c);
        }
}

/* ---- portable C kernels ---- */

#define C_MR 4
#define C_NR 16
static void ukr_c(int kc, const float *a, const float *b, float *c, long ldc, float alpha, float beta) {
    float acc[C_MR][C_NR] = {{0}};
    for (int k = 0; k < kc; k++, a += C_MR, b += C_NR)
        for (int i = 0; i < C_MR; i++)
            for (int j = 0; j < C_NR; j++) acc[i][j] += a[i] * b[j];
    for (int i = 0; i < C_MR; i++)
        for (int j = 0; j < C_NR; j++) {
            float *o = c + i * ldc + j;
            *o = beta == 0.0f ? alpha * acc[i][j] : alpha * acc[i][j] + beta * *o;
        }
}

static void vecmat_c(int N, int K, float alpha, const float *a, const float *B, int ldb, float *c) { VECMAT_BODY }

static void dot_c(int M, int N, int K, float alpha, const float *A, int lda, const float *B, int ldb, float beta,
                  float *C, int ldc) {
    for (int i = 0; i < M; i++)
        for (int j = 0; j < N; j++) {
            const float *x = A + (size_t)i * lda, *w = B + (size_t)j * ldb;
            float s0 = 0.0f, s1 = 0.0f, s2 = 0.0f, s3 = 0.0f;
            int k = 0;
            for (; k + 4 <= K; k += 4) {
                s0 += x[k] * w[k];
                s1 += x[k + 1] * w[k + 1];
                s2 += x[k + 2] * w[k + 2];
                s3 += x[k + 3] * w[k + 3];
            }
            for (; k < K; k++) s0 += x[k] * w[k];
            float s = (s0 + s1) + (s2 + s3), *o = C + (size_t)i * ldc + j;
            *o = beta == 0.0f ? alpha * s : alpha * s + beta * *o;
        }
}

#ifdef GEMM_X86
/* ---- AVX2 + FMA ---- */

#define A2_MR 6
#define A2_NR 16
__attribute__((target("avx2,fma"))) static void ukr_avx2(int kc, const float *a, const float *b, float *c, long ldc,
                                                         float alpha, float beta) {
    __m256 c00 = _mm256_setzero_ps(), c01 = c00, c10 = c00, c11 = c00, c20 = c00, c21 = c00;
    __m256 c30 = c00, c31 = c00, c40 = c00, c41 = c00, c50 = c00, c51 = c00;
    for (int k = 0; k < kc; k++, a += A2_MR, b += A2_NR) {
        __m256 b0 = _mm256_load_ps(b), b1 = _mm256_load_ps(b + 8), x;
        x = _mm256_broadcast_ss(a + 0);
        c00 = _mm256_fmadd_ps(x, b0, c00);
        c01 = _mm256_fmadd_ps(x, b1, c01);
        x = _mm256_broadcast_ss(a + 1);
        c10 = _mm256_fmadd_ps(x, b0, c10);
        c11 = _mm256_fmadd_ps(x, b1, c11);
        x = _mm256_broadcast_ss(a + 2);
        c20 = _mm256_fmadd_ps(x, b0, c20);
        c21 = _mm256_fmadd_ps(x, b1, c21);
        x = _mm256_broadcast_ss(a + 3);
        c30 = _mm256_fmadd_ps(x, b0, c30);
        c31 = _mm256_fmadd_ps(x, b1, c31);
        x = _mm256_broadcast_ss(a + 4);
        c40 = _mm256_fmadd_ps(x, b0, c40);
        c41 = _mm256_fmadd_ps(x, b1, c41);
        x = _mm256_broadcast_ss(a + 5);
        c50 = _mm256_fmadd_ps(x, b0, c50);
        c51 = _mm256_fmadd_ps(x, b1, c51);
    }
    __m256 acc[A2_MR][2] = {{c00, c01}, {c10, c11}, {c20, c21}, {c30, c31}, {c40, c41}, {c50, c51}};
    __m256 va = _mm256_set1_ps(alpha), vb = _mm256_set1_ps(beta);
    for (int i = 0; i < A2_MR; i++)
        for (int h = 0; h < 2; h++) {
            float *o = c + i * ldc + 8 * h;
            __m256 r = _mm256_mul_ps(va, acc[i][h]);
            if (beta != 0.0f) r = _mm256_fmadd_ps(vb, _mm256_loadu_ps(o), r);
            _mm256_storeu_ps(o, r);
        }
}

__attribute__((target("avx2,fma"))) static void vecmat_avx2(int N, int K, float alpha, const float *a, const float *B,
                                                            int ldb, float *c) {
    VECMAT_BODY
}

__attribute__((target("avx2,fma"))) static inline float hsum256(__m256 v) {
    __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    s = _mm_add_ps(s, _mm_movehl_ps(s, s));
    s = _mm_add_ss(s, _mm_movehdup_ps(s));
    return _mm_cvtss_f32(s);
}

/* nr (1 or 2, a constant at each call) rows of A from i0 against four rows
 * of B at a time: up to eight accumulators. Missing B rows read a real one
 * and are not stored. */
__attribute__((target("avx2,fma"), always_inline)) static inline void dot256_rows(int nr, int i0, int N, int K,
                                                                                  float alpha, const float *A, int lda,
                                                                                  const float *B, int ldb, float beta,
                                                                                  float *C, int ldc) {
    int K8 = K & ~7;
    const float *x[2];
    for (int r = 0; r < nr; r++) x[r] = A + (size_t)(i0 + r) * lda;
    for (int j0 = 0; j0 < N; j0 += 4) {
        const float *w[4];
        for (int q = 0; q < 4; q++) w[q] = B + (size_t)(j0 + q < N ? j0 + q : j0) * ldb;
        __m256 s[2][4];
        for (int r = 0; r < nr; r++)
            for (int q = 0; q < 4; q++) s[r][q] = _mm256_setzero_ps();
        for (int k = 0; k < K8; k += 8) {
            __m256 w0 = _mm256_loadu_ps(w[0] + k), w1 = _mm256_loadu_ps(w[1] + k);
            __m256 w2 = _mm256_loadu_ps(w[2] + k), w3 = _mm256_loadu_ps(w[3] + k);
            for (int r = 0; r < nr; r++) {
                __m256 xv = _mm256_loadu_ps(x[r] + k);
                s[r][0] = _mm256_fmadd_ps(xv, w0, s[r][0]);
                s[r][1] = _mm256_fmadd_ps(xv, w1, s[r][1]);
                s[r][2] = _mm256_fmadd_ps(xv, w2, s[r][2]);
                s[r][3] = _mm256_fmadd_ps(xv, w3, s[r][3]);
            }
        }
        for (int r = 0; r < nr; r++)
            for (int q = 0; q < 4 && j0 + q < N; q++) {
                float t = hsum256(s[r][q]);
                for (int k = K8; k < K; k++) t += x[r][k] * w[q][k];
                float *o = C + (size_t)(i0 + r) * ldc + j0 + q;
                *o = beta == 0.0f ? alpha * t : alpha * t + beta * *o;
            }
    }
}

__attribute__((target("avx2,fma"))) static void dot_avx2(int M, int N, int K, float alpha, const float *A, int lda,
                                                         const float *B, int ldb, float beta, float *C, int ldc) {
    int i0 = 0;
    for (; i0 + 2 <= M; i0 += 2) dot256_rows(2, i0, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
    for (; i0 < M; i0++) dot256_rows(1, i0, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
}

/* ---- AVX-512F ---- */

#define A5_MR 8
#define A5_NR 32
__attribute__((target("avx512f"))) static void ukr_avx512(int kc, const float *a, const float *b, float *c, long ldc,
                                                          float alpha, float beta) {
    __m512 c00 = _mm512_setzero_ps(), c01 = c00, c10 = c00, c11 = c00, c20 = c00, c21 = c00, c30 = c00, c31 = c00;
    __m512 c40 = c00, c41 = c00, c50 = c00, c51 = c00, c60 = c00, c61 = c00, c70 = c00, c71 = c00;
    /* the tile of C this call ends by reading and writing: asked for now, so
     * that its lines (in L3 or memory, at the prefill's sizes) arrive while
     * the k loop runs instead of stalling the stores after it */
    for (int i = 0; i < A5_MR; i++) {
        _mm_prefetch((const char *)(c + i * ldc), _MM_HINT_T0);
        _mm_prefetch((const char *)(c + i * ldc + 16), _MM_HINT_T0);
    }
    for (int k = 0; k < kc; k++, a += A5_MR, b += A5_NR) {
        __m512 b0 = _mm512_load_ps(b), b1 = _mm512_load_ps(b + 16), x;
#define ROW5(i)                                                                                                        \
    x = _mm512_set1_ps(a[i]);                                                                                          \
    c##i##0 = _mm512_fmadd_ps(x, b0, c##i##0);                                                                         \
    c##i##1 = _mm512_fmadd_ps(x, b1, c##i##1);
        ROW5(0) ROW5(1) ROW5(2) ROW5(3) ROW5(4) ROW5(5) ROW5(6) ROW5(7)
#undef ROW5
    }
    __m512 acc[A5_MR][2] = {{c00, c01}, {c10, c11}, {c20, c21}, {c30, c31},
                            {c40, c41}, {c50, c51}, {c60, c61}, {c70, c71}};
    __m512 va = _mm512_set1_ps(alpha), vb = _mm512_set1_ps(beta);
    for (int i = 0; i < A5_MR; i++)
        for (int h = 0; h < 2; h++) {
            float *o = c + i * ldc + 16 * h;
            __m512 r = _mm512_mul_ps(va, acc[i][h]);
            if (beta != 0.0f) r = _mm512_fmadd_ps(vb, _mm512_loadu_ps(o), r);
            _mm512_storeu_ps(o, r);
        }
}

__attribute__((target("avx512f"))) static void vecmat_avx512(int N, int K, float alpha, const float *a, const float *B,
                                                             int ldb, float *c) {
    VECMAT_BODY
}

/* nr (1, 2 or 4: a constant at each call, so the loops unroll) rows of A
 * from i0 against four rows of B at a time: up to sixteen accumulators, the
 * K tail through a masked load (no scalar loop). Missing B rows read a real
 * one and are not stored. */
__attribute__((target("avx512f"), always_inline)) static inline void dot512_rows(int nr, int i0, int N, int K,
                                                                                 float alpha, const float *A, int lda,
                                                                                 const float *B, int ldb, float beta,
                                                                                 float *C, int ldc) {
    int K16 = K & ~15;
    __mmask16 tail = (__mmask16)((1u << (K - K16)) - 1u);
    const float *x[4];
    for (int r = 0; r < nr; r++) x[r] = A + (size_t)(i0 + r) * lda;
    for (int j0 = 0; j0 < N; j0 += 4) {
        const float *w[4];
        for (int q = 0; q < 4; q++) w[q] = B + (size_t)(j0 + q < N ? j0 + q : j0) * ldb;
        __m512 s[4][4];
        for (int r = 0; r < nr; r++)
            for (int q = 0; q < 4; q++) s[r][q] = _mm512_setzero_ps();
        for (int k = 0; k <= K16; k += 16) {
            __mmask16 m = k < K16 ? (__mmask16)0xffff : tail;
            if (!m) break;
            __m512 wv[4];
            for (int q = 0; q < 4; q++) wv[q] = _mm512_maskz_loadu_ps(m, w[q] + k);
            for (int r = 0; r < nr; r++) {
                __m512 xv = _mm512_maskz_loadu_ps(m, x[r] + k);
                for (int q = 0; q < 4; q++) s[r][q] = _mm512_fmadd_ps(xv, wv[q], s[r][q]);
            }
        }
        for (int r = 0; r < nr; r++)
            for (int q = 0; q < 4 && j0 + q < N; q++) {
                float t = _mm512_reduce_add_ps(s[r][q]), *o = C + (size_t)(i0 + r) * ldc + j0 + q;
                *o = beta == 0.0f ? alpha * t : alpha * t + beta * *o;
            }
    }
}

__attribute__((target("avx512f"))) static void dot_avx512(int M, int N, int K, float alpha, const float *A, int lda,
                                                          const float *B, int ldb, float beta, float *C, int ldc) {
    int i0 = 0;
    for (; i0 + 4 <= M; i0 += 4) dot512_rows(4, i0, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
    for (; i0 + 2 <= M; i0 += 2) dot512_rows(2, i0, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
    for (; i0 < M; i0++) dot512_rows(1, i0, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
}
#endif

/* Indexed by SPADE_GEMM_*; a kernel this build lacks has no ukr. */
static const kernel kernels[] = {
    {"c", C_MR, C_NR, ukr_c, dot_c, vecmat_c},
#ifdef GEMM_X86
    {"avx2", A2_MR, A2_NR, ukr_avx2, dot_avx2, vecmat_avx2},
    {"avx512", A5_MR, A5_NR, ukr_avx512, dot_avx512, vecmat_avx512},
#else
    {"avx2", 0, 0, NULL, NULL, NULL},
    {"avx512", 0, 0, NULL, NULL, NULL},
#endif
    {"openblas", 0, 0, NULL, NULL, NULL},
};
#define NKERNELS ((int)(sizeof kernels / sizeof kernels[0]))

/* ---- choosing one ---- */

int spade_gemm_supported(int k) {
    if (k == SPADE_GEMM_C) return 1;
    if (k == SPADE_GEMM_OPENBLAS) {
#ifdef SPADE_HAVE_CBLAS
        return 1;
#else
        return 0;
#endif
    }
    if (k < 0 || k >= NKERNELS || !kernels[k].ukr) return 0;
#ifdef GEMM_X86
    __builtin_cpu_init();
    if (k == SPADE_GEMM_AVX2) return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
    if (k == SPADE_GEMM_AVX512) return __builtin_cpu_supports("avx512f");
#endif
    return 0;
}

static atomic_int chosen = -1;

static int best_kernel(void) {
    for (int k = SPADE_GEMM_AVX512; k > SPADE_GEMM_C; k--)
        if (spade_gemm_supported(k)) return k;
    return SPADE_GEMM_C;
}

int spade_gemm_kernel(void) {
    int k = atomic_load_explicit(&chosen, memory_order_relaxed);
    if (k < 0) {
        k = best_kernel();
        atomic_store_explicit(&chosen, k, memory_order_relaxed);
    }
    return k;
}

const char *spade_gemm_kernel_name(int k) { return k >= 0 && k < NKERNELS ? kernels[k].name : "?"; }

int spade_gemm_force(int k) {
    if (k < 0)
        k = best_kernel();
    else if (!spade_gemm_supported(k))
        return -1;
    atomic_store_explicit(&chosen, k, memory_order_relaxed);
    return 0;
}

/* ---- packing ---- */

#ifdef GEMM_X86
/* dst[c * ldd + r] = src[r * lds + c] for an 8 x 8 block: the transposing
 * half of packing (rows of A, or rows of a transposed B, become k-major),
 * eight loads and eight stores instead of 64 scalar moves. */
__attribute__((target("avx2"))) static void tr8x8(const float *src, long lds, float *dst, long ldd) {
    __m256 r0 = _mm256_loadu_ps(src), r1 = _mm256_loadu_ps(src + lds), r2 = _mm256_loadu_ps(src + 2 * lds);
    __m256 r3 = _mm256_loadu_ps(src + 3 * lds), r4 = _mm256_loadu_ps(src + 4 * lds);
    __m256 r5 = _mm256_loadu_ps(src + 5 * lds), r6 = _mm256_loadu_ps(src + 6 * lds);
    __m256 r7 = _mm256_loadu_ps(src + 7 * lds);
    __m256 t0 = _mm256_unpacklo_ps(r0, r1), t1 = _mm256_unpackhi_ps(r0, r1), t2 = _mm256_unpacklo_ps(r2, r3);
    __m256 t3 = _mm256_unpackhi_ps(r2, r3), t4 = _mm256_unpacklo_ps(r4, r5), t5 = _mm256_unpackhi_ps(r4, r5);
    __m256 t6 = _mm256_unpacklo_ps(r6, r7), t7 = _mm256_unpackhi_ps(r6, r7);
    __m256 s0 = _mm256_shuffle_ps(t0, t2, _MM_SHUFFLE(1, 0, 1, 0)),
           s1 = _mm256_shuffle_ps(t0, t2, _MM_SHUFFLE(3, 2, 3, 2));
    __m256 s2 = _mm256_shuffle_ps(t1, t3, _MM_SHUFFLE(1, 0, 1, 0)),
           s3 = _mm256_shuffle_ps(t1, t3, _MM_SHUFFLE(3, 2, 3, 2));
    __m256 s4 = _mm256_shuffle_ps(t4, t6, _MM_SHUFFLE(1, 0, 1, 0)),
           s5 = _mm256_shuffle_ps(t4, t6, _MM_SHUFFLE(3, 2, 3, 2));
    __m256 s6 = _mm256_shuffle_ps(t5, t7, _MM_SHUFFLE(1, 0, 1, 0)),
           s7 = _mm256_shuffle_ps(t5, t7, _MM_SHUFFLE(3, 2, 3, 2));
    _mm256_storeu_ps(dst, _mm256_permute2f128_ps(s0, s4, 0x20));
    _mm256_storeu_ps(dst + ldd, _mm256_permute2f128_ps(s1, s5, 0x20));
    _mm256_storeu_ps(dst + 2 * ldd, _mm256_permute2f128_ps(s2, s6, 0x20));
    _mm256_storeu_ps(dst + 3 * ldd, _mm256_permute2f128_ps(s3, s7, 0x20));
    _mm256_storeu_ps(dst + 4 * ldd, _mm256_permute2f128_ps(s0, s4, 0x31));
    _mm256_storeu_ps(dst + 5 * ldd, _mm256_permute2f128_ps(s1, s5, 0x31));
    _mm256_storeu_ps(dst + 6 * ldd, _mm256_permute2f128_ps(s2, s6, 0x31));
    _mm256_storeu_ps(dst + 7 * ldd, _mm256_permute2f128_ps(s3, s7, 0x31));
}
#endif

/* dst[k * w + r] = rows[r][k] for r < n (n <= w rows, row r at src + r *
 * lds), k < kc; rows n..w-1 are zeros. By 8 x 8 blocks when the kernel
 * is an x86 one (vec) and eight whole rows are there. */
static void pack_rows(const float *src, long lds, int n, int kc, int w, float *dst, int vec) {
    int r0 = 0;
#ifdef GEMM_X86
    if (vec)
        for (; r0 + 8 <= n; r0 += 8) {
            int k = 0;
            for (; k + 8 <= kc; k += 8) tr8x8(src + (size_t)r0 * lds + k, lds, dst + (size_t)k * w + r0, w);
            for (; k < kc; k++)
                for (int r = r0; r < r0 + 8; r++) dst[(size_t)k * w + r] = src[(size_t)r * lds + k];
        }
#else
    (void)vec;
#endif
    for (int r = r0; r < w; r++)
        if (r < n)
            for (int k = 0; k < kc; k++) dst[(size_t)k * w + r] = src[(size_t)r * lds + k];
        else
            for (int k = 0; k < kc; k++) dst[(size_t)k * w + r] = 0.0f;
}

/* The mc x kc block of op(A) at (i0, p0) as MR-row micro-panels, each kc
 * columns of MR values; rows past mc are zeros. */
static void pack_a(int ta, const float *A, int lda, int i0, int mc, int p0, int kc, int mr, float *dst, int vec) {
    for (int ip = 0; ip < mc; ip += mr, dst += (size_t)kc * mr) {
        int m = mc - ip < mr ? mc - ip : mr;
        if (!ta) {
            pack_rows(A + (size_t)(i0 + ip) * lda + p0, lda, m, kc, mr, dst, vec);
            continue;
        }
        for (int k = 0; k < kc; k++) {
            const float *src = A + (size_t)(p0 + k) * lda + i0 + ip;
            float *d = dst + (size_t)k * mr;
            for (int i = 0; i < m; i++) d[i] = src[i];
            for (int i = m; i < mr; i++) d[i] = 0.0f;
        }
    }
}

/* The kc x nc block of op(B) at (p0, j0) as NR-column micro-panels. */
static void pack_b(int tb, const float *B, int ldb, int p0, int kc, int j0, int nc, int nr, float *dst, int vec) {
    for (int jp = 0; jp < nc; jp += nr, dst += (size_t)kc * nr) {
        int n = nc - jp < nr ? nc - jp : nr;
        if (tb) {
            pack_rows(B + (size_t)(j0 + jp) * ldb + p0, ldb, n, kc, nr, dst, vec);
        } else {
            for (int k = 0; k < kc; k++) {
                const float *src = B + (size_t)(p0 + k) * ldb + j0 + jp;
                float *d = dst + (size_t)k * nr;
                for (int j = 0; j < n; j++) d[j] = src[j];
                for (int j = n; j < nr; j++) d[j] = 0.0f;
            }
        }
    }
}

/* ---- the loop nest ---- */

static void scale_c(int M, int N, float beta, float *C, int ldc) {
    for (int i = 0; i < M; i++)
        for (int j = 0; j < N; j++) C[(size_t)i * ldc + j] = beta == 0.0f ? 0.0f : beta * C[(size_t)i * ldc + j];
}

/* One packed A block (mc rows) times one packed B block (nc columns) into C. */
static void macro_kernel(const kernel *kr, int mc, int nc, int kc, const float *pa, const float *pb, float *C, int ldc,
                         float alpha, float beta) {
    float edge[TILE_MAX] __attribute__((aligned(64)));
    for (int jp = 0; jp < nc; jp += kr->nr) {
        int n = nc - jp < kr->nr ? nc - jp : kr->nr;
        const float *b = pb + (size_t)jp * kc;
        for (int ip = 0; ip < mc; ip += kr->mr) {
            int m = mc - ip < kr->mr ? mc - ip : kr->mr;
            const float *a = pa + (size_t)ip * kc;
            float *c = C + (size_t)ip * ldc + jp;
            if (m == kr->mr && n == kr->nr) {
                kr->ukr(kc, a, b, c, ldc, alpha, beta);
                continue;
            }
            kr->ukr(kc, a, b, edge, kr->nr, 1.0f, 0.0f);
            for (int i = 0; i < m; i++)
                for (int j = 0; j < n; j++) {
                    float *o = c + (size_t)i * ldc + j, t = edge[i * kr->nr + j];
                    *o = beta == 0.0f ? alpha * t : alpha * t + beta * *o;
                }
        }
    }
}

static float *alloc_floats(size_t n) {
    size_t bytes = (n * sizeof(float) + 63) / 64 * 64;
    return aligned_alloc(64, bytes ? bytes : 64);
}

void spade_sgemm(int ta, int tb, int M, int N, int K, float alpha, const float *A, int lda, const float *B, int ldb,
                 float beta, float *C, int ldc) {
    if (M <= 0 || N <= 0) return;
    if (K <= 0 || alpha == 0.0f) {
        scale_c(M, N, beta, C, ldc);
        return;
    }
    int which = spade_gemm_kernel();
#ifdef SPADE_HAVE_CBLAS
    if (which == SPADE_GEMM_OPENBLAS) {
        cblas_sgemm(CblasRowMajor, ta ? CblasTrans : CblasNoTrans, tb ? CblasTrans : CblasNoTrans, M, N, K, alpha, A,
                    lda, B, ldb, beta, C, ldc);
        return;
    }
#endif
    const kernel *kr = &kernels[which];
    if (M == 1 && !ta && !tb) {
        scale_c(1, N, beta, C, ldc);
        kr->vecmat(N, K, alpha, A, B, ldb, C);
        return;
    }
    if (!ta && tb && M <= DOT_MAX_M) {
        kr->dot(M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
        return;
    }
    int mcb = MC_ROWS / kr->mr * kr->mr, ncb = NC;
    int mc_max = M < mcb ? M : mcb, nc_max = N < ncb ? N : ncb, kc_max = K < KC ? K : KC;
    float *pa = alloc_floats((size_t)((mc_max + kr->mr - 1) / kr->mr * kr->mr) * kc_max);
    float *pb = alloc_floats((size_t)((nc_max + kr->nr - 1) / kr->nr * kr->nr) * kc_max);
    if (!pa || !pb) {
        /* out of memory for a few hundred KiB: slow but still right */
        free(pa);
        free(pb);
        gemm_loops(ta, tb, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
        return;
    }
    for (int j0 = 0; j0 < N; j0 += ncb) {
        int nc = N - j0 < ncb ? N - j0 : ncb;
        for (int p0 = 0; p0 < K; p0 += KC) {
            int kc = K - p0 < KC ? K - p0 : KC;
            pack_b(tb, B, ldb, p0, kc, j0, nc, kr->nr, pb, which != SPADE_GEMM_C);
            float bk = p0 == 0 ? beta : 1.0f;
            for (int i0 = 0; i0 < M; i0 += mcb) {
                int mc = M - i0 < mcb ? M - i0 : mcb;
                pack_a(ta, A, lda, i0, mc, p0, kc, kr->mr, pa, which != SPADE_GEMM_C);
                macro_kernel(kr, mc, nc, kc, pa, pb, C + (size_t)i0 * ldc + j0, ldc, alpha, bk);
            }
        }
    }
    free(pa);
    free(pb);
}
