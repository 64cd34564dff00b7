/* gemm.h — spade's own single-precision matrix product for the cpu backend.
 *
 * What it is: row-major C(M,N) = alpha op(A) op(B) + beta C, op = identity or
 * transpose, on the calling thread (the backend's OpenMP team splits the work
 * and calls it once per thread, as it did with single-threaded cblas_sgemm).
 * A packed, cache-blocked product with one micro-kernel per instruction set:
 * AVX-512, AVX2+FMA, or portable C, picked once per process from
 * __builtin_cpu_supports (which also checks that the OS saves the vector
 * registers). A CPU that lacks a kernel's instructions can only get a slower
 * kernel's exact answer, never a wrong one, and no environment variable is read.
 * Products with few rows of A and a transposed B (decoding: a few activation
 * rows against a weight matrix) skip the packing and run as dot products.
 * What it is not: a BLAS (no complex, no double, no threading of its own), or
 * bit-identical across kernels: the packed kernels sum each output in k
 * order in blocks of SPADE_GEMM_KC, the dot-product path in vector lanes.
 */
#ifndef SPADE_POLICY_GEMM_H
#define SPADE_POLICY_GEMM_H

/* The kernels, slowest first; SPADE_GEMM_OPENBLAS (cblas_sgemm, when the
 * build has cblas) is never chosen by itself: the bench forces it to
 * measure spade's kernels against OpenBLAS in the same process. */
enum { SPADE_GEMM_C = 0, SPADE_GEMM_AVX2 = 1, SPADE_GEMM_AVX512 = 2, SPADE_GEMM_OPENBLAS = 3 };

/* C = alpha op(A) op(B) + beta C, row-major: op(A) is M x K (A is K x M with
 * lda >= M when ta), op(B) is K x N (B is N x K when tb). beta == 0 never
 * reads C (it may hold NaN). M, N or K of 0 is allowed (K 0 scales C by beta). */
void spade_sgemm(int ta, int tb, int M, int N, int K, float alpha, const float *A, int lda, const float *B, int ldb,
                 float beta, float *C, int ldc);

/* The kernel spade_sgemm runs (the best this CPU supports, unless forced). */
int spade_gemm_kernel(void);
/* Its name: "avx512", "avx2", "c" or "openblas". */
const char *spade_gemm_kernel_name(int kernel);
/* Whether this CPU runs the kernel (SPADE_GEMM_C always). */
int spade_gemm_supported(int kernel);
/* For tests and the bench: run this kernel from now on, process-wide (-1: the
 * best again). Returns 0, or -1 (and changes nothing) if the CPU lacks it.
 * Not to be called while another thread is inside spade_sgemm. */
int spade_gemm_force(int kernel);

#endif
