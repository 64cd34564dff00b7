/* backend_cuda.cu — the CUDA backend of the policy: cuBLAS GEMMs and CUDA kernels
 * behind the vtable of core/policy/backend.h.
 *
 * What it is: one implementation of every op in backend.h for one NVIDIA GPU
 * (device 0 of what CUDA_VISIBLE_DEVICES shows), all issued on one stream of
 * this backend. Linear layers are cuBLAS SGEMMs in
 * full FP32 (the default math mode; SPADE_CUDA_TF32=1 in the environment allows
 * TF32 tensor cores, faster and less exact). Everything else is a plain kernel
 * that mirrors the reference loops of backend_cpu.c: the same formulas, the same
 * order of operations inside each output where that is cheap (dot products,
 * value sums), tree reductions where a row must be summed.
 * Deterministic except encoder_backward's token-embedding gradient, which
 * uses atomicAdd (several positions may carry the same token); every other
 * reduction has a fixed order, so two runs give the same bits.
 * Attention is tiled (FlashAttention-style, one thread per row, no T x T
 * buffer): memory linear in T.
 * What it is not: tuned. No tensor-core attention, no mixed precision, no
 * multi-GPU (that is NCCL's job, later). Correctness first; the GEMMs carry
 * the speed.
 *
 * Errors: every CUDA and cuBLAS call is checked; a failure is turned into a
 * message "backend_cuda.cu:LINE: what: cuda error string" that last_error
 * returns, and the op returns SPADE_POLICY_EBACKEND. Nothing here exits or
 * aborts. Without a usable device spade_backend_cuda_new returns
 * SPADE_POLICY_ENODEV ("no CUDA device: ...") and leaves nothing allocated.
 */
#include "config.h"

#include "policy/backend.h"

#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Everything but the constructor has internal linkage: kernel and helper names
 * stay out of libspade.a's symbol table. */
namespace {

/* ------------------------------------------------------------------ context */

#define SUMSQ_MAX_BLOCKS 1024

struct cuda_ctx {
    int device;
    cudaStream_t stream;
    cublasHandle_t blas;
    char err[512];
    float *scratch; /* device scratch (attention backward's row dots) */
    size_t scratch_n; /* floats */
    double *partials; /* (SUMSQ_MAX_BLOCKS) device partial sums of sumsq */
    size_t kv_smem_ok; /* dynamic shared memory kv_attend_kernel may use (bytes) */
    size_t kv_at_smem_ok; /* the same for kv_attend_at_kernel */
};

static int failv(cuda_ctx *c, int line, const char *fmt, va_list ap) {
    int n = snprintf(c->err, sizeof c->err, "backend_cuda.cu:%d: ", line);
    if (n < 0 || (size_t)n >= sizeof c->err) n = 0;
    vsnprintf(c->err + n, sizeof c->err - n, fmt, ap);
    return SPADE_POLICY_EBACKEND;
}

static int fail_at(cuda_ctx *c, int line, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    int rc = failv(c, line, fmt, ap);
    va_end(ap);
    return rc;
}
#define FAIL(c, ...) fail_at((c), __LINE__, __VA_ARGS__)

/* Checks a CUDA runtime call; on failure records the message and returns. */
#define CU(c, call)                                                                                                    \
    do {                                                                                                               \
        cudaError_t e_ = (call);                                                                                       \
        if (e_ != cudaSuccess) return fail_at((c), __LINE__, "%s: %s", #call, cudaGetErrorString(e_));                 \
    } while (0)

/* Checks that a kernel launch was accepted (bad configuration, or a sticky
 * error left by an earlier kernel). */
#define LAUNCHED(c, what)                                                                                              \
    do {                                                                                                               \
        cudaError_t e_ = cudaGetLastError();                                                                           \
        if (e_ != cudaSuccess) return fail_at((c), __LINE__, "%s kernel: %s", (what), cudaGetErrorString(e_));         \
    } while (0)

#define BLAS(c, what, call)                                                                                            \
    do {                                                                                                               \
        cublasStatus_t s_ = (call);                                                                                    \
        if (s_ != CUBLAS_STATUS_SUCCESS)                                                                               \
            return fail_at((c), __LINE__, "cuBLAS %s: %s", (what), cublasGetStatusString(s_));                         \
    } while (0)

#define CTX(ctx) ((cuda_ctx *)(ctx))

/* Grows the device scratch to n floats. cudaFree waits for the device, so no
 * kernel still reads the old block when it goes. */
static float *scratch(cuda_ctx *c, size_t n) {
    if (n <= c->scratch_n) return c->scratch;
    if (c->scratch) cudaFree(c->scratch);
    c->scratch = NULL;
    c->scratch_n = 0;
    cudaError_t e = cudaMalloc((void **)&c->scratch, n * sizeof(float));
    if (e != cudaSuccess) {
        c->scratch = NULL;
        cudaGetLastError(); /* an allocation failure is not sticky; clear it */
        FAIL(c, "cudaMalloc of %zu bytes of scratch: %s", n * sizeof(float), cudaGetErrorString(e));
        return NULL;
    }
    c->scratch_n = n;
    return c->scratch;
}

/* Grid for a grid-stride loop over n elements with 256 threads per block. */
static unsigned grid_for(size_t n, unsigned threads) {
    size_t g = (n + threads - 1) / threads;
    if (g > (1u << 20)) g = 1u << 20;
    return g ? (unsigned)g : 1u;
}

/* ------------------------------------------------------------- reductions */

__device__ __forceinline__ float warp_sum(float v) {
    for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
    return v;
}
__device__ __forceinline__ float warp_max(float v) {
    for (int o = 16; o > 0; o >>= 1) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
    return v;
}
__device__ __forceinline__ double warp_sum_d(double v) {
    for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
    return v;
}

/* Block-wide sum/max (blockDim.x a multiple of 32); every thread gets the result.
 * sh holds 32 floats; the first barrier lets a caller reuse sh back to back. */
__device__ float block_sum(float v, float *sh) {
    int lane = threadIdx.x & 31, w = threadIdx.x >> 5, nw = blockDim.x >> 5;
    v = warp_sum(v);
    __syncthreads();
    if (lane == 0) sh[w] = v;
    __syncthreads();
    return warp_sum(lane < nw ? sh[lane] : 0.0f);
}
__device__ float block_max(float v, float *sh) {
    int lane = threadIdx.x & 31, w = threadIdx.x >> 5, nw = blockDim.x >> 5;
    v = warp_max(v);
    __syncthreads();
    if (lane == 0) sh[w] = v;
    __syncthreads();
    return warp_max(lane < nw ? sh[lane] : -INFINITY);
}

/* ------------------------------------------------------------------ memory */

static void cuda_free(void *ctx) {
    cuda_ctx *c = CTX(ctx);
    if (!c) return;
    if (c->stream) cudaStreamSynchronize(c->stream);
    if (c->blas) cublasDestroy(c->blas);
    if (c->scratch) cudaFree(c->scratch);
    if (c->partials) cudaFree(c->partials);
    if (c->stream) cudaStreamDestroy(c->stream);
    free(c);
}

static const char *cuda_last_error(void *ctx) { return CTX(ctx)->err; }

static void *cuda_alloc(void *ctx, size_t bytes) {
    cuda_ctx *c = CTX(ctx);
    size_t n = bytes ? (bytes + 63) / 64 * 64 : 64; /* a unique pointer even for 0 bytes */
    void *p = NULL;
    cudaError_t e = cudaMalloc(&p, n);
    if (e != cudaSuccess) {
        cudaGetLastError();
        FAIL(c, "cudaMalloc of %zu bytes: %s", bytes, cudaGetErrorString(e));
        return NULL;
    }
    /* Zeroed on this stream: every later op on the stream sees the zeros. */
    e = cudaMemsetAsync(p, 0, n, c->stream);
    if (e != cudaSuccess) {
        FAIL(c, "cudaMemsetAsync zeroing %zu new bytes: %s", bytes, cudaGetErrorString(e));
        cudaFree(p);
        return NULL;
    }
    return p;
}

static void cuda_dealloc(void *ctx, void *p) {
    if (!p) return;
    cudaError_t e = cudaFree(p);
    if (e != cudaSuccess) FAIL(CTX(ctx), "cudaFree: %s", cudaGetErrorString(e));
}

/* Synchronous: the caller may free or reuse src as soon as this returns. */
static int cuda_upload(void *ctx, void *dst, const void *src, size_t bytes) {
    cuda_ctx *c = CTX(ctx);
    if (!bytes) return 0;
    CU(c, cudaMemcpyAsync(dst, src, bytes, cudaMemcpyHostToDevice, c->stream));
    CU(c, cudaStreamSynchronize(c->stream));
    return 0;
}

static int cuda_download(void *ctx, void *dst, const void *src, size_t bytes) {
    cuda_ctx *c = CTX(ctx);
    if (bytes) CU(c, cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToHost, c->stream));
    CU(c, cudaStreamSynchronize(c->stream));
    return 0;
}

static int cuda_copy(void *ctx, void *dst, const void *src, size_t bytes) {
    cuda_ctx *c = CTX(ctx);
    if (!bytes) return 0;
    CU(c, cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToDevice, c->stream));
    return 0;
}

static int cuda_zero(void *ctx, void *dst, size_t bytes) {
    cuda_ctx *c = CTX(ctx);
    if (!bytes) return 0;
    CU(c, cudaMemsetAsync(dst, 0, bytes, c->stream));
    return 0;
}

static int cuda_sync(void *ctx) {
    cuda_ctx *c = CTX(ctx);
    CU(c, cudaStreamSynchronize(c->stream));
    return 0;
}

/* ----------------------------------------------------------------- encoder */

__global__ void encoder_forward_kernel(float *out, const int *inp, const float *wte, const float *wpe, size_t N, int T,
                                       int C, int pos0) {
    size_t n = N * C;
    for (size_t idx = blockIdx.x * (size_t)blockDim.x + threadIdx.x; idx < n; idx += (size_t)gridDim.x * blockDim.x) {
        size_t i = idx / C;
        int c = (int)(idx % C), t = (int)(i % T);
        out[idx] = wte[(size_t)inp[i] * C + c] + (wpe ? wpe[(size_t)(pos0 + t) * C + c] : 0.0f);
    }
}

static int cuda_encoder_forward(void *ctx, float *out, const int *inp, const float *wte, const float *wpe, int B, int T,
                                int C, int pos0) {
    cuda_ctx *c = CTX(ctx);
    size_t N = (size_t)B * T;
    if (!N || !C) return 0;
    encoder_forward_kernel<<<grid_for(N * C, 256), 256, 0, c->stream>>>(out, inp, wte, wpe, N, T, C, pos0);
    LAUNCHED(c, "encoder_forward");
    return 0;
}

/* Token rows: several positions may carry the same token, so the adds are atomic. */
__global__ void encoder_backward_wte_kernel(float *dwte, const float *dout, const int *inp, size_t N, int C) {
    size_t n = N * C;
    for (size_t idx = blockIdx.x * (size_t)blockDim.x + threadIdx.x; idx < n; idx += (size_t)gridDim.x * blockDim.x) {
        size_t i = idx / C;
        int c = (int)(idx % C);
        atomicAdd(&dwte[(size_t)inp[i] * C + c], dout[idx]);
    }
}

/* Position rows: one thread per (t, c) adds the B rows in order (deterministic). */
__global__ void encoder_backward_wpe_kernel(float *dwpe, const float *dout, int B, int T, int C) {
    size_t n = (size_t)T * C;
    for (size_t idx = blockIdx.x * (size_t)blockDim.x + threadIdx.x; idx < n; idx += (size_t)gridDim.x * blockDim.x) {
        float s = dwpe[idx];
        for (int b = 0; b < B; b++) s += dout[(size_t)b * T * C + idx];
        dwpe[idx] = s;
    }
}

static int cuda_encoder_backward(void *ctx, float *dwte, float *dwpe, const float *dout, const int *inp, int B, int T,
                                 int C) {
    cuda_ctx *c = CTX(ctx);
    size_t N = (size_t)B * T;
    if (!N || !C) return 0;
    encoder_backward_wte_kernel<<<grid_for(N * C, 256), 256, 0, c->stream>>>(dwte, dout, inp, N, C);
    LAUNCHED(c, "encoder_backward (wte)");
    if (!dwpe) return 0; /* no learned positions (the Llama family) */
    encoder_backward_wpe_kernel<<<grid_for((size_t)T * C, 256), 256, 0, c->stream>>>(dwpe, dout, B, T, C);
    LAUNCHED(c, "encoder_backward (wpe)");
    return 0;
}

/* --------------------------------------------------------------- layernorm */

/* One warp per row; 8 rows per 256-thread block. */
#define ROWS_PER_BLOCK 8

__global__ void layernorm_forward_kernel(float *out, float *mean, float *rstd, const float *inp, const float *w,
                                         const float *b, int N, int C) {
    int row = blockIdx.x * ROWS_PER_BLOCK + (threadIdx.x >> 5), lane = threadIdx.x & 31;
    if (row >= N) return; /* whole warps leave together; no block barrier follows */
    const float *x = inp + (size_t)row * C;
    float s = 0.0f;
    for (int i = lane; i < C; i += 32) s += x[i];
    float m = warp_sum(s) / C;
    float v = 0.0f;
    for (int i = lane; i < C; i += 32) {
        float d = x[i] - m;
        v += d * d;
    }
    v = warp_sum(v) / C;
    float rs = 1.0f / sqrtf(v + 1e-5f);
    float *o = out + (size_t)row * C;
    for (int i = lane; i < C; i += 32) o[i] = (x[i] - m) * rs * w[i] + b[i];
    if (lane == 0) {
        if (mean) mean[row] = m;
        if (rstd) rstd[row] = rs;
    }
}

static int cuda_layernorm_forward(void *ctx, float *out, float *mean, float *rstd, const float *inp,
                                  const float *weight, const float *bias, int N, int C) {
    cuda_ctx *c = CTX(ctx);
    if (N <= 0 || C <= 0) return 0;
    unsigned grid = (unsigned)((N + ROWS_PER_BLOCK - 1) / ROWS_PER_BLOCK);
    layernorm_forward_kernel<<<grid, 32 * ROWS_PER_BLOCK, 0, c->stream>>>(out, mean, rstd, inp, weight, bias, N, C);
    LAUNCHED(c, "layernorm_forward");
    return 0;
}

/* dinp rows: one warp per row. */
__global__ void layernorm_backward_rows_kernel(float *dinp, const float *dout, const float *inp, const float *w,
                                               const float *mean, const float *rstd, int N, int C) {
    int row = blockIdx.x * ROWS_PER_BLOCK + (threadIdx.x >> 5), lane = threadIdx.x & 31;
    if (row >= N) return;
    const float *x = inp + (size_t)row * C, *dy = dout + (size_t)row * C;
    float m = mean[row], s = rstd[row];
    float dn_mean = 0.0f, dnx_mean = 0.0f;
    for (int i = lane; i < C; i += 32) {
        float xh = (x[i] - m) * s, dn = w[i] * dy[i];
        dn_mean += dn;
        dnx_mean += dn * xh;
    }
    dn_mean = warp_sum(dn_mean) / C;
    dnx_mean = warp_sum(dnx_mean) / C;
    float *dx = dinp + (size_t)row * C;
    for (int i = lane; i < C; i += 32) {
        float xh = (x[i] - m) * s, dn = w[i] * dy[i];
        dx[i] += s * (dn - dn_mean - xh * dnx_mean);
    }
}

/* Column sums: a block owns 32 channels; its 16 warps take every 16th row and
 * the 16 partial sums are added in a fixed order (deterministic, no atomics). */
#define COL_ROWS 16

__global__ void layernorm_backward_cols_kernel(float *dweight, float *dbias, const float *dout, const float *inp,
                                               const float *mean, const float *rstd, int N, int C) {
    __shared__ float sw[COL_ROWS][33], sb[COL_ROWS][33];
    int tx = threadIdx.x & 31, ty = threadIdx.x >> 5;
    int c = blockIdx.x * 32 + tx;
    float dw = 0.0f, db = 0.0f;
    if (c < C) {
        for (int i = ty; i < N; i += COL_ROWS) {
            float dy = dout[(size_t)i * C + c];
            db += dy;
            dw += (inp[(size_t)i * C + c] - mean[i]) * rstd[i] * dy;
        }
    }
    sw[ty][tx] = dw;
    sb[ty][tx] = db;
    __syncthreads();
    if (ty == 0 && c < C) {
        float w = 0.0f, b = 0.0f;
        for (int k = 0; k < COL_ROWS; k++) {
            w += sw[k][tx];
            b += sb[k][tx];
        }
        dweight[c] += w;
        dbias[c] += b;
    }
}

/* dst[c] += sum over rows of src[i, c]  (bias gradients), same scheme as above. */
__global__ void colsum_add_kernel(float *dst, const float *src, int N, int M) {
    __shared__ float sh[COL_ROWS][33];
    int tx = threadIdx.x & 31, ty = threadIdx.x >> 5;
    int c = blockIdx.x * 32 + tx;
    float s = 0.0f;
    if (c < M)
        for (int i = ty; i < N; i += COL_ROWS) s += src[(size_t)i * M + c];
    sh[ty][tx] = s;
    __syncthreads();
    if (ty == 0 && c < M) {
        float t = 0.0f;
        for (int k = 0; k < COL_ROWS; k++) t += sh[k][tx];
        dst[c] += t;
    }
}

static int cuda_layernorm_backward(void *ctx, float *dinp, float *dweight, float *dbias, const float *dout,
                                   const float *inp, const float *weight, const float *mean, const float *rstd, int N,
                                   int C) {
    cuda_ctx *c = CTX(ctx);
    if (N <= 0 || C <= 0) return 0;
    unsigned grid = (unsigned)((N + ROWS_PER_BLOCK - 1) / ROWS_PER_BLOCK);
    layernorm_backward_rows_kernel<<<grid, 32 * ROWS_PER_BLOCK, 0, c->stream>>>(dinp, dout, inp, weight, mean, rstd, N,
                                                                                C);
    LAUNCHED(c, "layernorm_backward (rows)");
    layernorm_backward_cols_kernel<<<(unsigned)((C + 31) / 32), 32 * COL_ROWS, 0, c->stream>>>(dweight, dbias, dout,
                                                                                               inp, mean, rstd, N, C);
    LAUNCHED(c, "layernorm_backward (columns)");
    return 0;
}

/* ------------------------------------------------------------------ matmul */

__global__ void add_bias_kernel(float *out, const float *bias, size_t N, int OC) {
    size_t n = N * OC;
    for (size_t idx = blockIdx.x * (size_t)blockDim.x + threadIdx.x; idx < n; idx += (size_t)gridDim.x * blockDim.x)
        out[idx] += bias[idx % OC];
}

/* Row-major (N,OC) = (N,IC) @ (OC,IC)^T is, column-major, out^T = W^T-as-stored
 * @ inp^T: see the comment in backend.h. */
static int cuda_matmul_forward(void *ctx, float *out, const float *inp, const float *weight, const float *bias, int N,
                               int IC, int OC) {
    cuda_ctx *c = CTX(ctx);
    if (N <= 0 || OC <= 0) return 0;
    const float one = 1.0f, zero = 0.0f;
    if (IC <= 0) return cuda_zero(ctx, out, (size_t)N * OC * sizeof(float));
    BLAS(c, "matmul_forward sgemm",
         cublasSgemm(c->blas, CUBLAS_OP_T, CUBLAS_OP_N, OC, N, IC, &one, weight, IC, inp, IC, &zero, out, OC));
    if (bias) {
        add_bias_kernel<<<grid_for((size_t)N * OC, 256), 256, 0, c->stream>>>(out, bias, N, OC);
        LAUNCHED(c, "matmul_forward (bias)");
    }
    return 0;
}

static int cuda_matmul_backward(void *ctx, float *dinp, float *dweight, float *dbias, const float *dout,
                                const float *inp, const float *weight, int N, int IC, int OC) {
    cuda_ctx *c = CTX(ctx);
    if (N <= 0 || IC <= 0 || OC <= 0) return 0;
    const float one = 1.0f, zero = 0.0f;
    /* dinp (N,IC) = dout (N,OC) @ W (OC,IC): column-major dinp^T = W^T @ dout^T */
    BLAS(c, "matmul_backward dinp sgemm",
         cublasSgemm(c->blas, CUBLAS_OP_N, CUBLAS_OP_N, IC, N, OC, &one, weight, IC, dout, OC, &zero, dinp, IC));
    /* dW (OC,IC) += dout^T @ inp: column-major dW^T (IC,OC) += inp^T @ dout */
    BLAS(c, "matmul_backward dweight sgemm",
         cublasSgemm(c->blas, CUBLAS_OP_N, CUBLAS_OP_T, IC, OC, N, &one, inp, IC, dout, OC, &one, dweight, IC));
    if (dbias) {
        colsum_add_kernel<<<(unsigned)((OC + 31) / 32), 32 * COL_ROWS, 0, c->stream>>>(dbias, dout, N, OC);
        LAUNCHED(c, "matmul_backward (bias)");
    }
    return 0;
}

/* --------------------------------------------------------------- attention */

/* Tiled (FlashAttention-style) causal attention: no T x T matrix anywhere.
 * One thread per query row (forward, dq) or key row (dk, dv), blocks of
 * FA_ROWS rows; the other side is streamed through shared memory FA_ROWS rows
 * at a time, and tiles wholly above the diagonal are skipped. The forward keeps
 * a running max and sum per row (online softmax) and stores the row's
 * log-sum-exp; backward recomputes p = exp(s - lse) from it. Every sum is one
 * thread's loop in key (or query) order, so results are deterministic. Rows
 * that each thread owns live in shared memory with a stride of hs + 1 floats,
 * so the 32 threads of a warp reading element i of their rows hit 32 banks. */
#define FA_ROWS 32

static size_t fa_fwd_smem(int hs) {
    return sizeof(float) * (2 * (size_t)FA_ROWS * hs + 2 * (size_t)FA_ROWS * (hs + 1));
}
static size_t fa_dkdv_smem(int hs) {
    return sizeof(float) * (2 * (size_t)FA_ROWS * hs + 2 * FA_ROWS + 4 * (size_t)FA_ROWS * (hs + 1));
}
static size_t fa_dq_smem(int hs) {
    return sizeof(float) * (2 * (size_t)FA_ROWS * hs + FA_ROWS + 3 * (size_t)FA_ROWS * (hs + 1));
}

__global__ void fa_forward_kernel(float *out, float *lse, const float *qkv, int T, int C, int NH, float scale) {
    extern __shared__ float sm[];
    int hs = C / NH, hp = hs + 1, C3 = 3 * C;
    int h = blockIdx.y, b = blockIdx.z, i0 = blockIdx.x * FA_ROWS, r = threadIdx.x, t = i0 + r;
    float *ks = sm, *vs = ks + FA_ROWS * hs, *qs = vs + FA_ROWS * hs, *acc = qs + FA_ROWS * hp;
    const float *base = qkv + (size_t)b * T * C3 + h * hs;
    float *q = qs + r * hp, *a = acc + r * hp;
    for (int i = 0; i < hs; i++) {
        q[i] = t < T ? base[(size_t)t * C3 + i] : 0.0f;
        a[i] = 0.0f;
    }
    float m = -INFINITY, l = 0.0f;
    int last = i0 + FA_ROWS < T ? i0 + FA_ROWS : T; /* keys past the block's last query: none */
    for (int j0 = 0; j0 < last; j0 += FA_ROWS) {
        int nk = last - j0 < FA_ROWS ? last - j0 : FA_ROWS;
        __syncthreads();
        for (int e = threadIdx.x; e < nk * hs; e += blockDim.x) {
            int j = e / hs, i = e % hs;
            ks[e] = base[(size_t)(j0 + j) * C3 + C + i];
            vs[e] = base[(size_t)(j0 + j) * C3 + 2 * C + i];
        }
        __syncthreads();
        if (t >= T) continue;
        int nv = t - j0 + 1 < nk ? t - j0 + 1 : nk;
        float s[FA_ROWS], mt = m;
#pragma unroll
        for (int j = 0; j < FA_ROWS; j++) {
            s[j] = -INFINITY;
            if (j < nv) {
                const float *kj = ks + j * hs;
                float d = 0.0f;
                for (int i = 0; i < hs; i++) d += q[i] * kj[i];
                s[j] = d * scale;
                mt = fmaxf(mt, s[j]);
            }
        }
        if (nv <= 0) continue;
        float corr = expf(m - mt), sum = 0.0f;
#pragma unroll
        for (int j = 0; j < FA_ROWS; j++) {
            s[j] = j < nv ? expf(s[j] - mt) : 0.0f;
            sum += s[j];
        }
        l = l * corr + sum;
        m = mt;
        for (int i = 0; i < hs; i++) {
            float x = a[i] * corr;
#pragma unroll
            for (int j = 0; j < FA_ROWS; j++)
                if (j < nv) x += s[j] * vs[j * hs + i];
            a[i] = x;
        }
    }
    if (t < T) {
        float inv = 1.0f / l, *o = out + ((size_t)b * T + t) * C + h * hs;
        for (int i = 0; i < hs; i++) o[i] = a[i] * inv;
        lse[((size_t)b * NH + h) * T + t] = m + logf(l);
    }
}

/* D[b,h,t] = dout[b,t,h] . out[b,t,h], one thread per (b, h, t). */
__global__ void fa_rowdot_kernel(float *D, const float *dout, const float *out, int B, int T, int C, int NH) {
    size_t n = (size_t)B * NH * T;
    int hs = C / NH;
    for (size_t idx = blockIdx.x * (size_t)blockDim.x + threadIdx.x; idx < n; idx += (size_t)gridDim.x * blockDim.x) {
        int t = (int)(idx % T), h = (int)(idx / T % NH), b = (int)(idx / T / NH);
        const float *dy = dout + ((size_t)b * T + t) * C + h * hs, *o = out + ((size_t)b * T + t) * C + h * hs;
        float s = 0.0f;
        for (int i = 0; i < hs; i++) s += dy[i] * o[i];
        D[idx] = s;
    }
}

/* dk and dv of key row j = j0 + threadIdx.x: queries t >= j streamed in tiles. */
__global__ void fa_dkdv_kernel(float *dqkv, const float *dout, const float *qkv, const float *lse, const float *D,
                               int T, int C, int NH, float scale) {
    extern __shared__ float sm[];
    int hs = C / NH, hp = hs + 1, C3 = 3 * C;
    int h = blockIdx.y, b = blockIdx.z, j0 = blockIdx.x * FA_ROWS, r = threadIdx.x, j = j0 + r;
    float *qs = sm, *ds = qs + FA_ROWS * hs, *ls = ds + FA_ROWS * hs, *Ds = ls + FA_ROWS;
    float *kr = Ds + FA_ROWS + r * hp, *vr = kr + FA_ROWS * hp, *dk = vr + FA_ROWS * hp, *dv = dk + FA_ROWS * hp;
    const float *base = qkv + (size_t)b * T * C3 + h * hs;
    const float *dy = dout + (size_t)b * T * C + h * hs;
    const float *lrow = lse + ((size_t)b * NH + h) * T, *Drow = D + ((size_t)b * NH + h) * T;
    for (int i = 0; i < hs; i++) {
        kr[i] = j < T ? base[(size_t)j * C3 + C + i] : 0.0f;
        vr[i] = j < T ? base[(size_t)j * C3 + 2 * C + i] : 0.0f;
        dk[i] = dv[i] = 0.0f;
    }
    for (int i0 = j0; i0 < T; i0 += FA_ROWS) {
        int nq = T - i0 < FA_ROWS ? T - i0 : FA_ROWS;
        __syncthreads();
        for (int e = threadIdx.x; e < nq * hs; e += blockDim.x) {
            int t = e / hs, i = e % hs;
            qs[e] = base[(size_t)(i0 + t) * C3 + i];
            ds[e] = dy[(size_t)(i0 + t) * C + i];
        }
        for (int e = threadIdx.x; e < nq; e += blockDim.x) {
            ls[e] = lrow[i0 + e];
            Ds[e] = Drow[i0 + e];
        }
        __syncthreads();
        if (j >= T) continue;
        for (int tq = 0; tq < nq; tq++) {
            if (i0 + tq < j) continue;
            const float *qt = qs + tq * hs, *dt = ds + tq * hs;
            float s = 0.0f, dp = 0.0f;
            for (int i = 0; i < hs; i++) {
                s += qt[i] * kr[i];
                dp += dt[i] * vr[i];
            }
            float p = expf(s * scale - ls[tq]), dsc = p * (dp - Ds[tq]) * scale;
            for (int i = 0; i < hs; i++) {
                dv[i] += p * dt[i];
                dk[i] += dsc * qt[i];
            }
        }
    }
    if (j < T) {
        float *d = dqkv + ((size_t)b * T + j) * C3 + h * hs;
        for (int i = 0; i < hs; i++) {
            d[C + i] = dk[i];
            d[2 * C + i] = dv[i];
        }
    }
}

/* dq of query row t = i0 + threadIdx.x: keys j <= t streamed in tiles. */
__global__ void fa_dq_kernel(float *dqkv, const float *dout, const float *qkv, const float *lse, const float *D, int T,
                             int C, int NH, float scale) {
    extern __shared__ float sm[];
    int hs = C / NH, hp = hs + 1, C3 = 3 * C;
    int h = blockIdx.y, b = blockIdx.z, i0 = blockIdx.x * FA_ROWS, r = threadIdx.x, t = i0 + r;
    float *ks = sm, *vs = ks + FA_ROWS * hs, *pad = vs + FA_ROWS * hs;
    float *qr = pad + FA_ROWS + r * hp, *dr = qr + FA_ROWS * hp, *dq = dr + FA_ROWS * hp;
    const float *base = qkv + (size_t)b * T * C3 + h * hs;
    for (int i = 0; i < hs; i++) {
        qr[i] = t < T ? base[(size_t)t * C3 + i] : 0.0f;
        dr[i] = t < T ? dout[((size_t)b * T + t) * C + h * hs + i] : 0.0f;
        dq[i] = 0.0f;
    }
    float lt = t < T ? lse[((size_t)b * NH + h) * T + t] : 0.0f;
    float Dt = t < T ? D[((size_t)b * NH + h) * T + t] : 0.0f;
    int last = i0 + FA_ROWS < T ? i0 + FA_ROWS : T;
    for (int j0 = 0; j0 < last; j0 += FA_ROWS) {
        int nk = last - j0 < FA_ROWS ? last - j0 : FA_ROWS;
        __syncthreads();
        for (int e = threadIdx.x; e < nk * hs; e += blockDim.x) {
            int j = e / hs, i = e % hs;
            ks[e] = base[(size_t)(j0 + j) * C3 + C + i];
            vs[e] = base[(size_t)(j0 + j) * C3 + 2 * C + i];
        }
        __syncthreads();
        if (t >= T) continue;
        int nv = t - j0 + 1 < nk ? t - j0 + 1 : nk;
        for (int j = 0; j < nv; j++) {
            const float *kj = ks + j * hs, *vj = vs + j * hs;
            float s = 0.0f, dp = 0.0f;
            for (int i = 0; i < hs; i++) {
                s += qr[i] * kj[i];
                dp += dr[i] * vj[i];
            }
            float p = expf(s * scale - lt), dsc = p * (dp - Dt) * scale;
            for (int i = 0; i < hs; i++) dq[i] += dsc * kj[i];
        }
    }
    if (t < T) {
        float *d = dqkv + ((size_t)b * T + t) * C3 + h * hs;
        for (int i = 0; i < hs; i++) d[i] = dq[i];
    }
}

static int check_heads(cuda_ctx *c, const char *op, int C, int NH) {
    if (NH <= 0 || C % NH != 0) return FAIL(c, "%s: width %d is not a multiple of the head count %d", op, C, NH);
    return 0;
}

/* Lets kernel use smem bytes of dynamic shared memory (over 48 KiB needs an
 * opt-in per kernel), or says why it cannot. */
static int fa_smem(cuda_ctx *c, const void *kernel, size_t smem, const char *op, int hs) {
    int optin = 0;
    CU(c, cudaDeviceGetAttribute(&optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, c->device));
    if (smem > (size_t)optin)
        return FAIL(c, "%s: head size %d needs %zu bytes of shared memory per block, the device has %d", op, hs, smem,
                    optin);
    if (smem > 48 * 1024) CU(c, cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem));
    return 0;
}

static int cuda_attention_forward(void *ctx, float *out, float *lse, float *att, const float *qkv, int B, int T, int C,
                                  int NH) {
    cuda_ctx *c = CTX(ctx);
    if (check_heads(c, "attention_forward", C, NH)) return SPADE_POLICY_EBACKEND;
    if (B <= 0 || T <= 0) return 0;
    int hs = C / NH;
    if (B > 65535 || NH > 65535)
        return FAIL(c, "attention_forward: batch %d x heads %d: at most 65535 each (grid)", B, NH);
    size_t smem = fa_fwd_smem(hs);
    if (fa_smem(c, (const void *)fa_forward_kernel, smem, "attention_forward", hs)) return SPADE_POLICY_EBACKEND;
    dim3 grid((unsigned)((T + FA_ROWS - 1) / FA_ROWS), (unsigned)NH, (unsigned)B);
    fa_forward_kernel<<<grid, FA_ROWS, smem, c->stream>>>(out, lse, qkv, T, C, NH, 1.0f / sqrtf((float)hs));
    LAUNCHED(c, "attention_forward");
    return 0;
}

static int cuda_attention_backward(void *ctx, float *dqkv, const float *dout, const float *qkv, const float *out,
                                   const float *lse, const float *att, int B, int T, int C, int NH) {
    cuda_ctx *c = CTX(ctx);
    if (check_heads(c, "attention_backward", C, NH)) return SPADE_POLICY_EBACKEND;
    if (B <= 0 || T <= 0) return 0;
    int hs = C / NH;
    float scale = 1.0f / sqrtf((float)hs);
    if (B > 65535 || NH > 65535)
        return FAIL(c, "attention_backward: batch %d x heads %d: at most 65535 each (grid)", B, NH);
    size_t s1 = fa_dkdv_smem(hs), s2 = fa_dq_smem(hs);
    if (fa_smem(c, (const void *)fa_dkdv_kernel, s1, "attention_backward", hs) ||
        fa_smem(c, (const void *)fa_dq_kernel, s2, "attention_backward", hs))
        return SPADE_POLICY_EBACKEND;
    float *D = scratch(c, (size_t)B * NH * T);
    if (!D) return SPADE_POLICY_EBACKEND;
    fa_rowdot_kernel<<<grid_for((size_t)B * NH * T, 256), 256, 0, c->stream>>>(D, dout, out, B, T, C, NH);
    LAUNCHED(c, "attention_backward (row dots)");
    dim3 grid((unsigned)((T + FA_ROWS - 1) / FA_ROWS), (unsigned)NH, (unsigned)B);
    fa_dkdv_kernel<<<grid, FA_ROWS, s1, c->stream>>>(dqkv, dout, qkv, lse, D, T, C, NH, scale);
    LAUNCHED(c, "attention_backward (dk, dv)");
    fa_dq_kernel<<<grid, FA_ROWS, s2, c->stream>>>(dqkv, dout, qkv, lse, D, T, C, NH, scale);
    LAUNCHED(c, "attention_backward (dq)");
    return 0;
}

__global__ void kv_store_kernel(float *kcache, float *vcache, const float *qkv, int B, int T, int C, int pos0,
                                int maxT) {
    size_t n = (size_t)B * T * C;
    for (size_t idx = blockIdx.x * (size_t)blockDim.x + threadIdx.x; idx < n; idx += (size_t)gridDim.x * blockDim.x) {
        size_t bt = idx / C;
        int c = (int)(idx % C), t = (int)(bt % T), b = (int)(bt / T);
        const float *row = qkv + bt * 3 * C;
        size_t dst = ((size_t)b * maxT + pos0 + t) * C + c;
        kcache[dst] = row[C + c];
        vcache[dst] = row[2 * C + c];
    }
}

/* One block per (b, h, t) query: scores against the pos0+t+1 cached keys in
 * shared memory, softmax, weighted sum of values. Each dot product and each
 * output sum runs in the reference's order; only the softmax denominator and
 * max are tree reductions. Dynamic shared memory: hs + pos0 + T floats. */
#define KV_THREADS 128

__global__ void kv_attend_kernel(float *out, const float *qkv, const float *kcache, const float *vcache, int T, int C,
                                 int NH, int pos0, int maxT, float scale) {
    extern __shared__ float smem[];
    __shared__ float red[32];
    int hs = C / NH;
    int t = blockIdx.x % T, h = (blockIdx.x / T) % NH, b = blockIdx.x / (T * NH);
    int nk = pos0 + t + 1;
    float *q = smem, *sc = smem + hs;
    const float *qg = qkv + ((size_t)b * T + t) * 3 * C + h * hs;
    const float *kb = kcache + (size_t)b * maxT * C + h * hs;
    const float *vb = vcache + (size_t)b * maxT * C + h * hs;
    for (int i = threadIdx.x; i < hs; i += blockDim.x) q[i] = qg[i];
    __syncthreads();
    float mx = -INFINITY;
    for (int j = threadIdx.x; j < nk; j += blockDim.x) {
        const float *kj = kb + (size_t)j * C;
        float s = 0.0f;
        for (int i = 0; i < hs; i++) s += q[i] * kj[i];
        s *= scale;
        sc[j] = s;
        mx = fmaxf(mx, s);
    }
    mx = block_max(mx, red);
    float sum = 0.0f;
    for (int j = threadIdx.x; j < nk; j += blockDim.x) {
        float e = expf(sc[j] - mx);
        sc[j] = e;
        sum += e;
    }
    float inv = 1.0f / block_sum(sum, red); /* its barriers also publish sc[] */
    float *o = out + ((size_t)b * T + t) * C + h * hs;
    for (int i = threadIdx.x; i < hs; i += blockDim.x) {
        float acc = 0.0f;
        for (int j = 0; j < nk; j++) acc += (sc[j] * inv) * vb[(size_t)j * C + i];
        o[i] = acc;
    }
}

static int cuda_attention_forward_kv(void *ctx, float *out, const float *qkv, float *kcache, float *vcache, int B,
                                     int T, int C, int NH, int pos0, int maxT) {
    cuda_ctx *c = CTX(ctx);
    if (check_heads(c, "attention_forward_kv", C, NH)) return SPADE_POLICY_EBACKEND;
    if (pos0 < 0 || pos0 + T > maxT)
        return FAIL(c, "attention_forward_kv: positions %d..%d outside the context %d", pos0, pos0 + T - 1, maxT);
    if (B <= 0 || T <= 0) return 0;
    int hs = C / NH;
    kv_store_kernel<<<grid_for((size_t)B * T * C, 256), 256, 0, c->stream>>>(kcache, vcache, qkv, B, T, C, pos0, maxT);
    LAUNCHED(c, "attention_forward_kv (cache store)");
    size_t smem = (size_t)(hs + pos0 + T) * sizeof(float);
    if (smem > 48 * 1024 && smem > c->kv_smem_ok) {
        /* Past 48 KiB a kernel must opt in to more shared memory. */
        int maxopt = 0;
        CU(c, cudaDeviceGetAttribute(&maxopt, cudaDevAttrMaxSharedMemoryPerBlockOptin, c->device));
        if (smem > (size_t)maxopt - 1024)
            return FAIL(c,
                        "attention_forward_kv: %d cached positions need %zu bytes of shared "
                        "memory; this GPU allows %d per block (use a shorter policy.context)",
                        pos0 + T, smem, maxopt);
        CU(c, cudaFuncSetAttribute(kv_attend_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem));
        c->kv_smem_ok = smem;
    }
    float scale = 1.0f / sqrtf((float)hs);
    kv_attend_kernel<<<(unsigned)((size_t)B * NH * T), KV_THREADS, smem, c->stream>>>(out, qkv, kcache, vcache, T, C,
                                                                                      NH, pos0, maxT, scale);
    LAUNCHED(c, "attention_forward_kv (attend)");
    return 0;
}

/* ------------------------------------------- the decoding batch (per-row slots) */

__global__ void encoder_forward_at_kernel(float *out, const int *inp, const int *pos, const float *wte,
                                          const float *wpe, int N, int C) {
    size_t n = (size_t)N * C;
    for (size_t idx = blockIdx.x * (size_t)blockDim.x + threadIdx.x; idx < n; idx += (size_t)gridDim.x * blockDim.x) {
        size_t i = idx / C;
        int c = (int)(idx % C);
        out[idx] = wte[(size_t)inp[i] * C + c] + (wpe ? wpe[(size_t)pos[i] * C + c] : 0.0f);
    }
}

static int cuda_encoder_forward_at(void *ctx, float *out, const int *inp, const int *pos, const float *wte,
                                   const float *wpe, int N, int C) {
    cuda_ctx *c = CTX(ctx);
    if (N <= 0) return 0;
    encoder_forward_at_kernel<<<grid_for((size_t)N * C, 256), 256, 0, c->stream>>>(out, inp, pos, wte, wpe, N, C);
    LAUNCHED(c, "encoder_forward_at");
    return 0;
}

/* Rows of qkv are qstride apart with k at [C, C+KW) and v at [C+KW, C+2KW);
 * a cache position holds KW floats (the GPT: qstride 3C, KW = C; grouped
 * key/value heads: qstride C+2KW, KW = KVH*hs). */
__global__ void kv_store_at_kernel(float *kcache, float *vcache, const float *qkv, const int *slot, const int *pos,
                                   int N, int C, int maxT, int qstride, int KW) {
    size_t n = (size_t)N * KW;
    for (size_t idx = blockIdx.x * (size_t)blockDim.x + threadIdx.x; idx < n; idx += (size_t)gridDim.x * blockDim.x) {
        size_t i = idx / KW;
        int c = (int)(idx % KW);
        const float *row = qkv + i * qstride;
        size_t dst = ((size_t)slot[i] * maxT + pos[i]) * KW + c;
        kcache[dst] = row[C + c];
        vcache[dst] = row[C + KW + c];
    }
}

/* kv_attend_kernel with the row's own slot and length: one block per (row,
 * head), the same order of operations inside each output. Dynamic shared
 * memory: hs + maxlen floats. */
__global__ void kv_attend_at_kernel(float *out, const float *qkv, const float *kcache, const float *vcache,
                                    const int *slot, const int *pos, int C, int NH, int maxT, float scale, int qstride,
                                    int KW, int group) {
    extern __shared__ float smem[];
    __shared__ float red[32];
    int hs = C / NH;
    int h = blockIdx.x % NH, i = blockIdx.x / NH;
    int nk = pos[i] + 1;
    float *q = smem, *sc = smem + hs;
    const float *qg = qkv + (size_t)i * qstride + h * hs;
    /* query head h reads key/value head h / group */
    const float *kb = kcache + (size_t)slot[i] * maxT * KW + (h / group) * hs;
    const float *vb = vcache + (size_t)slot[i] * maxT * KW + (h / group) * hs;
    for (int k = threadIdx.x; k < hs; k += blockDim.x) q[k] = qg[k];
    __syncthreads();
    float mx = -INFINITY;
    for (int j = threadIdx.x; j < nk; j += blockDim.x) {
        const float *kj = kb + (size_t)j * KW;
        float s = 0.0f;
        for (int k = 0; k < hs; k++) s += q[k] * kj[k];
        s *= scale;
        sc[j] = s;
        mx = fmaxf(mx, s);
    }
    mx = block_max(mx, red);
    float sum = 0.0f;
    for (int j = threadIdx.x; j < nk; j += blockDim.x) {
        float e = expf(sc[j] - mx);
        sc[j] = e;
        sum += e;
    }
    float inv = 1.0f / block_sum(sum, red); /* its barriers also publish sc[] */
    float *o = out + (size_t)i * C + h * hs;
    for (int k = threadIdx.x; k < hs; k += blockDim.x) {
        float acc = 0.0f;
        for (int j = 0; j < nk; j++) acc += (sc[j] * inv) * vb[(size_t)j * KW + k];
        o[k] = acc;
    }
}

static int kv_at_launch(cuda_ctx *c, float *out, const float *qkv, float *kcache, float *vcache, const int *slot,
                        const int *pos, int N, int C, int NH, int KVH, int maxT, int maxlen);

static int cuda_attention_forward_kv_at(void *ctx, float *out, const float *qkv, float *kcache, float *vcache,
                                        const int *slot, const int *pos, int N, int C, int NH, int S, int maxT,
                                        int maxlen) {
    (void)S;
    return kv_at_launch(CTX(ctx), out, qkv, kcache, vcache, slot, pos, N, C, NH, NH, maxT, maxlen);
}

static int cuda_attention_forward_kv_at_gqa(void *ctx, float *out, const float *qkv, float *kcache, float *vcache,
                                            const int *slot, const int *pos, int N, int C, int NH, int KVH, int S,
                                            int maxT, int maxlen) {
    cuda_ctx *c = CTX(ctx);
    (void)S;
    if (KVH < 1 || NH % KVH)
        return FAIL(c, "attention_forward_kv_at_gqa: %d key/value heads do not divide %d heads", KVH, NH);
    return kv_at_launch(c, out, qkv, kcache, vcache, slot, pos, N, C, NH, KVH, maxT, maxlen);
}

/* KVH = NH with the GPT's (N, 3C) rows is attention_forward_kv_at; KVH < NH
 * reads compact (N, C + 2 KVH hs) rows and a cache of KVH heads. */
static int kv_at_launch(cuda_ctx *c, float *out, const float *qkv, float *kcache, float *vcache, const int *slot,
                        const int *pos, int N, int C, int NH, int KVH, int maxT, int maxlen) {
    if (check_heads(c, "attention_forward_kv_at", C, NH)) return SPADE_POLICY_EBACKEND;
    if (maxlen < 1 || maxlen > maxT)
        return FAIL(c, "attention_forward_kv_at: maxlen %d outside 1..%d (the context)", maxlen, maxT);
    if (N <= 0) return 0;
    int hs = C / NH, KW = KVH * hs, qstride = KVH == NH ? 3 * C : C + 2 * KW;
    kv_store_at_kernel<<<grid_for((size_t)N * KW, 256), 256, 0, c->stream>>>(kcache, vcache, qkv, slot, pos, N, C, maxT,
                                                                             qstride, KW);
    LAUNCHED(c, "attention_forward_kv_at (cache store)");
    size_t smem = (size_t)(hs + maxlen) * sizeof(float);
    if (smem > 48 * 1024 && smem > c->kv_at_smem_ok) {
        int maxopt = 0;
        CU(c, cudaDeviceGetAttribute(&maxopt, cudaDevAttrMaxSharedMemoryPerBlockOptin, c->device));
        if (smem > (size_t)maxopt - 1024)
            return FAIL(c,
                        "attention_forward_kv_at: %d cached positions need %zu bytes of shared "
                        "memory; this GPU allows %d per block (use a shorter policy.context)",
                        maxlen, smem, maxopt);
        CU(c, cudaFuncSetAttribute(kv_attend_at_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem));
        c->kv_at_smem_ok = smem;
    }
    float scale = 1.0f / sqrtf((float)hs);
    kv_attend_at_kernel<<<(unsigned)((size_t)N * NH), KV_THREADS, smem, c->stream>>>(
        out, qkv, kcache, vcache, slot, pos, C, NH, maxT, scale, qstride, KW, NH / KVH);
    LAUNCHED(c, "attention_forward_kv_at (attend)");
    return 0;
}

/* ------------------------------------------------------------- elementwise */

#define GELU_K 0.7978845608028654f /* sqrt(2/pi) */

__global__ void gelu_forward_kernel(float *out, const float *inp, size_t n) {
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x) {
        float x = inp[i];
        out[i] = 0.5f * x * (1.0f + tanhf(GELU_K * (x + 0.044715f * x * x * x)));
    }
}

__global__ void gelu_backward_kernel(float *dinp, const float *inp, const float *dout, size_t n) {
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x) {
        float x = inp[i];
        float u = GELU_K * (x + 0.044715f * x * x * x);
        float th = tanhf(u);
        float sech2 = 1.0f - th * th;
        float g = 0.5f * (1.0f + th) + 0.5f * x * sech2 * GELU_K * (1.0f + 3.0f * 0.044715f * x * x);
        dinp[i] = g * dout[i];
    }
}

__global__ void residual_forward_kernel(float *out, const float *a, const float *b, size_t n) {
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x)
        out[i] = a[i] + b[i];
}

static int cuda_gelu_forward(void *ctx, float *out, const float *inp, size_t n) {
    cuda_ctx *c = CTX(ctx);
    if (!n) return 0;
    gelu_forward_kernel<<<grid_for(n, 256), 256, 0, c->stream>>>(out, inp, n);
    LAUNCHED(c, "gelu_forward");
    return 0;
}

static int cuda_gelu_backward(void *ctx, float *dinp, const float *inp, const float *dout, size_t n) {
    cuda_ctx *c = CTX(ctx);
    if (!n) return 0;
    gelu_backward_kernel<<<grid_for(n, 256), 256, 0, c->stream>>>(dinp, inp, dout, n);
    LAUNCHED(c, "gelu_backward");
    return 0;
}

static int cuda_residual_forward(void *ctx, float *out, const float *a, const float *b, size_t n) {
    cuda_ctx *c = CTX(ctx);
    if (!n) return 0;
    residual_forward_kernel<<<grid_for(n, 256), 256, 0, c->stream>>>(out, a, b, n);
    LAUNCHED(c, "residual_forward");
    return 0;
}

/* ------------------------------- the Llama family: RMSNorm, RoPE, SwiGLU, GQA */

__global__ void rmsnorm_forward_kernel(float *out, float *rstd, const float *inp, const float *w, int N, int C,
                                       float eps) {
    int row = blockIdx.x * ROWS_PER_BLOCK + (threadIdx.x >> 5), lane = threadIdx.x & 31;
    if (row >= N) return;
    const float *x = inp + (size_t)row * C;
    float v = 0.0f;
    for (int i = lane; i < C; i += 32) v += x[i] * x[i];
    float rs = 1.0f / sqrtf(warp_sum(v) / C + eps);
    float *o = out + (size_t)row * C;
    for (int i = lane; i < C; i += 32) o[i] = x[i] * rs * w[i];
    if (lane == 0 && rstd) rstd[row] = rs;
}

static int cuda_rmsnorm_forward(void *ctx, float *out, float *rstd, const float *inp, const float *weight, int N, int C,
                                float eps) {
    cuda_ctx *c = CTX(ctx);
    if (N <= 0 || C <= 0) return 0;
    unsigned grid = (unsigned)((N + ROWS_PER_BLOCK - 1) / ROWS_PER_BLOCK);
    rmsnorm_forward_kernel<<<grid, 32 * ROWS_PER_BLOCK, 0, c->stream>>>(out, rstd, inp, weight, N, C, eps);
    LAUNCHED(c, "rmsnorm_forward");
    return 0;
}

__global__ void rmsnorm_backward_rows_kernel(float *dinp, const float *dout, const float *inp, const float *w,
                                             const float *rstd, int N, int C) {
    int row = blockIdx.x * ROWS_PER_BLOCK + (threadIdx.x >> 5), lane = threadIdx.x & 31;
    if (row >= N) return;
    const float *x = inp + (size_t)row * C, *dy = dout + (size_t)row * C;
    float s = rstd[row], dnx = 0.0f;
    for (int i = lane; i < C; i += 32) dnx += w[i] * dy[i] * x[i] * s;
    dnx = warp_sum(dnx) / C;
    float *dx = dinp + (size_t)row * C;
    for (int i = lane; i < C; i += 32) dx[i] += s * (w[i] * dy[i] - x[i] * s * dnx);
}

__global__ void rmsnorm_backward_cols_kernel(float *dweight, const float *dout, const float *inp, const float *rstd,
                                             int N, int C) {
    __shared__ float sw[COL_ROWS][33];
    int tx = threadIdx.x & 31, ty = threadIdx.x >> 5;
    int c = blockIdx.x * 32 + tx;
    float dw = 0.0f;
    if (c < C)
        for (int i = ty; i < N; i += COL_ROWS) dw += inp[(size_t)i * C + c] * rstd[i] * dout[(size_t)i * C + c];
    sw[ty][tx] = dw;
    __syncthreads();
    if (ty == 0 && c < C) {
        float t = 0.0f;
        for (int k = 0; k < COL_ROWS; k++) t += sw[k][tx];
        dweight[c] += t;
    }
}

static int cuda_rmsnorm_backward(void *ctx, float *dinp, float *dweight, const float *dout, const float *inp,
                                 const float *weight, const float *rstd, int N, int C) {
    cuda_ctx *c = CTX(ctx);
    if (N <= 0 || C <= 0) return 0;
    unsigned grid = (unsigned)((N + ROWS_PER_BLOCK - 1) / ROWS_PER_BLOCK);
    rmsnorm_backward_rows_kernel<<<grid, 32 * ROWS_PER_BLOCK, 0, c->stream>>>(dinp, dout, inp, weight, rstd, N, C);
    LAUNCHED(c, "rmsnorm_backward (rows)");
    rmsnorm_backward_cols_kernel<<<(unsigned)((C + 31) / 32), 32 * COL_ROWS, 0, c->stream>>>(dweight, dout, inp, rstd,
                                                                                             N, C);
    LAUNCHED(c, "rmsnorm_backward (columns)");
    return 0;
}

/* One thread per (row, pair): the angle in double, as on the CPU. */
__global__ void rope_kernel(float *x, const int *pos, int N, int T, int stride, int nheads, int hs, int rot, double lb,
                            int neox, int inverse) {
    int half = rot / 2;
    size_t n = (size_t)N * half;
    for (size_t idx = blockIdx.x * (size_t)blockDim.x + threadIdx.x; idx < n; idx += (size_t)gridDim.x * blockDim.x) {
        int i = (int)(idx / half), j = (int)(idx % half);
        double p = pos ? pos[i] : i % T;
        double th = p * exp(-2.0 * j / rot * lb);
        float cs = (float)cos(th), sn = (float)(inverse ? -sin(th) : sin(th));
        int a = neox ? j : 2 * j, b = neox ? j + half : 2 * j + 1;
        float *row = x + (size_t)i * stride;
        for (int h = 0; h < nheads; h++) {
            float *v = row + (size_t)h * hs;
            float x0 = v[a], x1 = v[b];
            v[a] = x0 * cs - x1 * sn;
            v[b] = x0 * sn + x1 * cs;
        }
    }
}

static int cuda_rope(void *ctx, float *x, const int *pos, int N, int T, int stride, int nheads, int hs, int rot,
                     float base, int neox, int inverse) {
    cuda_ctx *c = CTX(ctx);
    if (N <= 0 || rot < 2) return 0;
    rope_kernel<<<grid_for((size_t)N * (rot / 2), 256), 256, 0, c->stream>>>(x, pos, N, T, stride, nheads, hs, rot,
                                                                             log((double)base), neox, inverse);
    LAUNCHED(c, "rope");
    return 0;
}

__global__ void swiglu_forward_kernel(float *out, const float *inp, int N, int F) {
    size_t n = (size_t)N * F;
    for (size_t idx = blockIdx.x * (size_t)blockDim.x + threadIdx.x; idx < n; idx += (size_t)gridDim.x * blockDim.x) {
        size_t i = idx / F, j = idx % F;
        float g = inp[i * 2 * F + j], u = inp[i * 2 * F + F + j];
        out[idx] = g / (1.0f + expf(-g)) * u;
    }
}

__global__ void swiglu_backward_kernel(float *dinp, const float *inp, const float *dout, int N, int F) {
    size_t n = (size_t)N * F;
    for (size_t idx = blockIdx.x * (size_t)blockDim.x + threadIdx.x; idx < n; idx += (size_t)gridDim.x * blockDim.x) {
        size_t i = idx / F, j = idx % F;
        float g = inp[i * 2 * F + j], u = inp[i * 2 * F + F + j], dy = dout[idx];
        float sg = 1.0f / (1.0f + expf(-g));
        dinp[i * 2 * F + j] = dy * u * sg * (1.0f + g * (1.0f - sg));
        dinp[i * 2 * F + F + j] = dy * g * sg;
    }
}

static int cuda_swiglu_forward(void *ctx, float *out, const float *inp, int N, int F) {
    cuda_ctx *c = CTX(ctx);
    if (N <= 0 || F <= 0) return 0;
    swiglu_forward_kernel<<<grid_for((size_t)N * F, 256), 256, 0, c->stream>>>(out, inp, N, F);
    LAUNCHED(c, "swiglu_forward");
    return 0;
}

static int cuda_swiglu_backward(void *ctx, float *dinp, const float *inp, const float *dout, int N, int F) {
    cuda_ctx *c = CTX(ctx);
    if (N <= 0 || F <= 0) return 0;
    swiglu_backward_kernel<<<grid_for((size_t)N * F, 256), 256, 0, c->stream>>>(dinp, inp, dout, N, F);
    LAUNCHED(c, "swiglu_backward");
    return 0;
}

/* One thread per output element of the (N, 3C) expanded rows. */
__global__ void kv_expand_kernel(float *out, const float *inp, int N, int NH, int KVH, int hs) {
    size_t C = (size_t)NH * hs, KV = (size_t)KVH * hs, W = C + 2 * KV, n = (size_t)N * 3 * C;
    int g = NH / KVH;
    for (size_t idx = blockIdx.x * (size_t)blockDim.x + threadIdx.x; idx < n; idx += (size_t)gridDim.x * blockDim.x) {
        size_t i = idx / (3 * C), col = idx % (3 * C);
        const float *in = inp + i * W;
        if (col < C) {
            out[idx] = in[col];
        } else {
            size_t part = col < 2 * C ? 0 : 1, cc = col - C - part * C;
            size_t h = cc / hs, e = cc % hs;
            out[idx] = in[C + part * KV + (h / g) * hs + e];
        }
    }
}

/* One thread per input element of the (N, C+2KV) compact rows: a key/value
 * element sums its group's query heads in increasing h (deterministic). */
__global__ void kv_reduce_kernel(float *dinp, const float *dout, int N, int NH, int KVH, int hs) {
    size_t C = (size_t)NH * hs, KV = (size_t)KVH * hs, W = C + 2 * KV, n = (size_t)N * W;
    int g = NH / KVH;
    for (size_t idx = blockIdx.x * (size_t)blockDim.x + threadIdx.x; idx < n; idx += (size_t)gridDim.x * blockDim.x) {
        size_t i = idx / W, col = idx % W;
        const float *d = dout + i * 3 * C;
        if (col < C) {
            dinp[idx] = d[col];
        } else {
            size_t part = col < C + KV ? 0 : 1, cc = col - C - part * KV;
            size_t kh = cc / hs, e = cc % hs;
            float s = 0.0f;
            for (int k = 0; k < g; k++) s += d[C + part * C + (kh * g + k) * hs + e];
            dinp[idx] = s;
        }
    }
}

static int cuda_kv_expand(void *ctx, float *out, const float *inp, int N, int NH, int KVH, int hs) {
    cuda_ctx *c = CTX(ctx);
    if (N <= 0) return 0;
    kv_expand_kernel<<<grid_for((size_t)N * 3 * NH * hs, 256), 256, 0, c->stream>>>(out, inp, N, NH, KVH, hs);
    LAUNCHED(c, "kv_expand");
    return 0;
}

static int cuda_kv_reduce(void *ctx, float *dinp, const float *dout, int N, int NH, int KVH, int hs) {
    cuda_ctx *c = CTX(ctx);
    if (N <= 0) return 0;
    kv_reduce_kernel<<<grid_for((size_t)N * (NH + 2 * KVH) * hs, 256), 256, 0, c->stream>>>(dinp, dout, N, NH, KVH, hs);
    LAUNCHED(c, "kv_reduce");
    return 0;
}

/* ----------------------------------------------------------- cross-entropy */

#define CE_THREADS 256

/* One block per row. */
__global__ void crossentropy_forward_kernel(float *probs, float *logp, const float *logits, const int *targets, int V,
                                            int Vp) {
    __shared__ float red[32];
    size_t i = blockIdx.x;
    const float *l = logits + i * Vp;
    float *p = probs + i * Vp;
    float mx = -INFINITY;
    for (int v = threadIdx.x; v < V; v += blockDim.x) mx = fmaxf(mx, l[v]);
    mx = block_max(mx, red);
    float sum = 0.0f;
    for (int v = threadIdx.x; v < V; v += blockDim.x) {
        float e = expf(l[v] - mx);
        p[v] = e;
        sum += e;
    }
    sum = block_sum(sum, red);
    float inv = 1.0f / sum;
    for (int v = threadIdx.x; v < V; v += blockDim.x) p[v] *= inv; /* this thread's own writes */
    for (int v = V + threadIdx.x; v < Vp; v += blockDim.x) p[v] = 0.0f;
    if (threadIdx.x == 0) {
        int t = targets[i];
        logp[i] = (t >= 0 && t < Vp) ? l[t] - mx - logf(sum) : 0.0f;
    }
}

__global__ void crossentropy_backward_kernel(float *dlogits, const float *probs, const int *targets, const float *dlogp,
                                             size_t N, int V, int Vp) {
    size_t n = N * Vp;
    for (size_t idx = blockIdx.x * (size_t)blockDim.x + threadIdx.x; idx < n; idx += (size_t)gridDim.x * blockDim.x) {
        size_t i = idx / Vp;
        int v = (int)(idx % Vp), t = targets[i];
        float w = dlogp[i], d = 0.0f;
        if (t >= 0 && w != 0.0f && v < V) {
            d = -w * probs[idx];
            if (v == t) d += w;
        }
        dlogits[idx] = d;
    }
}

static int cuda_crossentropy_forward(void *ctx, float *probs, float *logp, const float *logits, const int *targets,
                                     int N, int V, int Vp) {
    cuda_ctx *c = CTX(ctx);
    if (N <= 0) return 0;
    if (V <= 0 || V > Vp) return FAIL(c, "crossentropy_forward: vocabulary %d of padded %d", V, Vp);
    crossentropy_forward_kernel<<<(unsigned)N, CE_THREADS, 0, c->stream>>>(probs, logp, logits, targets, V, Vp);
    LAUNCHED(c, "crossentropy_forward");
    return 0;
}

static int cuda_crossentropy_backward(void *ctx, float *dlogits, const float *probs, const int *targets,
                                      const float *dlogp, int N, int V, int Vp) {
    cuda_ctx *c = CTX(ctx);
    if (N <= 0 || Vp <= 0) return 0;
    crossentropy_backward_kernel<<<grid_for((size_t)N * Vp, 256), 256, 0, c->stream>>>(dlogits, probs, targets, dlogp,
                                                                                       (size_t)N, V, Vp);
    LAUNCHED(c, "crossentropy_backward");
    return 0;
}

/* --------------------------------------------------------------- optimizer */

__global__ void adamw_kernel(float *params, const float *grads, float *m, float *v, size_t n, float lr, float beta1,
                             float beta2, float eps, float wd, float grad_scale, float c1, float c2) {
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x) {
        float g = grads[i] * grad_scale;
        float mi = beta1 * m[i] + (1.0f - beta1) * g;
        float vi = beta2 * v[i] + (1.0f - beta2) * g * g;
        m[i] = mi;
        v[i] = vi;
        float mh = mi / c1, vh = vi / c2;
        params[i] -= lr * (mh / (sqrtf(vh) + eps) + wd * params[i]);
    }
}

static int cuda_adamw(void *ctx, float *params, const float *grads, float *m, float *v, size_t n, float lr, float beta1,
                      float beta2, float eps, float weight_decay, float grad_scale, int t) {
    cuda_ctx *c = CTX(ctx);
    if (t < 1) return FAIL(c, "adamw: step number %d (must be >= 1)", t);
    if (!n) return 0;
    /* the bias corrections exactly as the reference forms them, on the host */
    float c1 = 1.0f - powf(beta1, (float)t), c2 = 1.0f - powf(beta2, (float)t);
    adamw_kernel<<<grid_for(n, 256), 256, 0, c->stream>>>(params, grads, m, v, n, lr, beta1, beta2, eps, weight_decay,
                                                          grad_scale, c1, c2);
    LAUNCHED(c, "adamw");
    return 0;
}

/* Each block writes one double partial; the host adds the partials in order,
 * so the result does not depend on scheduling. */
__global__ void sumsq_kernel(double *partials, const float *x, size_t n) {
    __shared__ double red[32];
    double s = 0.0;
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x) {
        double d = x[i];
        s += d * d;
    }
    int lane = threadIdx.x & 31, w = threadIdx.x >> 5, nw = blockDim.x >> 5;
    s = warp_sum_d(s);
    if (lane == 0) red[w] = s;
    __syncthreads();
    if (w == 0) {
        s = warp_sum_d(lane < nw ? red[lane] : 0.0);
        if (lane == 0) partials[blockIdx.x] = s;
    }
}

static int cuda_sumsq(void *ctx, const float *x, size_t n, double *out) {
    cuda_ctx *c = CTX(ctx);
    *out = 0.0;
    if (!n) return cuda_sync(ctx);
    unsigned blocks = grid_for(n, 256 * 8);
    if (blocks > SUMSQ_MAX_BLOCKS) blocks = SUMSQ_MAX_BLOCKS;
    sumsq_kernel<<<blocks, 256, 0, c->stream>>>(c->partials, x, n);
    LAUNCHED(c, "sumsq");
    double host[SUMSQ_MAX_BLOCKS];
    CU(c, cudaMemcpyAsync(host, c->partials, blocks * sizeof(double), cudaMemcpyDeviceToHost, c->stream));
    CU(c, cudaStreamSynchronize(c->stream));
    double s = 0.0;
    for (unsigned i = 0; i < blocks; i++) s += host[i];
    *out = s;
    return 0;
}

/* ----------------------------------------- the head's rows (gather, scatter) */

/* One thread per element of the n compact rows: out row i is inp row idx[i]. */
__global__ void rows_gather_kernel(float *out, const float *inp, const int *idx, size_t n, int C) {
    size_t total = n * C;
    for (size_t k = blockIdx.x * (size_t)blockDim.x + threadIdx.x; k < total; k += (size_t)gridDim.x * blockDim.x) {
        size_t i = k / C, e = k % C;
        out[k] = inp[(size_t)idx[i] * C + e];
    }
}

/* The inverse placement: compact row i into row idx[i] (distinct rows, so no two threads write one element). */
__global__ void rows_scatter_kernel(float *out, const float *inp, const int *idx, size_t n, int C) {
    size_t total = n * C;
    for (size_t k = blockIdx.x * (size_t)blockDim.x + threadIdx.x; k < total; k += (size_t)gridDim.x * blockDim.x) {
        size_t i = k / C, e = k % C;
        out[(size_t)idx[i] * C + e] = inp[k];
    }
}

static int cuda_rows_gather(void *ctx, float *out, const float *inp, const int *idx, int n, int C) {
    cuda_ctx *c = CTX(ctx);
    if (n <= 0 || C <= 0) return 0;
    rows_gather_kernel<<<grid_for((size_t)n * C, 256), 256, 0, c->stream>>>(out, inp, idx, (size_t)n, C);
    LAUNCHED(c, "rows_gather");
    return 0;
}

static int cuda_rows_scatter(void *ctx, float *out, const float *inp, const int *idx, int n, int C) {
    cuda_ctx *c = CTX(ctx);
    if (n <= 0 || C <= 0) return 0;
    rows_scatter_kernel<<<grid_for((size_t)n * C, 256), 256, 0, c->stream>>>(out, inp, idx, (size_t)n, C);
    LAUNCHED(c, "rows_scatter");
    return 0;
}

/* ------------------------------------------------------------- constructor */

/* Positional, in the order of spade_backend_vtable's fields. */
static const spade_backend_vtable cuda_vt = {
    "cuda",
    cuda_free,
    cuda_last_error,
    cuda_alloc,
    cuda_dealloc,
    cuda_upload,
    cuda_download,
    cuda_copy,
    cuda_zero,
    cuda_sync,
    cuda_encoder_forward,
    cuda_encoder_backward,
    cuda_layernorm_forward,
    cuda_layernorm_backward,
    cuda_matmul_forward,
    cuda_matmul_backward,
    cuda_attention_forward,
    cuda_attention_backward,
    cuda_attention_forward_kv,
    cuda_gelu_forward,
    cuda_gelu_backward,
    cuda_residual_forward,
    cuda_crossentropy_forward,
    cuda_crossentropy_backward,
    cuda_adamw,
    cuda_sumsq,
    cuda_encoder_forward_at,
    cuda_attention_forward_kv_at,
    cuda_rmsnorm_forward,
    cuda_rmsnorm_backward,
    cuda_rope,
    cuda_swiglu_forward,
    cuda_swiglu_backward,
    cuda_kv_expand,
    cuda_kv_reduce,
    cuda_attention_forward_kv_at_gqa,
    0, /* attention_probs: the tiled attention needs no T x T buffer */
    nullptr, /* axpy: no LoRA path yet (gpt_lora_enable refuses this backend) */
    cuda_rows_gather,
    cuda_rows_scatter,
};

} /* namespace */

/* Declared in backend.h when the build has CUDA (SPADE_POLICY_CUDA). */
extern "C" int spade_backend_cuda_new(spade_backend *be, char *err, size_t errlen);

extern "C" int spade_backend_cuda_new(spade_backend *be, char *err, size_t errlen) {
    int count = 0;
    cudaError_t e = cudaGetDeviceCount(&count);
    if (e != cudaSuccess) {
        cudaGetLastError();
        snprintf(err, errlen, "no CUDA device: %s", cudaGetErrorString(e));
        return SPADE_POLICY_ENODEV;
    }
    if (count < 1) {
        snprintf(err, errlen, "no CUDA device: cudaGetDeviceCount found none");
        return SPADE_POLICY_ENODEV;
    }
    cuda_ctx *c = (cuda_ctx *)calloc(1, sizeof *c);
    if (!c) {
        snprintf(err, errlen, "out of host memory creating the CUDA backend");
        return SPADE_POLICY_ENOMEM;
    }
    c->device = 0;
    int rc = SPADE_POLICY_ENODEV;
    const char *step = "cudaSetDevice";
    cublasStatus_t bs;
    e = cudaSetDevice(c->device);
    /* cudaFree(0) makes the primary context now, so a device that exists but
     * cannot be used (busy, exclusive, out of memory) is reported here. */
    if (e == cudaSuccess) {
        step = "creating the context";
        e = cudaFree(0);
    }
    if (e == cudaSuccess) {
        rc = SPADE_POLICY_EBACKEND;
        step = "cudaStreamCreate";
        e = cudaStreamCreate(&c->stream);
    }
    if (e == cudaSuccess) {
        step = "cudaMalloc (sumsq partials)";
        e = cudaMalloc((void **)&c->partials, SUMSQ_MAX_BLOCKS * sizeof(double));
    }
    if (e != cudaSuccess) {
        cudaGetLastError();
        snprintf(err, errlen, "%s device %d: %s: %s",
                 rc == SPADE_POLICY_ENODEV ? "no CUDA device: cannot use" : "CUDA backend on", c->device, step,
                 cudaGetErrorString(e));
        cuda_free(c);
        return rc;
    }
    bs = cublasCreate(&c->blas);
    if (bs == CUBLAS_STATUS_SUCCESS) bs = cublasSetStream(c->blas, c->stream);
    if (bs == CUBLAS_STATUS_SUCCESS) {
        const char *tf32 = getenv("SPADE_CUDA_TF32");
        if (tf32 && !strcmp(tf32, "1")) bs = cublasSetMathMode(c->blas, CUBLAS_TF32_TENSOR_OP_MATH);
    }
    if (bs != CUBLAS_STATUS_SUCCESS) {
        snprintf(err, errlen, "CUDA backend on device %d: cuBLAS set-up: %s", c->device, cublasGetStatusString(bs));
        cuda_free(c);
        return SPADE_POLICY_EBACKEND;
    }
    be->vt = &cuda_vt;
    be->ctx = c;
    return 0;
}
