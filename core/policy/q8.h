/* q8.h — 8-bit weights for sampling on the cpu backend (policy.sample_weights = q8_0).
 *
 * What it is: a weight matrix requantized to blocks of 32 int8 values with one
 * float scale each (the Q8_0 layout of GGUF files: d = max |w| / 127,
 * q = round(w / d)), and the product of activation rows with it. The rows are
 * quantized the same way, 32 values at a time, and each block's dot product
 * is summed in integers (AVX-512 VNNI, AVX2, or portable C: exact, so every
 * kernel gives the same block sums), scaled by both blocks' scales and added
 * in float. Decoding reads a quarter of the bytes of F32 weights.
 * What it is not: a training path (gradients stay F32 and so do the F32
 * weights: this is a copy, rebuilt after the weights change), or a reader of
 * a file's own Q8_0 blocks (a Q8_0 file is dequantized at load, and
 * requantizing those values gives back the file's blocks up to float
 * rounding of the scale).
 */
#ifndef SPADE_POLICY_Q8_H
#define SPADE_POLICY_Q8_H

#include <stddef.h>
#include <stdint.h>

#define SPADE_Q8_BLOCK 32

typedef struct spade_q8mat {
    int rows, cols; /* cols a multiple of SPADE_Q8_BLOCK */
    int8_t *q; /* rows x cols */
    float *d; /* rows x cols / 32 scales */
} spade_q8mat;

/* Quantizes w (rows x cols, row-major). Returns 0, -1 if cols is not a
 * multiple of 32, -2 out of memory (m is then empty). */
int spade_q8_quantize(spade_q8mat *m, const float *w, int rows, int cols);
void spade_q8_free(spade_q8mat *m);

/* out(N, rows) = x(N, cols) w^T (+ bias[rows] when not NULL). The team's
 * threads (team.h) split the output columns when the product is large
 * enough; inside an OpenMP region it runs on the calling thread. Each output
 * is summed alike whichever thread forms it. Returns 0 or -2 (out of memory
 * for the quantized rows). */
int spade_q8_matmul(float *out, const float *x, const spade_q8mat *w, const float *bias, int N);

/* The dot-product kernel spade_q8_matmul runs: "avx512vnni", "avx2" or "c";
 * spade_q8_force(k) picks 0 (c), 1 (avx2), 2 (avx512vnni) or -1 (the best
 * again) for tests and benches, returning -1 if the CPU lacks it. */
const char *spade_q8_kernel_name(void);
int spade_q8_force(int k);

#endif
