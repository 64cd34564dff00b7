/* q8.h — 8-bit (and 4-bit) weights for sampling on the cpu backend
 * (policy.sample_weights = q8_0, q4_1).
 *
 * What it is: a weight matrix requantized to blocks of 32 int8 values with one
 * float scale each (the Q8_0 layout of GGUF files: d = max |w| / 127,
 * q = round(w / d)), and the product of activation rows with it. The rows are
 * quantized the same way, 32 values at a time, and each block's dot product
 * is summed in integers (AVX-512 VNNI, AVX2, or portable C: exact, so every
 * kernel gives the same block sums), scaled by both blocks' scales and added
 * in float. Decoding reads a quarter of the bytes of F32 weights. The 4-bit
 * form (Q4_1's rounding: a minimum and a scale a block) reads 3/16 of them
 * (0.75 bytes a weight with its float scales) and sums q_w q_x in integers
 * the same way, adding min_w d_x sum(q_x) for the minimum.
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
    int bits; /* 8, or 4 (spade_q8_quantize4) */
    /* 8 bits: rows x cols int8. 4 bits: rows x SPADE_Q4_ROW_BYTES(cols)
     * bytes, blocks in pairs: byte e of pair k holds element e of block 2k
     * in its low nibble and element e of block 2k + 1 in its high one (an
     * odd last block: high nibbles 0), so one 32-byte load unpacks into two
     * whole blocks with a mask and a shift. */
    int8_t *q;
    float *d; /* rows x cols / 32 scales */
    float *m; /* 4 bits: rows x cols / 32 block minimums; 8 bits: NULL */
} spade_q8mat;

#define SPADE_Q4_ROW_BYTES(cols) (((cols) / SPADE_Q8_BLOCK + 1) / 2 * 32)

/* Quantizes w (rows x cols, row-major). Returns 0, -1 if cols is not a
 * multiple of 32, -2 out of memory (m is then empty). */
int spade_q8_quantize(spade_q8mat *m, const float *w, int rows, int cols);
/* The same to 4 bits a weight as GGUF's Q4_1 rounds (policy.sample_weights
 * = q4_1): per block of 32, min = the least value, d = (max - min) / 15,
 * q = round((w - min) / d) in [0, 15], w ~ min + d q; d and min kept as
 * floats (Q4_1 stores them as f16). A Q4_1 file's weights, dequantized at
 * load, come back to the file's own q (and d, min to float rounding). */
int spade_q8_quantize4(spade_q8mat *m, const float *w, int rows, int cols);
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
