/* backend_cuda.cu — the CUDA backend of the policy: cuBLAS GEMMs and CUDA kernels
 * behind the vtable of core/policy/backend.h.
 *
 * What it is: one implementation of every op in backend.h for one NVIDIA GPU
 * (device 0 of what CUDA_VISIBLE_DEVICES shows), all issued on one stream of
 * this backend. Linear layers and the attention products are cuBLAS SGEMMs in
 * full FP32 (the default math mode; SPADE_CUDA_TF32=1 in the environment allows
 * TF32 tensor cores, faster and less exact). Everything else is a plain kernel
 * that mirrors the reference loops of backend_cpu.c: the same formulas, the same
 * order of operations inside each output where that is cheap (dot products,
 * value sums), tree reductions where a row must be summed.
 * Deterministic except encoder_backward's token-embedding gradient, which
 * uses atomicAdd (several positions may carry the same token); every other
 * reduction has a fixed order, so two runs give the same bits.
 * What it is not: tuned. No fused or flash attention, no mixed precision, no
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
    float *scratch;      /* device scratch (attention backward's score gradients) */
    size_t scratch_n;    /* floats */
    double *partials;    /* (SUMSQ_MAX_BLOCKS) device partial sums of sumsq */
    size_t kv_smem_ok;   /* dynamic shared memory kv_attend_kernel may use (bytes) */
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
#define CU(c, call)                                                                     \
    do {                                                                                \
        cudaError_t e_ = (call);                                                        \
        if (e_ != cudaSuccess)                                                          \
            return fail_at((c), __LINE__, "%s: %s", #call, cudaGetErrorString(e_));     \
    } while (0)

/* Checks that a kernel launch was accepted (bad configuration, or a sticky
 * error left by an earlier kernel). */
#define LAUNCHED(c, what)                                                                \
    do {                                                                                 \
        cudaError_t e_ = cudaGetLastError();                                             \
        if (e_ != cudaSuccess)                                                           \
            return fail_at((c), __LINE__, "%s kernel: %s", (what), cudaGetErrorString(e_)); \
    } while (0)

#define BLAS(c, what, call)                                                              \
    do {                                                                                 \
        cublasStatus_t s_ = (call);                                                      \
        if (s_ != CUBLAS_STATUS_SUCCESS)                                                 \
            return fail_at((c), __LINE__, "cuBLAS %s: %s", (what), cublasGetStatusString(s_)); \
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
        FAIL(c, "cudaMalloc of %zu bytes of scratch: %s", n * sizeof(float),
             cudaGetErrorString(e));
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

__global__ void encoder_forward_kernel(float *out, const int *inp, const float *wte,
                                       const float *wpe, size_t N, int T, int C, int pos0) {
    size_t n = N * C;
    for (size_t idx = blockIdx.x * (size_t)blockDim.x + threadIdx.x; idx < n;
         idx += (size_t)gridDim.x * blockDim.x) {
        size_t i = idx / C;
        int c = (int)(idx % C), t = (int)(i % T);
        out[idx] = wte[(size_t)inp[i] * C + c] + wpe[(size_t)(pos0 + t) * C + c];
    }
}

static int cuda_encoder_forward(void *ctx, float *out, const int *inp, const float *wte,
                                const float *wpe, int B, int T, int C, int pos0) {
    cuda_ctx *c = CTX(ctx);
    size_t N = (size_t)B * T;
    if (!N || !C) return 0;
    encoder_forward_kernel<<<grid_for(N * C, 256), 256, 0, c->stream>>>(out, inp, wte, wpe, N,
                                                                          T, C, pos0);
    LAUNCHED(c, "encoder_forward");
    return 0;
}

/* Token rows: several positions may carry the same token, so the adds are atomic. */
__global__ void encoder_backward_wte_kernel(float *dwte, const float *dout, const int *inp,
                                            size_t N, int C) {
    size_t n = N * C;
    for (size_t idx = blockIdx.x * (size_t)blockDim.x + threadIdx.x; idx < n;
         idx += (size_t)gridDim.x * blockDim.x) {
        size_t i = idx / C;
        int c = (int)(idx % C);
        atomicAdd(&dwte[(size_t)inp[i] * C + c], dout[idx]);
    }
}

/* Position rows: one thread per (t, c) adds the B rows in order (deterministic). */
__global__ void encoder_backward_wpe_kernel(float *dwpe, const float *dout, int B, int T, int C) {
    size_t n = (size_t)T * C;
    for (size_t idx = blockIdx.x * (size_t)blockDim.x + threadIdx.x; idx < n;
         idx += (size_t)gridDim.x * blockDim.x) {
        float s = dwpe[idx];
        for (int b = 0; b < B; b++) s += dout[(size_t)b * T * C + idx];
        dwpe[idx] = s;
    }
}

static int cuda_encoder_backward(void *ctx, float *dwte, float *dwpe, const float *dout,
                                 const int *inp, int B, int T, int C) {
    cuda_ctx *c = CTX(ctx);
    size_t N = (size_t)B * T;
    if (!N || !C) return 0;
    encoder_backward_wte_kernel<<<grid_for(N * C, 256), 256, 0, c->stream>>>(dwte, dout, inp, N,
                                                                               C);
    LAUNCHED(c, "encoder_backward (wte)");
    encoder_backward_wpe_kernel<<<grid_for((size_t)T * C, 256), 256, 0, c->stream>>>(dwpe, dout,
                                                                                       B, T, C);
    LAUNCHED(c, "encoder_backward (wpe)");
    return 0;
}

/* --------------------------------------------------------------- layernorm */

/* One warp per row; 8 rows per 256-thread block. */
#define ROWS_PER_BLOCK 8

__global__ void layernorm_forward_kernel(float *out, float *mean, float *rstd, const float *inp,
                                         const float *w, const float *b, int N, int C) {
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

static int cuda_layernorm_forward(void *ctx, float *out, float *mean, float *rstd,
                                  const float *inp, const float *weight, const float *bias,
                                  int N, int C) {
    cuda_ctx *c = CTX(ctx);
    if (N <= 0 || C <= 0) return 0;
    unsigned grid = (unsigned)((N + ROWS_PER_BLOCK - 1) / ROWS_PER_BLOCK);
    layernorm_forward_kernel<<<grid, 32 * ROWS_PER_BLOCK, 0, c->stream>>>(out, mean, rstd, inp,
                                                                          weight, bias, N, C);
    LAUNCHED(c, "layernorm_forward");
    return 0;
}

/* dinp rows: one warp per row. */
__global__ void layernorm_backward_rows_kernel(float *dinp, const float *dout, const float *inp,
                                               const float *w, const float *mean,
                                               const float *rstd, int N, int C) {
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

__global__ void layernorm_backward_cols_kernel(float *dweight, float *dbias, const float *dout,
                                               const float *inp, const float *mean,
                                               const float *rstd, int N, int C) {
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

static int cuda_layernorm_backward(void *ctx, float *dinp, float *dweight, float *dbias,
                                   const float *dout, const float *inp, const float *weight,
                                   const float *mean, const float *rstd, int N, int C) {
    cuda_ctx *c = CTX(ctx);
    if (N <= 0 || C <= 0) return 0;
    unsigned grid = (unsigned)((N + ROWS_PER_BLOCK - 1) / ROWS_PER_BLOCK);
    layernorm_backward_rows_kernel<<<grid, 32 * ROWS_PER_BLOCK, 0, c->stream>>>(
        dinp, dout, inp, weight, mean, rstd, N, C);
    LAUNCHED(c, "layernorm_backward (rows)");
    layernorm_backward_cols_kernel<<<(unsigned)((C + 31) / 32), 32 * COL_ROWS, 0, c->stream>>>(
        dweight, dbias, dout, inp, mean, rstd, N, C);
    LAUNCHED(c, "layernorm_backward (columns)");
    return 0;
}

/* ------------------------------------------------------------------ matmul */

__global__ void add_bias_kernel(float *out, const float *bias, size_t N, int OC) {
    size_t n = N * OC;
    for (size_t idx = blockIdx.x * (size_t)blockDim.x + threadIdx.x; idx < n;
         idx += (size_t)gridDim.x * blockDim.x)
        out[idx] += bias[idx % OC];
}

/* Row-major (N,OC) = (N,IC) @ (OC,IC)^T is, column-major, out^T = W^T-as-stored
 * @ inp^T: see the comment in backend.h. */
static int cuda_matmul_forward(void *ctx, float *out, const float *inp, const float *weight,
                               const float *bias, int N, int IC, int OC) {
    cuda_ctx *c = CTX(ctx);
    if (N <= 0 || OC <= 0) return 0;
    const float one = 1.0f, zero = 0.0f;
    if (IC <= 0) return cuda_zero(ctx, out, (size_t)N * OC * sizeof(float));
    BLAS(c, "matmul_forward sgemm",
         cublasSgemm(c->blas, CUBLAS_OP_T, CUBLAS_OP_N, OC, N, IC, &one, weight, IC, inp, IC,
                     &zero, out, OC));
    if (bias) {
        add_bias_kernel<<<grid_for((size_t)N * OC, 256), 256, 0, c->stream>>>(out, bias, N, OC);
        LAUNCHED(c, "matmul_forward (bias)");
    }
    return 0;
}

static int cuda_matmul_backward(void *ctx, float *dinp, float *dweight, float *dbias,
                                const float *dout, const float *inp, const float *weight, int N,
                                int IC, int OC) {
    cuda_ctx *c = CTX(ctx);
    if (N <= 0 || IC <= 0 || OC <= 0) return 0;
    const float one = 1.0f, zero = 0.0f;
    /* dinp (N,IC) = dout (N,OC) @ W (OC,IC): column-major dinp^T = W^T @ dout^T */
    BLAS(c, "matmul_backward dinp sgemm",
         cublasSgemm(c->blas, CUBLAS_OP_N, CUBLAS_OP_N, IC, N, OC, &one, weight, IC, dout, OC,
                     &zero, dinp, IC));
    /* dW (OC,IC) += dout^T @ inp: column-major dW^T (IC,OC) += inp^T @ dout */
    BLAS(c, "matmul_backward dweight sgemm",
         cublasSgemm(c->blas, CUBLAS_OP_N, CUBLAS_OP_T, IC, OC, N, &one, inp, IC, dout, OC, &one,
                     dweight, IC));
    if (dbias) {
        colsum_add_kernel<<<(unsigned)((OC + 31) / 32), 32 * COL_ROWS, 0, c->stream>>>(dbias, dout,
                                                                                      N, OC);
        LAUNCHED(c, "matmul_backward (bias)");
    }
    return 0;
}

/* --------------------------------------------------------------- attention */

/* Causal softmax of score rows in place, one warp per row of T: row r is query
 * t = r % T; entries 0..t become probabilities, the rest 0. */
__global__ void causal_softmax_kernel(float *att, size_t rows, int T) {
    size_t r = blockIdx.x * (size_t)ROWS_PER_BLOCK + (threadIdx.x >> 5);
    int lane = threadIdx.x & 31;
    if (r >= rows) return;
    int t = (int)(r % T);
    float *a = att + r * T;
    float mx = -INFINITY;
    for (int j = lane; j <= t; j += 32) mx = fmaxf(mx, a[j]);
    mx = warp_max(mx);
    float sum = 0.0f;
    for (int j = lane; j <= t; j += 32) {
        float e = expf(a[j] - mx);
        a[j] = e;
        sum += e;
    }
    float inv = 1.0f / warp_sum(sum);
    for (int j = lane; j <= t; j += 32) a[j] *= inv;
    for (int j = t + 1 + lane; j < T; j += 32) a[j] = 0.0f;
}

/* Softmax backward of causal rows in place: da = att * (da - sum(att * da)),
 * 0 above the diagonal. */
__global__ void causal_softmax_backward_kernel(float *da, const float *att, size_t rows, int T) {
    size_t r = blockIdx.x * (size_t)ROWS_PER_BLOCK + (threadIdx.x >> 5);
    int lane = threadIdx.x & 31;
    if (r >= rows) return;
    int t = (int)(r % T);
    float *d = da + r * T;
    const float *a = att + r * T;
    float s = 0.0f;
    for (int j = lane; j <= t; j += 32) s += a[j] * d[j];
    s = warp_sum(s);
    for (int j = lane; j <= t; j += 32) d[j] = a[j] * (d[j] - s);
    for (int j = t + 1 + lane; j < T; j += 32) d[j] = 0.0f;
}

static int check_heads(cuda_ctx *c, const char *op, int C, int NH) {
    if (NH <= 0 || C % NH != 0)
        return FAIL(c, "%s: width %d is not a multiple of the head count %d", op, C, NH);
    return 0;
}

/* Per batch row b, the NH heads are one strided batch of GEMMs: head h of q, k
 * and v starts hs floats after head h-1 (row stride 3C), head h of att starts
 * T*T floats after head h-1. Column-major views as in matmul_forward. */
static int cuda_attention_forward(void *ctx, float *out, float *att, const float *qkv, int B,
                                  int T, int C, int NH) {
    cuda_ctx *c = CTX(ctx);
    if (check_heads(c, "attention_forward", C, NH)) return SPADE_POLICY_EBACKEND;
    if (B <= 0 || T <= 0) return 0;
    int hs = C / NH, C3 = 3 * C;
    long long TT = (long long)T * T;
    const float scale = 1.0f / sqrtf((float)hs), one = 1.0f, zero = 0.0f;
    for (int b = 0; b < B; b++) {
        const float *q = qkv + (size_t)b * T * C3, *k = q + C;
        float *a = att + (size_t)b * NH * TT;
        /* scores: a[t][t2] = scale * q[t] . k[t2]  (col-major element (t2, t)) */
        BLAS(c, "attention_forward scores sgemm",
             cublasSgemmStridedBatched(c->blas, CUBLAS_OP_T, CUBLAS_OP_N, T, T, hs, &scale, k, C3,
                                       hs, q, C3, hs, &zero, a, T, TT, NH));
    }
    size_t rows = (size_t)B * NH * T;
    causal_softmax_kernel<<<(unsigned)((rows + ROWS_PER_BLOCK - 1) / ROWS_PER_BLOCK),
                            32 * ROWS_PER_BLOCK, 0, c->stream>>>(att, rows, T);
    LAUNCHED(c, "attention_forward (softmax)");
    for (int b = 0; b < B; b++) {
        const float *v = qkv + (size_t)b * T * C3 + 2 * C;
        const float *a = att + (size_t)b * NH * TT;
        /* out[t][h*hs+i] = sum_t2 a[t][t2] v[t2][i]; the zeros above the diagonal add nothing */
        BLAS(c, "attention_forward values sgemm",
             cublasSgemmStridedBatched(c->blas, CUBLAS_OP_N, CUBLAS_OP_N, hs, T, T, &one, v, C3,
                                       hs, a, T, TT, &zero, out + (size_t)b * T * C, C, hs, NH));
    }
    return 0;
}

static int cuda_attention_backward(void *ctx, float *dqkv, const float *dout, const float *qkv,
                                   const float *att, int B, int T, int C, int NH) {
    cuda_ctx *c = CTX(ctx);
    if (check_heads(c, "attention_backward", C, NH)) return SPADE_POLICY_EBACKEND;
    if (B <= 0 || T <= 0) return 0;
    int hs = C / NH, C3 = 3 * C;
    long long TT = (long long)T * T;
    const float scale = 1.0f / sqrtf((float)hs), one = 1.0f, zero = 0.0f;
    /* One batch row at a time keeps the scratch at NH*T*T floats. */
    float *da = scratch(c, (size_t)NH * TT);
    if (!da) return SPADE_POLICY_EBACKEND;
    size_t rows = (size_t)NH * T;
    for (int b = 0; b < B; b++) {
        const float *q = qkv + (size_t)b * T * C3, *k = q + C, *v = q + 2 * C;
        float *dq = dqkv + (size_t)b * T * C3, *dk = dq + C, *dv = dq + 2 * C;
        const float *dy = dout + (size_t)b * T * C;
        const float *a = att + (size_t)b * NH * TT;
        /* datt[t][t2] = dy[t] . v[t2] */
        BLAS(c, "attention_backward datt sgemm",
             cublasSgemmStridedBatched(c->blas, CUBLAS_OP_T, CUBLAS_OP_N, T, T, hs, &one, v, C3,
                                       hs, dy, C, hs, &zero, da, T, TT, NH));
        causal_softmax_backward_kernel<<<(unsigned)((rows + ROWS_PER_BLOCK - 1) / ROWS_PER_BLOCK),
                                         32 * ROWS_PER_BLOCK, 0, c->stream>>>(da, a, rows, T);
        LAUNCHED(c, "attention_backward (softmax)");
        /* dq[t] = scale * sum_t2 dpre[t][t2] k[t2] */
        BLAS(c, "attention_backward dq sgemm",
             cublasSgemmStridedBatched(c->blas, CUBLAS_OP_N, CUBLAS_OP_N, hs, T, T, &scale, k, C3,
                                       hs, da, T, TT, &zero, dq, C3, hs, NH));
        /* dk[t2] = scale * sum_t dpre[t][t2] q[t] */
        BLAS(c, "attention_backward dk sgemm",
             cublasSgemmStridedBatched(c->blas, CUBLAS_OP_N, CUBLAS_OP_T, hs, T, T, &scale, q, C3,
                                       hs, da, T, TT, &zero, dk, C3, hs, NH));
        /* dv[t2] = sum_t att[t][t2] dy[t] */
        BLAS(c, "attention_backward dv sgemm",
             cublasSgemmStridedBatched(c->blas, CUBLAS_OP_N, CUBLAS_OP_T, hs, T, T, &one, dy, C,
                                       hs, a, T, TT, &zero, dv, C3, hs, NH));
    }
    return 0;
}

__global__ void kv_store_kernel(float *kcache, float *vcache, const float *qkv, int B, int T,
                                int C, int pos0, int maxT) {
    size_t n = (size_t)B * T * C;
    for (size_t idx = blockIdx.x * (size_t)blockDim.x + threadIdx.x; idx < n;
         idx += (size_t)gridDim.x * blockDim.x) {
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

__global__ void kv_attend_kernel(float *out, const float *qkv, const float *kcache,
                                 const float *vcache, int T, int C, int NH, int pos0, int maxT,
                                 float scale) {
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

static int cuda_attention_forward_kv(void *ctx, float *out, const float *qkv, float *kcache,
                                     float *vcache, int B, int T, int C, int NH, int pos0,
                                     int maxT) {
    cuda_ctx *c = CTX(ctx);
    if (check_heads(c, "attention_forward_kv", C, NH)) return SPADE_POLICY_EBACKEND;
    if (pos0 < 0 || pos0 + T > maxT)
        return FAIL(c, "attention_forward_kv: positions %d..%d outside the context %d", pos0,
                    pos0 + T - 1, maxT);
    if (B <= 0 || T <= 0) return 0;
    int hs = C / NH;
    kv_store_kernel<<<grid_for((size_t)B * T * C, 256), 256, 0, c->stream>>>(
        kcache, vcache, qkv, B, T, C, pos0, maxT);
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
        CU(c, cudaFuncSetAttribute(kv_attend_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                   (int)smem));
        c->kv_smem_ok = smem;
    }
    float scale = 1.0f / sqrtf((float)hs);
    kv_attend_kernel<<<(unsigned)((size_t)B * NH * T), KV_THREADS, smem, c->stream>>>(
        out, qkv, kcache, vcache, T, C, NH, pos0, maxT, scale);
    LAUNCHED(c, "attention_forward_kv (attend)");
    return 0;
}

/* ------------------------------------------- the decoding batch (per-row slots) */

__global__ void encoder_forward_at_kernel(float *out, const int *inp, const int *pos,
                                          const float *wte, const float *wpe, int N, int C) {
    size_t n = (size_t)N * C;
    for (size_t idx = blockIdx.x * (size_t)blockDim.x + threadIdx.x; idx < n;
         idx += (size_t)gridDim.x * blockDim.x) {
        size_t i = idx / C;
        int c = (int)(idx % C);
        out[idx] = wte[(size_t)inp[i] * C + c] + wpe[(size_t)pos[i] * C + c];
    }
}

static int cuda_encoder_forward_at(void *ctx, float *out, const int *inp, const int *pos,
                                   const float *wte, const float *wpe, int N, int C) {
    cuda_ctx *c = CTX(ctx);
    if (N <= 0) return 0;
    encoder_forward_at_kernel<<<grid_for((size_t)N * C, 256), 256, 0, c->stream>>>(
        out, inp, pos, wte, wpe, N, C);
    LAUNCHED(c, "encoder_forward_at");
    return 0;
}

__global__ void kv_store_at_kernel(float *kcache, float *vcache, const float *qkv, const int *slot,
                                   const int *pos, int N, int C, int maxT) {
    size_t n = (size_t)N * C;
    for (size_t idx = blockIdx.x * (size_t)blockDim.x + threadIdx.x; idx < n;
         idx += (size_t)gridDim.x * blockDim.x) {
        size_t i = idx / C;
        int c = (int)(idx % C);
        const float *row = qkv + i * 3 * C;
        size_t dst = ((size_t)slot[i] * maxT + pos[i]) * C + c;
        kcache[dst] = row[C + c];
        vcache[dst] = row[2 * C + c];
    }
}

/* kv_attend_kernel with the row's own slot and length: one block per (row,
 * head), the same order of operations inside each output. Dynamic shared
 * memory: hs + maxlen floats. */
__global__ void kv_attend_at_kernel(float *out, const float *qkv, const float *kcache,
                                    const float *vcache, const int *slot, const int *pos, int C,
                                    int NH, int maxT, float scale) {
    extern __shared__ float smem[];
    __shared__ float red[32];
    int hs = C / NH;
    int h = blockIdx.x % NH, i = blockIdx.x / NH;
    int nk = pos[i] + 1;
    float *q = smem, *sc = smem + hs;
    const float *qg = qkv + (size_t)i * 3 * C + h * hs;
    const float *kb = kcache + (size_t)slot[i] * maxT * C + h * hs;
    const float *vb = vcache + (size_t)slot[i] * maxT * C + h * hs;
    for (int k = threadIdx.x; k < hs; k += blockDim.x) q[k] = qg[k];
    __syncthreads();
    float mx = -INFINITY;
    for (int j = threadIdx.x; j < nk; j += blockDim.x) {
        const float *kj = kb + (size_t)j * C;
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
        for (int j = 0; j < nk; j++) acc += (sc[j] * inv) * vb[(size_t)j * C + k];
        o[k] = acc;
    }
}

static int cuda_attention_forward_kv_at(void *ctx, float *out, const float *qkv, float *kcache,
                                        float *vcache, const int *slot, const int *pos, int N,
                                        int C, int NH, int S, int maxT, int maxlen) {
    cuda_ctx *c = CTX(ctx);
    if (check_heads(c, "attention_forward_kv_at", C, NH)) return SPADE_POLICY_EBACKEND;
    if (maxlen < 1 || maxlen > maxT)
        return FAIL(c, "attention_forward_kv_at: maxlen %d outside 1..%d (the context)", maxlen, maxT);
    if (N <= 0) return 0;
    int hs = C / NH;
    kv_store_at_kernel<<<grid_for((size_t)N * C, 256), 256, 0, c->stream>>>(
        kcache, vcache, qkv, slot, pos, N, C, maxT);
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
        CU(c, cudaFuncSetAttribute(kv_attend_at_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                   (int)smem));
        c->kv_at_smem_ok = smem;
    }
    float scale = 1.0f / sqrtf((float)hs);
    kv_attend_at_kernel<<<(unsigned)((size_t)N * NH), KV_THREADS, smem, c->stream>>>(
        out, qkv, kcache, vcache, slot, pos, C, NH, maxT, scale);
    LAUNCHED(c, "attention_forward_kv_at (attend)");
    (void)S;
    return 0;
}

/* ------------------------------------------------------------- elementwise */

#define GELU_K 0.7978845608028654f /* sqrt(2/pi) */

__global__ void gelu_forward_kernel(float *out, const float *inp, size_t n) {
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
         i += (size_t)gridDim.x * blockDim.x) {
        float x = inp[i];
        out[i] = 0.5f * x * (1.0f + tanhf(GELU_K * (x + 0.044715f * x * x * x)));
    }
}

__global__ void gelu_backward_kernel(float *dinp, const float *inp, const float *dout, size_t n) {
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
         i += (size_t)gridDim.x * blockDim.x) {
        float x = inp[i];
        float u = GELU_K * (x + 0.044715f * x * x * x);
        float th = tanhf(u);
        float sech2 = 1.0f - th * th;
        float g = 0.5f * (1.0f + th) +
                  0.5f * x * sech2 * GELU_K * (1.0f + 3.0f * 0.044715f * x * x);
        dinp[i] = g * dout[i];
    }
}

__global__ void residual_forward_kernel(float *out, const float *a, const float *b, size_t n) {
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
         i += (size_t)gridDim.x * blockDim.x)
        out[i] = a[i] + b[i];
}

static int cuda_gelu_forward(void *ctx, float *out, const float *inp, size_t n) {
    cuda_ctx *c = CTX(ctx);
    if (!n) return 0;
    gelu_forward_kernel<<<grid_for(n, 256), 256, 0, c->stream>>>(out, inp, n);
    LAUNCHED(c, "gelu_forward");
    return 0;
}

static int cuda_gelu_backward(void *ctx, float *dinp, const float *inp, const float *dout,
                              size_t n) {
    cuda_ctx *c = CTX(ctx);
    if (!n) return 0;
    gelu_backward_kernel<<<grid_for(n, 256), 256, 0, c->stream>>>(dinp, inp, dout, n);
    LAUNCHED(c, "gelu_backward");
    return 0;
}

static int cuda_residual_forward(void *ctx, float *out, const float *a, const float *b,
                                 size_t n) {
    cuda_ctx *c = CTX(ctx);
    if (!n) return 0;
    residual_forward_kernel<<<grid_for(n, 256), 256, 0, c->stream>>>(out, a, b, n);
    LAUNCHED(c, "residual_forward");
    return 0;
}

/* ----------------------------------------------------------- cross-entropy */

#define CE_THREADS 256

/* One block per row. */
__global__ void crossentropy_forward_kernel(float *probs, float *logp, const float *logits,
                                            const int *targets, int V, int Vp) {
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

__global__ void crossentropy_backward_kernel(float *dlogits, const float *probs,
                                             const int *targets, const float *dlogp, size_t N,
                                             int V, int Vp) {
    size_t n = N * Vp;
    for (size_t idx = blockIdx.x * (size_t)blockDim.x + threadIdx.x; idx < n;
         idx += (size_t)gridDim.x * blockDim.x) {
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

static int cuda_crossentropy_forward(void *ctx, float *probs, float *logp, const float *logits,
                                     const int *targets, int N, int V, int Vp) {
    cuda_ctx *c = CTX(ctx);
    if (N <= 0) return 0;
    if (V <= 0 || V > Vp) return FAIL(c, "crossentropy_forward: vocabulary %d of padded %d", V, Vp);
    crossentropy_forward_kernel<<<(unsigned)N, CE_THREADS, 0, c->stream>>>(probs, logp, logits,
                                                                            targets, V, Vp);
    LAUNCHED(c, "crossentropy_forward");
    return 0;
}

static int cuda_crossentropy_backward(void *ctx, float *dlogits, const float *probs,
                                      const int *targets, const float *dlogp, int N, int V,
                                      int Vp) {
    cuda_ctx *c = CTX(ctx);
    if (N <= 0 || Vp <= 0) return 0;
    crossentropy_backward_kernel<<<grid_for((size_t)N * Vp, 256), 256, 0, c->stream>>>(
        dlogits, probs, targets, dlogp, (size_t)N, V, Vp);
    LAUNCHED(c, "crossentropy_backward");
    return 0;
}

/* --------------------------------------------------------------- optimizer */

__global__ void adamw_kernel(float *params, const float *grads, float *m, float *v, size_t n,
                             float lr, float beta1, float beta2, float eps, float wd,
                             float grad_scale, float c1, float c2) {
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
         i += (size_t)gridDim.x * blockDim.x) {
        float g = grads[i] * grad_scale;
        float mi = beta1 * m[i] + (1.0f - beta1) * g;
        float vi = beta2 * v[i] + (1.0f - beta2) * g * g;
        m[i] = mi;
        v[i] = vi;
        float mh = mi / c1, vh = vi / c2;
        params[i] -= lr * (mh / (sqrtf(vh) + eps) + wd * params[i]);
    }
}

static int cuda_adamw(void *ctx, float *params, const float *grads, float *m, float *v, size_t n,
                      float lr, float beta1, float beta2, float eps, float weight_decay,
                      float grad_scale, int t) {
    cuda_ctx *c = CTX(ctx);
    if (t < 1) return FAIL(c, "adamw: step number %d (must be >= 1)", t);
    if (!n) return 0;
    /* the bias corrections exactly as the reference forms them, on the host */
    float c1 = 1.0f - powf(beta1, (float)t), c2 = 1.0f - powf(beta2, (float)t);
    adamw_kernel<<<grid_for(n, 256), 256, 0, c->stream>>>(params, grads, m, v, n, lr, beta1, beta2,
                                                           eps, weight_decay, grad_scale, c1, c2);
    LAUNCHED(c, "adamw");
    return 0;
}

/* Each block writes one double partial; the host adds the partials in order,
 * so the result does not depend on scheduling. */
__global__ void sumsq_kernel(double *partials, const float *x, size_t n) {
    __shared__ double red[32];
    double s = 0.0;
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
         i += (size_t)gridDim.x * blockDim.x) {
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
    CU(c, cudaMemcpyAsync(host, c->partials, blocks * sizeof(double), cudaMemcpyDeviceToHost,
                          c->stream));
    CU(c, cudaStreamSynchronize(c->stream));
    double s = 0.0;
    for (unsigned i = 0; i < blocks; i++) s += host[i];
    *out = s;
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
                 rc == SPADE_POLICY_ENODEV ? "no CUDA device: cannot use" : "CUDA backend on",
                 c->device, step, cudaGetErrorString(e));
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
        snprintf(err, errlen, "CUDA backend on device %d: cuBLAS set-up: %s", c->device,
                 cublasGetStatusString(bs));
        cuda_free(c);
        return SPADE_POLICY_EBACKEND;
    }
    be->vt = &cuda_vt;
    be->ctx = c;
    return 0;
}
