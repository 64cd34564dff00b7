/* q8.c — 8-bit weights and their products for sampling (see q8.h).
 *
 * What it is: quantization to blocks of 32 (d = max |v| / 127, q = round(v / d),
 * as GGUF's Q8_0 and llama.cpp's activation blocks do), and three kernels for
 * the block dot products of a few activation rows with many weight rows:
 *   avx512vnni  two blocks a 64-byte vector, vpdpbusd (u8 x s8 into s32),
 *               2 rows x 4 weight rows a tile
 *   avx2        one block a vector, vpmaddubsw + vpmaddwd, 2 x 4 a tile
 *   c           the same sums in plain C
 * u8 x s8 instructions need one unsigned operand: |x| against w with x's
 * sign moved onto it (values are in [-127, 127], so neither overflows).
 * Integer block sums are exact, so the kernels differ only in how the scaled
 * block sums are added in float.
 * What it is not: a general int8 GEMM (rows of a multiple of 32, no
 * transposes), or used for training.
 */
#include "policy/q8.h"

#include <math.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "policy/team.h"

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define Q8_X86 1
#include <immintrin.h>
#endif

#define QB SPADE_Q8_BLOCK

/* Below this many multiply-adds a product runs on the calling thread (a
 * few microseconds: less than handing it to the team). It was 16 M while
 * the split was an OpenMP region, whose barrier on a busy machine costs
 * more than a millisecond of work, so every layer of one decoding slot ran
 * on one thread; the team (team.h) waits for no thread that took nothing. */
#define Q8_PAR_MIN ((size_t)1 << 16)
/* The team's items: whole 4-row tiles of about this many weight bytes, small
 * enough that a helper descheduled while holding one delays the product by
 * little, large enough that taking one (an atomic add) costs nothing. */
#define Q8_ITEM_BYTES 32768

/* One row of n values (n a multiple of 32) to int8 blocks and scales.
 * Written to vectorise (fmaxf and lrintf are libm calls at -O2: 2.6-3.0 ns a
 * weight, 0.4 CPU seconds to requantize SmolLM2-135M on the first pass after
 * every weight change; now 0.8-1.2 ns, the same bytes): the max as a compare
 * (NaN skipped, as fmaxf does), and lrintf's round-to-nearest-even as the
 * 1.5 * 2^23 trick, exact for the |x / d| <= 127 it rounds. */
static void quantize_row(const float *v, int n, int8_t *q, float *d) {
    const float magic = 12582912.0f;
    for (int b = 0; b < n / QB; b++) {
        const float *x = v + (size_t)b * QB;
        float amax = 0.0f;
#pragma omp simd reduction(max : amax)
        for (int i = 0; i < QB; i++) {
            float a = fabsf(x[i]);
            amax = a > amax ? a : amax;
        }
        float s = amax / 127.0f, inv = s > 0.0f ? 1.0f / s : 0.0f;
        d[b] = s;
        int8_t *qb = q + (size_t)b * QB;
#pragma omp simd
        for (int i = 0; i < QB; i++) {
            float t = x[i] * inv;
            qb[i] = (int8_t)(int)((t + magic) - magic);
        }
    }
}

int spade_q8_quantize(spade_q8mat *m, const float *w, int rows, int cols) {
    memset(m, 0, sizeof *m);
    if (cols <= 0 || cols % QB || rows <= 0) return -1;
    size_t nb = (size_t)cols / QB;
    m->q = malloc((size_t)rows * cols);
    m->d = malloc((size_t)rows * nb * sizeof(float));
    if (!m->q || !m->d) {
        spade_q8_free(m);
        return -2;
    }
    m->rows = rows;
    m->cols = cols;
    m->bits = 8;
#pragma omp parallel for if ((size_t)rows * cols >= ((size_t)1 << 20))
    for (int r = 0; r < rows; r++) quantize_row(w + (size_t)r * cols, cols, m->q + (size_t)r * cols, m->d + r * nb);
    return 0;
}

/* One row to Q4_1's blocks: q bytes in the paired layout of q8.h. */
static void quantize_row4(const float *v, int n, uint8_t *q, float *d, float *mn) {
    const float magic = 12582912.0f;
    int nb = n / QB;
    memset(q, 0, (size_t)SPADE_Q4_ROW_BYTES(n));
    for (int b = 0; b < nb; b++) {
        const float *x = v + (size_t)b * QB;
        float lo = x[0], hi = x[0];
#pragma omp simd reduction(min : lo) reduction(max : hi)
        for (int i = 1; i < QB; i++) {
            lo = x[i] < lo ? x[i] : lo;
            hi = x[i] > hi ? x[i] : hi;
        }
        float s = (hi - lo) / 15.0f, inv = s > 0.0f ? 1.0f / s : 0.0f;
        d[b] = s;
        mn[b] = lo;
        uint8_t *qb = q + (size_t)(b / 2) * QB;
        int shift = b % 2 ? 4 : 0;
        /* as quantize_row: vectorised, the rounding exact for 0 <= t <= 15 */
#pragma omp simd
        for (int i = 0; i < QB; i++) {
            float t = (x[i] - lo) * inv;
            int u = (int)((t + magic) - magic);
            u = u < 0 ? 0 : u > 15 ? 15 : u;
            qb[i] |= (uint8_t)(u << shift);
        }
    }
}

int spade_q8_quantize4(spade_q8mat *m, const float *w, int rows, int cols) {
    memset(m, 0, sizeof *m);
    if (cols <= 0 || cols % QB || rows <= 0) return -1;
    size_t nb = (size_t)cols / QB, rb = (size_t)SPADE_Q4_ROW_BYTES(cols);
    m->q = malloc((size_t)rows * rb);
    m->d = malloc((size_t)rows * nb * sizeof(float));
    m->m = malloc((size_t)rows * nb * sizeof(float));
    if (!m->q || !m->d || !m->m) {
        spade_q8_free(m);
        return -2;
    }
    m->rows = rows;
    m->cols = cols;
    m->bits = 4;
#pragma omp parallel for if ((size_t)rows * cols >= ((size_t)1 << 20))
    for (int r = 0; r < rows; r++)
        quantize_row4(w + (size_t)r * cols, cols, (uint8_t *)m->q + (size_t)r * rb, m->d + r * nb, m->m + r * nb);
    return 0;
}

void spade_q8_free(spade_q8mat *m) {
    free(m->q);
    free(m->d);
    free(m->m);
    memset(m, 0, sizeof *m);
}

/* The quantized activation rows: N x cols values, N x nb scales, and for
 * the 4-bit kernels N x nb block sums times their scale (d_x sum q_x, what
 * a block's minimum multiplies). */
typedef struct qrows {
    int N, nb;
    const int8_t *q;
    const float *d, *xs;
} qrows;

/* out[i * ldo + j] = sum over blocks of the block dot product times both
 * scales, + bias[j], for all N rows and weight rows j in [j0, j1). */
typedef void (*q8_kernel)(const qrows *x, const spade_q8mat *w, int j0, int j1, const float *bias, float *out, int ldo);

static void kernel_c(const qrows *x, const spade_q8mat *w, int j0, int j1, const float *bias, float *out, int ldo) {
    int nb = x->nb;
    for (int j = j0; j < j1; j++)
        for (int i = 0; i < x->N; i++) {
            const int8_t *a = x->q + (size_t)i * nb * QB, *b = w->q + (size_t)j * nb * QB;
            const float *da = x->d + (size_t)i * nb, *db = w->d + (size_t)j * nb;
            float s = 0.0f;
            for (int k = 0; k < nb; k++) {
                int32_t t = 0;
                for (int e = 0; e < QB; e++) t += (int32_t)a[k * QB + e] * b[k * QB + e];
                s += (float)t * (da[k] * db[k]);
            }
            out[(size_t)i * ldo + j] = s + (bias ? bias[j] : 0.0f);
        }
}

/* The minimums' part of a 4-bit output: sum over blocks of min_w d_x sum q_x. */
static inline float q4_min_term(const qrows *x, const spade_q8mat *w, int i, int j) {
    const float *mw = w->m + (size_t)j * x->nb, *xs = x->xs + (size_t)i * x->nb;
    float s = 0.0f;
    for (int k = 0; k < x->nb; k++) s += mw[k] * xs[k];
    return s;
}

static void kernel_c4(const qrows *x, const spade_q8mat *w, int j0, int j1, const float *bias, float *out, int ldo) {
    int nb = x->nb;
    size_t rb = (size_t)SPADE_Q4_ROW_BYTES(w->cols);
    for (int j = j0; j < j1; j++)
        for (int i = 0; i < x->N; i++) {
            const int8_t *a = x->q + (size_t)i * nb * QB;
            const uint8_t *b = (const uint8_t *)w->q + (size_t)j * rb;
            const float *da = x->d + (size_t)i * nb, *db = w->d + (size_t)j * nb;
            float s = 0.0f;
            for (int k = 0; k < nb; k++) {
                int32_t t = 0;
                for (int e = 0; e < QB; e++) {
                    int u = b[(size_t)(k / 2) * QB + e];
                    t += (int32_t)a[k * QB + e] * (k % 2 ? u >> 4 : u & 15);
                }
                s += (float)t * (da[k] * db[k]);
            }
            out[(size_t)i * ldo + j] = s + q4_min_term(x, w, i, j) + (bias ? bias[j] : 0.0f);
        }
}

#ifdef Q8_X86
__attribute__((target("avx2,fma"))) static inline float hsum8(__m256 v) {
    __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    s = _mm_add_ps(s, _mm_movehl_ps(s, s));
    s = _mm_add_ss(s, _mm_movehdup_ps(s));
    return _mm_cvtss_f32(s);
}

/* nr (1 or 2, a constant at each call) activation rows from i0 x four
 * weight rows at a time; a missing weight row reads a real one and is not
 * stored. */
__attribute__((target("avx2,fma"), always_inline)) static inline void avx2_rows(int nr, int i0, const qrows *x,
                                                                                const spade_q8mat *w, int j0, int j1,
                                                                                const float *bias, float *out,
                                                                                int ldo) {
    int nb = x->nb;
    const __m256i ones = _mm256_set1_epi16(1);
    for (int jb = j0; jb < j1; jb += 4) {
        int jr[4];
        for (int q = 0; q < 4; q++) jr[q] = jb + q < j1 ? jb + q : jb;
        __m256 acc[2][4];
        for (int r = 0; r < nr; r++)
            for (int q = 0; q < 4; q++) acc[r][q] = _mm256_setzero_ps();
        for (int k = 0; k < nb; k++) {
            __m256i xv[2], ax[2];
            for (int r = 0; r < nr; r++) {
                xv[r] = _mm256_loadu_si256((const __m256i *)(x->q + ((size_t)(i0 + r) * nb + k) * QB));
                ax[r] = _mm256_sign_epi8(xv[r], xv[r]);
            }
            for (int q = 0; q < 4; q++) {
                __m256i wv = _mm256_loadu_si256((const __m256i *)(w->q + ((size_t)jr[q] * nb + k) * QB));
                float dw = w->d[(size_t)jr[q] * nb + k];
                for (int r = 0; r < nr; r++) {
                    __m256i p = _mm256_madd_epi16(_mm256_maddubs_epi16(ax[r], _mm256_sign_epi8(wv, xv[r])), ones);
                    __m256 sc = _mm256_set1_ps(x->d[(size_t)(i0 + r) * nb + k] * dw);
                    acc[r][q] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(p), sc, acc[r][q]);
                }
            }
        }
        for (int r = 0; r < nr; r++)
            for (int q = 0; q < 4 && jb + q < j1; q++)
                out[(size_t)(i0 + r) * ldo + jb + q] = hsum8(acc[r][q]) + (bias ? bias[jb + q] : 0.0f);
    }
}

__attribute__((target("avx2,fma"))) static void kernel_avx2(const qrows *x, const spade_q8mat *w, int j0, int j1,
                                                            const float *bias, float *out, int ldo) {
    int i0 = 0;
    for (; i0 + 2 <= x->N; i0 += 2) avx2_rows(2, i0, x, w, j0, j1, bias, out, ldo);
    for (; i0 < x->N; i0++) avx2_rows(1, i0, x, w, j0, j1, bias, out, ldo);
}

/* The 4-bit form: one block a vector, the pair's 32 bytes masked (block
 * 2k) or shifted (2k + 1) into values 0..15, the unsigned operand of
 * vpmaddubsw as they are (no sign trick: 15 x 127 x 2 fits 16 bits). */
__attribute__((target("avx2,fma"), always_inline)) static inline void avx2_rows4(int nr, int i0, const qrows *x,
                                                                                 const spade_q8mat *w, int j0, int j1,
                                                                                 const float *bias, float *out,
                                                                                 int ldo) {
    int nb = x->nb;
    size_t rb = (size_t)SPADE_Q4_ROW_BYTES(w->cols);
    const __m256i ones = _mm256_set1_epi16(1), low = _mm256_set1_epi8(15);
    for (int jb = j0; jb < j1; jb += 4) {
        int jr[4];
        for (int q = 0; q < 4; q++) jr[q] = jb + q < j1 ? jb + q : jb;
        __m256 acc[2][4];
        for (int r = 0; r < nr; r++)
            for (int q = 0; q < 4; q++) acc[r][q] = _mm256_setzero_ps();
        for (int k = 0; k < nb; k++) {
            __m256i xv[2];
            for (int r = 0; r < nr; r++)
                xv[r] = _mm256_loadu_si256((const __m256i *)(x->q + ((size_t)(i0 + r) * nb + k) * QB));
            for (int q = 0; q < 4; q++) {
                __m256i pk = _mm256_loadu_si256((const __m256i *)(w->q + (size_t)jr[q] * rb + (size_t)(k / 2) * QB));
                __m256i wv = _mm256_and_si256(k % 2 ? _mm256_srli_epi16(pk, 4) : pk, low);
                float dw = w->d[(size_t)jr[q] * nb + k];
                for (int r = 0; r < nr; r++) {
                    __m256i p = _mm256_madd_epi16(_mm256_maddubs_epi16(wv, xv[r]), ones);
                    __m256 sc = _mm256_set1_ps(x->d[(size_t)(i0 + r) * nb + k] * dw);
                    acc[r][q] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(p), sc, acc[r][q]);
                }
            }
        }
        for (int r = 0; r < nr; r++)
            for (int q = 0; q < 4 && jb + q < j1; q++)
                out[(size_t)(i0 + r) * ldo + jb + q] =
                    hsum8(acc[r][q]) + q4_min_term(x, w, i0 + r, jb + q) + (bias ? bias[jb + q] : 0.0f);
    }
}

__attribute__((target("avx2,fma"))) static void kernel_avx2_4(const qrows *x, const spade_q8mat *w, int j0, int j1,
                                                              const float *bias, float *out, int ldo) {
    int i0 = 0;
    for (; i0 + 2 <= x->N; i0 += 2) avx2_rows4(2, i0, x, w, j0, j1, bias, out, ldo);
    for (; i0 < x->N; i0++) avx2_rows4(1, i0, x, w, j0, j1, bias, out, ldo);
}

/* nr (1 or 2, a constant at each call: 4-row tiles measured no faster, the
 * registers run out) activation rows from i0 x four weight rows at a time,
 * two blocks a step (an odd last block loads half a
 * vector, the rest zeros). */
__attribute__((target("avx512f,avx512bw,avx512vnni"), always_inline)) static inline void
vnni_rows(int nr, int i0, const qrows *x, const spade_q8mat *w, int j0, int j1, const float *bias, float *out,
          int ldo) {
    int nb = x->nb;
    for (int jb = j0; jb < j1; jb += 4) {
        int jr[4];
        for (int q = 0; q < 4; q++) jr[q] = jb + q < j1 ? jb + q : jb;
        __m512 acc[2][4];
        for (int r = 0; r < nr; r++)
            for (int q = 0; q < 4; q++) acc[r][q] = _mm512_setzero_ps();
        for (int k = 0; k < nb; k += 2) {
            __mmask64 ld = k + 1 < nb ? ~(__mmask64)0 : (__mmask64)0xffffffffu;
            int k1 = k + 1 < nb ? k + 1 : k;
            __m512i ax[2];
            __mmask64 neg[2];
            __m512 sx[2];
            for (int r = 0; r < nr; r++) {
                __m512i xv = _mm512_maskz_loadu_epi8(ld, x->q + ((size_t)(i0 + r) * nb + k) * QB);
                ax[r] = _mm512_abs_epi8(xv);
                neg[r] = _mm512_movepi8_mask(xv);
                const float *d = x->d + (size_t)(i0 + r) * nb;
                sx[r] = _mm512_mask_blend_ps(0xff00, _mm512_set1_ps(d[k]), _mm512_set1_ps(d[k1]));
            }
            for (int q = 0; q < 4; q++) {
                __m512i wv = _mm512_maskz_loadu_epi8(ld, w->q + ((size_t)jr[q] * nb + k) * QB);
                const float *d = w->d + (size_t)jr[q] * nb;
                __m512 sw = _mm512_mask_blend_ps(0xff00, _mm512_set1_ps(d[k]), _mm512_set1_ps(d[k1]));
                for (int r = 0; r < nr; r++) {
                    __m512i sv = _mm512_mask_sub_epi8(wv, neg[r], _mm512_setzero_si512(), wv);
                    __m512i p = _mm512_dpbusd_epi32(_mm512_setzero_si512(), ax[r], sv);
                    acc[r][q] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(p), _mm512_mul_ps(sx[r], sw), acc[r][q]);
                }
            }
        }
        for (int r = 0; r < nr; r++)
            for (int q = 0; q < 4 && jb + q < j1; q++)
                out[(size_t)(i0 + r) * ldo + jb + q] = _mm512_reduce_add_ps(acc[r][q]) + (bias ? bias[jb + q] : 0.0f);
    }
}

__attribute__((target("avx512f,avx512bw,avx512vnni"))) static void
kernel_vnni(const qrows *x, const spade_q8mat *w, int j0, int j1, const float *bias, float *out, int ldo) {
    int i0 = 0;
    for (; i0 + 2 <= x->N; i0 += 2) vnni_rows(2, i0, x, w, j0, j1, bias, out, ldo);
    for (; i0 < x->N; i0++) vnni_rows(1, i0, x, w, j0, j1, bias, out, ldo);
}

/* The minimums' term as a 16-lane dot product (nb floats each side). */
__attribute__((target("avx512f"), always_inline)) static inline float min_term512(const qrows *x, const spade_q8mat *w,
                                                                                  int i, int j) {
    const float *mw = w->m + (size_t)j * x->nb, *xs = x->xs + (size_t)i * x->nb;
    __m512 s = _mm512_setzero_ps();
    for (int k = 0; k < x->nb; k += 16) {
        __mmask16 m = x->nb - k >= 16 ? (__mmask16)0xffff : (__mmask16)((1u << (x->nb - k)) - 1u);
        s = _mm512_fmadd_ps(_mm512_maskz_loadu_ps(m, mw + k), _mm512_maskz_loadu_ps(m, xs + k), s);
    }
    return _mm512_reduce_add_ps(s);
}

/* The 4-bit form, two blocks a step as vnni_rows: the pair's 32 bytes
 * unpack into the two blocks' 64 values 0..15, vpdpbusd's unsigned operand
 * as they are (the activations its signed one: no sign trick). */
__attribute__((target("avx512f,avx512bw,avx512vnni"), always_inline)) static inline void
vnni_rows4(int nr, int i0, const qrows *x, const spade_q8mat *w, int j0, int j1, const float *bias, float *out,
           int ldo) {
    int nb = x->nb;
    size_t rb = (size_t)SPADE_Q4_ROW_BYTES(w->cols);
    const __m256i low = _mm256_set1_epi8(15);
    for (int jb = j0; jb < j1; jb += 4) {
        int jr[4];
        for (int q = 0; q < 4; q++) jr[q] = jb + q < j1 ? jb + q : jb;
        __m512 acc[2][4];
        for (int r = 0; r < nr; r++)
            for (int q = 0; q < 4; q++) acc[r][q] = _mm512_setzero_ps();
        for (int k = 0; k < nb; k += 2) {
            __mmask64 ld = k + 1 < nb ? ~(__mmask64)0 : (__mmask64)0xffffffffu;
            int k1 = k + 1 < nb ? k + 1 : k;
            __m512i xv[2];
            __m512 sx[2];
            for (int r = 0; r < nr; r++) {
                xv[r] = _mm512_maskz_loadu_epi8(ld, x->q + ((size_t)(i0 + r) * nb + k) * QB);
                const float *d = x->d + (size_t)(i0 + r) * nb;
                sx[r] = _mm512_mask_blend_ps(0xff00, _mm512_set1_ps(d[k]), _mm512_set1_ps(d[k1]));
            }
            for (int q = 0; q < 4; q++) {
                __m256i pk = _mm256_loadu_si256((const __m256i *)(w->q + (size_t)jr[q] * rb + (size_t)(k / 2) * QB));
                __m256i lo = _mm256_and_si256(pk, low), hi = _mm256_and_si256(_mm256_srli_epi16(pk, 4), low);
                __m512i wv = _mm512_inserti64x4(_mm512_castsi256_si512(lo), hi, 1);
                const float *d = w->d + (size_t)jr[q] * nb;
                __m512 sw = _mm512_mask_blend_ps(0xff00, _mm512_set1_ps(d[k]), _mm512_set1_ps(d[k1]));
                for (int r = 0; r < nr; r++) {
                    __m512i p = _mm512_dpbusd_epi32(_mm512_setzero_si512(), wv, xv[r]);
                    acc[r][q] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(p), _mm512_mul_ps(sx[r], sw), acc[r][q]);
                }
            }
        }
        for (int r = 0; r < nr; r++)
            for (int q = 0; q < 4 && jb + q < j1; q++)
                out[(size_t)(i0 + r) * ldo + jb + q] =
                    _mm512_reduce_add_ps(acc[r][q]) + min_term512(x, w, i0 + r, jb + q) + (bias ? bias[jb + q] : 0.0f);
    }
}

__attribute__((target("avx512f,avx512bw,avx512vnni"))) static void
kernel_vnni4(const qrows *x, const spade_q8mat *w, int j0, int j1, const float *bias, float *out, int ldo) {
    int i0 = 0;
    for (; i0 + 2 <= x->N; i0 += 2) vnni_rows4(2, i0, x, w, j0, j1, bias, out, ldo);
    for (; i0 < x->N; i0++) vnni_rows4(1, i0, x, w, j0, j1, bias, out, ldo);
}
#endif

static const struct {
    const char *name;
    q8_kernel fn, fn4; /* 8-bit and 4-bit weights */
} kernels[] = {
    {"c", kernel_c, kernel_c4},
#ifdef Q8_X86
    {"avx2", kernel_avx2, kernel_avx2_4},
    {"avx512vnni", kernel_vnni, kernel_vnni4},
#endif
};
#define NK ((int)(sizeof kernels / sizeof kernels[0]))

static int supported(int k) {
    if (k == 0) return 1;
    if (k < 0 || k >= NK) return 0;
#ifdef Q8_X86
    __builtin_cpu_init();
    if (k == 1) return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
    if (k == 2)
        return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
               __builtin_cpu_supports("avx512vnni");
#endif
    return 0;
}

static atomic_int chosen = -1;

static int best(void) {
    for (int k = NK - 1; k > 0; k--)
        if (supported(k)) return k;
    return 0;
}

static int current(void) {
    int k = atomic_load_explicit(&chosen, memory_order_relaxed);
    if (k < 0) {
        k = best();
        atomic_store_explicit(&chosen, k, memory_order_relaxed);
    }
    return k;
}

const char *spade_q8_kernel_name(void) { return kernels[current()].name; }

int spade_q8_force(int k) {
    if (k < 0)
        k = best();
    else if (!supported(k))
        return -1;
    atomic_store_explicit(&chosen, k, memory_order_relaxed);
    return 0;
}

typedef struct q8job {
    const qrows *x;
    const spade_q8mat *w;
    const float *bias;
    float *out;
    q8_kernel fn;
    int per; /* weight rows an item, a multiple of 4 except a single item's */
} q8job;

static void q8_item(void *arg, int item, int worker) {
    (void)worker;
    const q8job *j = arg;
    int j0 = item * j->per, j1 = j0 + j->per < j->w->rows ? j0 + j->per : j->w->rows;
    j->fn(j->x, j->w, j0, j1, j->bias, j->out, j->w->rows);
}

int spade_q8_matmul(float *out, const float *x, const spade_q8mat *w, const float *bias, int N) {
    if (N <= 0) return 0;
    int cols = w->cols, nb = cols / QB, OC = w->rows, four = w->bits == 4;
    int8_t *xq = malloc((size_t)N * cols);
    float *xd = malloc((size_t)N * nb * (four ? 2 : 1) * sizeof(float)), *xs = four ? xd + (size_t)N * nb : NULL;
    if (!xq || !xd) {
        free(xq);
        free(xd);
        return -2;
    }
    for (int i = 0; i < N; i++) quantize_row(x + (size_t)i * cols, cols, xq + (size_t)i * cols, xd + (size_t)i * nb);
    if (four)
        for (size_t b = 0; b < (size_t)N * nb; b++) {
            int t = 0;
            for (int e = 0; e < QB; e++) t += xq[b * QB + e];
            xs[b] = xd[b] * (float)t;
        }
    qrows xr = {N, nb, xq, xd, xs};
    /* items of whole 4-row tiles, about Q8_ITEM_BYTES of weights each */
    int per = Q8_ITEM_BYTES / (four ? SPADE_Q4_ROW_BYTES(cols) : cols) / 4 * 4;
    if (per < 4) per = 4;
    q8job job = {&xr, w, bias, out, four ? kernels[current()].fn4 : kernels[current()].fn, per};
    int items = (OC + per - 1) / per;
    if ((size_t)N * OC * cols < Q8_PAR_MIN) items = 1, job.per = OC;
    spade_team_run(q8_item, &job, items);
    free(xq);
    free(xd);
    return 0;
}
