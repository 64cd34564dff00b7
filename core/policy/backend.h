/* backend.h — the compute interface under spade's policy (a GPT or a Llama): one vtable of
 * memory operations and layer operations, plus a context pointer (ggml-style).
 *
 * What it is: the contract between core/policy/gpt.c (which owns the model: the
 * layout of parameters and activations, the order of operations, the losses)
 * and a backend that owns the memory and does the arithmetic. Three backends:
 *   cpu_ref  plain C, one thread, fixed summation order: the reference every
 *            other backend is tested against (backend_cpu.c);
 *   cpu      the same ops with spade's own GEMM kernels (gemm.h: AVX-512,
 *            AVX2 or C, chosen by the CPU's instruction sets) and OpenMP
 *            threads (backend_cpu.c);
 *   cuda     cuBLAS GEMMs + CUDA kernels (backend_cuda.cu, compiled when
 *            configure found nvcc; SPADE_HAVE_CUDA).
 * (A fourth name, cpu_tt, is cpu with the attention of before the tiled one:
 * T x T probabilities kept for backward. bench/bench_policy.c opens it to
 * measure the tiled attention against it in one run; nothing else should.)
 * What it is not: a tensor library. There is no graph, no shapes stored with
 * the data, no broadcasting. Every op is a fixed GPT building block with its
 * shapes given as arguments, and the policy calls them in order.
 *
 * ---------------------------------------------------------------------------
 * MEMORY
 * All float data is IEEE float32, all token data int32, row-major (C order,
 * last index fastest). "Backend memory" is memory returned by vt->alloc: for
 * the CPU backends host memory, for CUDA device memory. Every pointer an op
 * receives is backend memory, except where an argument is marked (host). A
 * pointer may point anywhere inside an allocation (the policy carves one big
 * allocation into tensors and offsets into them by whole elements, exactly as
 * llm.c does), so a backend must not assume a pointer is the start of a block.
 * Pointer arithmetic on backend pointers is done by the policy in host code;
 * it never dereferences them.
 *
 *   alloc(ctx, bytes)              -> pointer to `bytes` of backend memory, ZEROED,
 *                                     aligned to at least 64 bytes; NULL on failure
 *                                     (then last_error says why). bytes may be 0
 *                                     -> a valid unique pointer or NULL, either is fine.
 *   dealloc(ctx, p)                   frees; p may be NULL.
 *   upload(ctx, dst, src, bytes)      host src -> backend dst.
 *   download(ctx, dst, src, bytes)    backend src -> host dst; completes all
 *                                     previously issued ops first (synchronous).
 *   copy(ctx, dst, src, bytes)        backend -> backend; regions do not overlap.
 *   zero(ctx, dst, bytes)             memset 0.
 *   sync(ctx)                         returns when every issued op has finished
 *                                     (benchmarks time with it).
 * Ops may be asynchronous (a CUDA stream); only download/sumsq/sync must wait.
 * A backend may keep its own scratch memory inside ctx (cuBLAS workspaces,
 * permuted copies of q/k/v, ...), grown on demand and freed by free().
 *
 * ERRORS: every function returns 0 on success and nonzero on failure; then
 * last_error(ctx) returns a human-readable message (a static or ctx-owned
 * string, valid until the next call). No function may exit() or abort().
 *
 * ---------------------------------------------------------------------------
 * NOTATION for the ops below
 *   B batch rows, T positions in this call, N = B*T (all rows, flattened),
 *   C width (channels), NH heads, hs = C/NH (head size; C % NH == 0),
 *   V real vocabulary size, Vp padded vocabulary (Vp % 64 == 0, Vp >= V),
 *   maxT the model's context length, OC/IC out/in channels of a linear layer.
 *   "(=)" the op overwrites that output; "(+=)" the op ADDS into it (gradients
 *   accumulate across micro-batches and across the two uses of tied weights).
 *   Shapes are written (dim0, dim1, ...) beside each argument.
 *
 * encoder_forward(out (B,T,C) (=), inp (B,T) int32, wte (Vp,C), wpe (maxT,C),
 *                 B, T, C, pos0)
 *     out[b,t,:] = wte[inp[b,t],:] + wpe[pos0 + t,:].   0 <= inp < Vp,
 *     pos0 + T <= maxT. (pos0 > 0 only when sampling with the KV cache.)
 * encoder_backward(dwte (Vp,C) (+=), dwpe (maxT,C) (+=), dout (B,T,C),
 *                  inp (B,T) int32, B, T, C)
 *     dwte[inp[b,t],:] += dout[b,t,:];  dwpe[t,:] += dout[b,t,:]  (pos0 = 0).
 *     Several (b,t) may hit the same token row: sums must all land (atomics or
 *     a deterministic reduction on a GPU).
 *
 * layernorm_forward(out (N,C) (=), mean (N) (=), rstd (N) (=), inp (N,C),
 *                   weight (C), bias (C), N, C)
 *     m = mean(inp[i,:]); var = mean((inp[i,:]-m)^2) (biased);
 *     s = 1/sqrt(var + 1e-5); out[i,:] = (inp[i,:]-m)*s*weight + bias;
 *     mean[i] = m; rstd[i] = s.  mean and rstd may be NULL (inference): then
 *     they are not stored.
 * layernorm_backward(dinp (N,C) (+=), dweight (C) (+=), dbias (C) (+=),
 *                    dout (N,C), inp (N,C), weight (C), mean (N), rstd (N), N, C)
 *     With xhat = (inp-mean)*rstd, dnorm = dout*weight:
 *       dbias += sum_i dout[i,:];  dweight += sum_i xhat[i,:]*dout[i,:];
 *       dinp[i,:] += rstd[i] * (dnorm - mean_c(dnorm) - xhat*mean_c(dnorm*xhat)).
 *     dinp ACCUMULATES: the policy points it at the residual-stream gradient.
 *
 * matmul_forward(out (N,OC) (=), inp (N,IC), weight (OC,IC), bias (OC) or NULL,
 *                N, IC, OC)
 *     out = inp @ weight^T (+ bias broadcast over rows).
 *     (cuBLAS, column-major: out^T(OC,N) = weight(OC,IC as col-major IC x OC)^T
 *      @ inp^T -> cublasSgemm(h, CUBLAS_OP_T, CUBLAS_OP_N, OC, N, IC, 1, weight,
 *      IC, inp, IC, 0, out, OC).)
 * matmul_backward(dinp (N,IC) (=), dweight (OC,IC) (+=), dbias (OC) (+=) or NULL,
 *                 dout (N,OC), inp (N,IC), weight (OC,IC), N, IC, OC)
 *     dinp = dout @ weight  (OVERWRITTEN);  dweight += dout^T @ inp;
 *     dbias += sum over rows of dout (skipped when dbias is NULL).
 *
 * attention_forward(out (B,T,C) (=), lse (B,NH,T) (=), att (B,NH,T,T) (=) or NULL,
 *                   qkv (B,T,3C), B, T, C, NH)
 *     Causal multi-head self-attention. In each row of qkv, q = [0,C),
 *     k = [C,2C), v = [2C,3C); head h uses columns [h*hs, (h+1)*hs) of each.
 *       s[t2] = (q[b,t,h] . k[b,t2,h]) / sqrt(hs)        for t2 <= t
 *       p[t2] = exp(s[t2]-max) / sum_{t2'<=t} exp(s[t2']-max)  for t2 <= t, 0 above
 *       out[b,t,h*hs + i] = sum_{t2<=t} p[t2] * v[b,t2,h*hs + i]
 *       lse[b,h,t] = max + log(sum_{t2<=t} exp(s[t2]-max))   (natural log)
 *     lse is what backward needs to recompute p = exp(s - lse) tile by tile,
 *     so training memory grows linearly in T. att is the T x T probability
 *     matrix att[b,h,t,t2] = p[t2] (0 for t2 > t): only a backend whose
 *     vtable says attention_probs = 1 gets it (cpu_ref, the exact reference,
 *     and the bench-only cpu_tt); every other backend gets att = NULL and must
 *     not need it.
 * attention_backward(dqkv (B,T,3C) (=), dout (B,T,C), qkv (B,T,3C), out (B,T,C),
 *                    lse (B,NH,T), att (B,NH,T,T) or NULL, B, T, C, NH)
 *     The exact gradient of attention_forward w.r.t. qkv given dout, from the
 *     forward's out and lse (and att when attention_probs = 1):
 *       p[t2] = exp(s[t2] - lse[t])  (or att), datt[t2] = dout[b,t,h] . v[b,t2,h];
 *       D[t] = dout[b,t,h] . out[b,t,h]  (= sum_{t2} p[t2] datt[t2]);
 *       dpre[t2] = p[t2] * (datt[t2] - D[t]);
 *       dq[t]  = sum_{t2} dpre[t2] k[t2] / sqrt(hs);  dk[t2] += dpre[t2] q[t] / sqrt(hs);
 *       dv[t2] += p[t2] * dout[t].
 *     Keys after the query (t2 > t) contribute nothing and are skipped.
 *     dqkv is OVERWRITTEN (the op zeroes it first if it accumulates internally).
 * attention_forward_kv(out (B,T,C) (=), qkv (B,T,3C), kcache (B,maxT,C),
 *                      vcache (B,maxT,C), B, T, C, NH, pos0, maxT)
 *     Inference with a KV cache, one layer. The T new tokens sit at absolute
 *     positions pos0 .. pos0+T-1 (pos0+T <= maxT). First
 *       kcache[b,pos0+t,:] = k[b,t,:];  vcache[b,pos0+t,:] = v[b,t,:];
 *     then query t attends keys/values 0 .. pos0+t of the cache with the same
 *     formula as attention_forward (no att output). Prefill: pos0 = 0, T = prompt
 *     length; decode: T = 1.
 *
 * gelu_forward(out (n) (=), inp (n), n)
 *     out = 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))   (the tanh form).
 * gelu_backward(dinp (n) (=), inp (n), dout (n), n)
 *     dinp = dout * d/dx gelu(inp)   (OVERWRITTEN).
 * residual_forward(out (n) (=), a (n), b (n), n)
 *     out = a + b. (Its backward is the identity; the policy needs no op for it.)
 *
 * crossentropy_forward(probs (N,Vp) (=), logp (N) (=), logits (N,Vp),
 *                      targets (N) int32, N, V, Vp)
 *     probs[i,v] = softmax over v < V of logits[i,0:V]; probs[i,v] = 0 for
 *     V <= v < Vp (padding is never a valid token). logp[i] = log of the
 *     softmax at targets[i], computed stably as logits[i,t] - max - log(sum exp)
 *     (not as log(probs)). targets[i] < 0 means "no target": logp[i] = 0.
 *     The LOSS is not computed here: the policy downloads logp (N floats) and
 *     forms the masked mean / the GRPO surrogate on the host.
 * crossentropy_backward(dlogits (N,Vp) (=), probs (N,Vp), targets (N) int32,
 *                       dlogp (N), N, V, Vp)
 *     Back-propagates a weight dlogp[i] = dLoss/dlogp[i] (uploaded by the policy;
 *     for a masked mean cross-entropy it is -mask[i]/sum(mask)):
 *       dlogits[i,v] = dlogp[i] * ([v == targets[i]] - probs[i,v])  for v < V,
 *       dlogits[i,v] = 0 for v >= V, and the whole row is 0 when targets[i] < 0.
 *
 * adamw(params (n), grads (n), m (n), v (n), n, lr, beta1, beta2, eps,
 *       weight_decay, grad_scale, t)
 *     For each element, with t >= 1 the step number (host scalars):
 *       g = grads * grad_scale                 (grad_scale implements clipping)
 *       m = beta1 m + (1-beta1) g;   v = beta2 v + (1-beta2) g^2
 *       mhat = m / (1 - beta1^t);    vhat = v / (1 - beta2^t)
 *       params -= lr * (mhat / (sqrt(vhat) + eps) + weight_decay * params)
 *     grads are not modified. The policy calls it once per parameter tensor (so
 *     that biases and layernorm gains get weight_decay = 0).
 * sumsq(x (n), n, out (host, double))
 *     *out = sum of x[i]^2, accumulated in double or better; synchronous.
 *     (Gradient-norm clipping: the policy calls it on the whole gradient buffer.)
 *
 * Sampling needs no op of its own: the policy runs encoder_forward (pos0),
 * layernorm, matmul, attention_forward_kv, gelu and residual per layer, then
 * matmul_forward of the last position's row against wte (the tied head) and
 * downloads (B,Vp) logits; temperature, top-p and the draw happen on the host.
 *
 * THE DECODING BATCH (policy.h, spade_decoder) runs N rows that belong to
 * different sequences ("slots") at different positions in one pass: a row is
 * (slot[i], pos[i]), both int32 arrays in backend memory. The rows of one slot
 * in one call are at consecutive positions in increasing order; positions
 * before the first of them are already in that slot's cache.
 * encoder_forward_at(out (N,C) (=), inp (N) int32, pos (N) int32, wte (Vp,C),
 *                    wpe (maxT,C), N, C)
 *     out[i,:] = wte[inp[i],:] + wpe[pos[i],:].   0 <= inp < Vp, 0 <= pos < maxT.
 * attention_forward_kv_at(out (N,C) (=), qkv (N,3C), kcache (S,maxT,C),
 *                         vcache (S,maxT,C), slot (N) int32, pos (N) int32,
 *                         N, C, NH, S, maxT, maxlen)
 *     One layer. First, for every row, kcache[slot[i],pos[i],:] = k[i,:] and
 *     vcache[slot[i],pos[i],:] = v[i,:]; then row i's query attends keys and
 *     values 0 .. pos[i] of cache slot[i] with the formula of
 *     attention_forward. maxlen (host) bounds pos[i] + 1 over the rows (a
 *     backend may size shared memory by it); 0 <= slot < S, pos < maxlen <= maxT.
 *     On cpu_ref each row's arithmetic is that of attention_forward_kv and of
 *     attention_forward's row, so a slot decoded in a batch equals the same
 *     sequence decoded alone or recomputed in full, bit for bit.
 *
 * THE LLAMA FAMILY (core/policy/llama.c) adds a few ops; everything else it
 * shares with the GPT (matmul, attention, residual, crossentropy, adamw).
 * wpe may be NULL in encoder_forward, encoder_backward and encoder_forward_at:
 * then there are no learned positions (out = wte[inp]; dwpe is not touched).
 * KVH key/value heads (NH % KVH == 0), KV = KVH*hs, F the SwiGLU width.
 *
 * rmsnorm_forward(out (N,C) (=), rstd (N) (=) or NULL, inp (N,C), weight (C),
 *                 N, C, eps)
 *     s = 1/sqrt(mean_c(inp[i,:]^2) + eps); out[i,:] = inp[i,:]*s*weight;
 *     rstd[i] = s (not stored when NULL). No mean is subtracted, no bias.
 * rmsnorm_backward(dinp (N,C) (+=), dweight (C) (+=), dout (N,C), inp (N,C),
 *                  weight (C), rstd (N), N, C)
 *     With xhat = inp*rstd, dnorm = dout*weight:
 *       dweight += sum_i xhat[i,:]*dout[i,:];
 *       dinp[i,:] += rstd[i] * (dnorm - xhat*mean_c(dnorm*xhat)).
 * rope(x (N,stride) (in place), pos (N) int32 or NULL, N, T, stride, nheads,
 *      hs, rot, base, neox, inverse)
 *     Rotary positions on the first nheads heads (width hs, contiguous from
 *     column 0) of each row of x: row i is at position p = pos[i], or i % T
 *     when pos is NULL (training rows (B,T)). For j in [0, rot/2), with
 *     theta = p * base^(-2j/rot) (computed in double), c = cos theta,
 *     s = sin theta (s = -sin theta when inverse: the transpose, which is the
 *     backward of the rotation), the pair (a, b) of a head becomes
 *     (a c - b s, a s + b c). The pair is (2j, 2j+1) when neox = 0 (llama.cpp's
 *     LLAMA rope type, "NORM": GGUF Llama files, whose Q/K rows the converter
 *     permuted) and (j, j + rot/2) when neox = 1 (llama.cpp's NEOX type:
 *     Qwen2, and Hugging Face's rotate_half). Columns rot..hs-1 are untouched.
 *     rot is even, 2 <= rot <= hs.
 * swiglu_forward(out (N,F) (=), inp (N,2F), N, F)
 *     With g = inp[i, 0:F] (the gate) and u = inp[i, F:2F] (the up projection):
 *     out[i,j] = g/(1+exp(-g)) * u   (SiLU(g) * u).
 * swiglu_backward(dinp (N,2F) (=), inp (N,2F), dout (N,F), N, F)
 *     dg = dout * u * sig(g) * (1 + g (1 - sig(g)));  du = dout * SiLU(g).
 * kv_expand(out (N,3C) (=), inp (N,C+2KV), N, NH, KVH, hs)
 *     Grouped-query attention through the multi-head attention ops: q is
 *     copied, and q head h reads key/value head h / (NH/KVH) (llama.cpp's and
 *     Hugging Face's repeat_kv mapping):
 *       out[i, 0:C] = inp[i, 0:C];
 *       out[i, C + h*hs + d]  = inp[i, C + (h/(NH/KVH))*hs + d];
 *       out[i, 2C + h*hs + d] = inp[i, C + KV + (h/(NH/KVH))*hs + d].
 * kv_reduce(dinp (N,C+2KV) (=), dout (N,3C), N, NH, KVH, hs)
 *     The backward of kv_expand: dq copied, each key/value head's gradient
 *     the sum, in increasing h, over the NH/KVH query heads that read it.
 * attention_forward_kv_at_gqa(out (N,C) (=), qkv (N,C+2KV), kcache (S,maxT,KV),
 *                             vcache (S,maxT,KV), slot (N) int32, pos (N) int32,
 *                             N, C, NH, KVH, S, maxT, maxlen)
 *     attention_forward_kv_at with the compact rows and a cache of KVH heads
 *     (KV floats a position, not C): kcache[slot[i],pos[i],:] = inp[i, C:C+KV],
 *     vcache[...] = inp[i, C+KV:C+2KV], and query head h attends key/value
 *     head h/(NH/KVH). On cpu_ref each row's arithmetic is that of
 *     attention_forward over kv_expand's rows, bit for bit.
 *
 * THE OUTPUT HEAD ON THE TARGETED ROWS ONLY (gpt.c, head_forward): a training
 * forward whose positions do not all have a target gathers the final norm's
 * rows of those that do, runs the head, softmax and cross-entropy on them
 * alone, and scatters the head's input gradient back.
 * rows_gather(out (n,C) (=), inp (N,C), idx (n) int32, n, C)
 *     out[i,:] = inp[idx[i],:], 0 <= idx[i] < N.
 * rows_scatter(out (N,C), inp (n,C), idx (n) int32, n, C)
 *     out[idx[i],:] = inp[i,:]; the idx[i] are distinct; rows of out not
 *     listed are not touched (the policy zeroes out first).
 *
 * LORA (core/policy/lora.c): a frozen base passes dweight = NULL to
 * matmul_backward and rmsnorm_backward: then only dinp is computed (the
 * weight-gradient GEMM is skipped, which is what LoRA saves in compute).
 * axpy(y (n) (+=), x (n), alpha, n)
 *     y[i] += alpha * x[i]. A backend without it (NULL) has no LoRA path.
 * ---------------------------------------------------------------------------
 */
#ifndef SPADE_POLICY_BACKEND_H
#define SPADE_POLICY_BACKEND_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Error codes of the policy layer (0 = success). Kept here so backends can use them. */
enum {
    SPADE_POLICY_OK = 0,
    SPADE_POLICY_EINVAL = -1, /* bad argument or configuration */
    SPADE_POLICY_ENOMEM = -2, /* allocation failed (host or device) */
    SPADE_POLICY_EIO = -3, /* file system error */
    SPADE_POLICY_EFORMAT = -4, /* a file is not what it should be */
    SPADE_POLICY_ENODEV = -5, /* backend compiled in but no device present */
    SPADE_POLICY_EBACKEND = -6 /* a backend op failed (see the message) */
};

typedef struct spade_backend_vtable {
    const char *name; /* "cpu_ref", "cpu", "cuda" */

    /* lifetime and errors */
    void (*free)(void *ctx);
    const char *(*last_error)(void *ctx);

    /* memory */
    void *(*alloc)(void *ctx, size_t bytes);
    void (*dealloc)(void *ctx, void *p);
    int (*upload)(void *ctx, void *dst, const void *src, size_t bytes);
    int (*download)(void *ctx, void *dst, const void *src, size_t bytes);
    int (*copy)(void *ctx, void *dst, const void *src, size_t bytes);
    int (*zero)(void *ctx, void *dst, size_t bytes);
    int (*sync)(void *ctx);

    /* layer ops (shapes: see the comment at the top of this file) */
    int (*encoder_forward)(void *ctx, float *out, const int *inp, const float *wte, const float *wpe, int B, int T,
                           int C, int pos0);
    int (*encoder_backward)(void *ctx, float *dwte, float *dwpe, const float *dout, const int *inp, int B, int T,
                            int C);
    int (*layernorm_forward)(void *ctx, float *out, float *mean, float *rstd, const float *inp, const float *weight,
                             const float *bias, int N, int C);
    int (*layernorm_backward)(void *ctx, float *dinp, float *dweight, float *dbias, const float *dout, const float *inp,
                              const float *weight, const float *mean, const float *rstd, int N, int C);
    int (*matmul_forward)(void *ctx, float *out, const float *inp, const float *weight, const float *bias, int N,
                          int IC, int OC);
    int (*matmul_backward)(void *ctx, float *dinp, float *dweight, float *dbias, const float *dout, const float *inp,
                           const float *weight, int N, int IC, int OC);
    int (*attention_forward)(void *ctx, float *out, float *lse, float *att, const float *qkv, int B, int T, int C,
                             int NH);
    int (*attention_backward)(void *ctx, float *dqkv, const float *dout, const float *qkv, const float *out,
                              const float *lse, const float *att, int B, int T, int C, int NH);
    int (*attention_forward_kv)(void *ctx, float *out, const float *qkv, float *kcache, float *vcache, int B, int T,
                                int C, int NH, int pos0, int maxT);
    int (*gelu_forward)(void *ctx, float *out, const float *inp, size_t n);
    int (*gelu_backward)(void *ctx, float *dinp, const float *inp, const float *dout, size_t n);
    int (*residual_forward)(void *ctx, float *out, const float *a, const float *b, size_t n);
    int (*crossentropy_forward)(void *ctx, float *probs, float *logp, const float *logits, const int *targets, int N,
                                int V, int Vp);
    int (*crossentropy_backward)(void *ctx, float *dlogits, const float *probs, const int *targets, const float *dlogp,
                                 int N, int V, int Vp);
    int (*adamw)(void *ctx, float *params, const float *grads, float *m, float *v, size_t n, float lr, float beta1,
                 float beta2, float eps, float weight_decay, float grad_scale, int t);
    int (*sumsq)(void *ctx, const float *x, size_t n, double *out);
    /* the decoding batch (rows of several slots at their own positions) */
    int (*encoder_forward_at)(void *ctx, float *out, const int *inp, const int *pos, const float *wte, const float *wpe,
                              int N, int C);
    int (*attention_forward_kv_at)(void *ctx, float *out, const float *qkv, float *kcache, float *vcache,
                                   const int *slot, const int *pos, int N, int C, int NH, int S, int maxT, int maxlen);
    /* the Llama family (see above) */
    int (*rmsnorm_forward)(void *ctx, float *out, float *rstd, const float *inp, const float *weight, int N, int C,
                           float eps);
    int (*rmsnorm_backward)(void *ctx, float *dinp, float *dweight, const float *dout, const float *inp,
                            const float *weight, const float *rstd, int N, int C);
    int (*rope)(void *ctx, float *x, const int *pos, int N, int T, int stride, int nheads, int hs, int rot, float base,
                int neox, int inverse);
    int (*swiglu_forward)(void *ctx, float *out, const float *inp, int N, int F);
    int (*swiglu_backward)(void *ctx, float *dinp, const float *inp, const float *dout, int N, int F);
    int (*kv_expand)(void *ctx, float *out, const float *inp, int N, int NH, int KVH, int hs);
    int (*kv_reduce)(void *ctx, float *dinp, const float *dout, int N, int NH, int KVH, int hs);
    int (*attention_forward_kv_at_gqa)(void *ctx, float *out, const float *qkv, float *kcache, float *vcache,
                                       const int *slot, const int *pos, int N, int C, int NH, int KVH, int S, int maxT,
                                       int maxlen);

    /* 1: attention_forward/backward use the (B,NH,T,T) att buffer, which the
     * policy then allocates (T x T memory); 0: att is NULL. */
    int attention_probs;
    /* LoRA (lora.c): y (n) += alpha * x (n). NULL: the backend has no LoRA path. */
    int (*axpy)(void *ctx, float *y, const float *x, float alpha, size_t n);
    /* the head on the targeted rows (see above) */
    int (*rows_gather)(void *ctx, float *out, const float *inp, const int *idx, int n, int C);
    int (*rows_scatter)(void *ctx, float *out, const float *inp, const int *idx, int n, int C);
} spade_backend_vtable;

/* A backend instance: the table and its context. Plain struct, owned by the
 * policy; close it with spade_backend_close. */
typedef struct spade_backend {
    const spade_backend_vtable *vt;
    void *ctx;
} spade_backend;

/* Constructors. Each fills *be and returns 0, or returns nonzero with a message
 * in err. */
int spade_backend_cpu_ref_new(spade_backend *be, char *err, size_t errlen);
int spade_backend_cpu_new(spade_backend *be, char *err, size_t errlen);
int spade_backend_cpu_tt_new(spade_backend *be, char *err, size_t errlen);
/* SPADE_POLICY_CUDA: the CUDA backend is linked into this build. configure's
 * SPADE_HAVE_CUDA says nvcc and cuBLAS were found; core/policy/local.mk defines
 * SPADE_POLICY_NO_CUDA while backend_cuda.cu is not part of the build. */
#if defined(SPADE_HAVE_CUDA) && !defined(SPADE_POLICY_NO_CUDA)
#define SPADE_POLICY_CUDA 1
#endif

#ifdef SPADE_POLICY_CUDA
/* Implemented in backend_cuda.cu (C linkage). Returns SPADE_POLICY_ENODEV with a
 * message such as "no CUDA device (cudaGetDeviceCount: ...)" when the library
 * was built with CUDA but the machine has no usable GPU; that is not a crash,
 * callers fall back to the CPU. Must not leave a CUDA context half made. */
int spade_backend_cuda_new(spade_backend *be, char *err, size_t errlen);
/* The same, through the loadable module spade-cuda.so (cuda_module.c), loaded on
 * the first call: what spade_backend_open uses, so that a program never maps
 * cuBLAS until a CUDA backend is asked for. SPADE_POLICY_ENODEV, with every path
 * tried, when the module cannot be loaded. */
int spade_backend_cuda_load(spade_backend *be, char *err, size_t errlen);
#endif

/* Run-time selection: which = "auto" | "cpu" | "cuda" | "cpu_ref" (| "cpu_tt",
 * for benchmarks only: see the top of this file).
 * auto -> cuda when compiled in and a device is present, otherwise cpu; the
 * choice and the reason are written to note (e.g. "auto: no CUDA device
 * (...); using cpu (OpenBLAS, 2 threads)"), which callers print. note may be NULL. */
int spade_backend_open(const char *which, spade_backend *be, char *note, size_t notelen, char *err, size_t errlen);
void spade_backend_close(spade_backend *be);

/* Which GEMMs the cpu backend runs, for the backend note: "spade avx512
 * GEMMs" (or avx2, c); no variable changes them. */
void spade_backend_cpu_blas_note(char *buf, size_t len);

#ifdef __cplusplus
}
#endif

#endif /* SPADE_POLICY_BACKEND_H */
