/* gpt_internal.h — the inside of spade_policy, shared by the files of core/policy.
 *
 * What it is: the memory layout of the model, written out llm.c-style with the
 * shape beside every field, and the few internal helpers the other policy
 * files (checkpoint.c, grpo.c, sample.c) need.
 * What it is not: public API (policy.h) — nothing outside core/policy includes it.
 *
 * Every float* below points into backend memory (backend.h), carved out of ONE
 * allocation per kind: params_mem, grads_mem, m_mem, v_mem, acts_mem,
 * gacts_mem; a decoding batch has its own (decode.c). Shapes: L layers, C
 * width, NH heads, Vp padded vocab, maxT context, (B, T) the batch capacity
 * of the activations, (S, R) a decoding batch's slots and rows per pass.
 */
#ifndef SPADE_POLICY_GPT_INTERNAL_H
#define SPADE_POLICY_GPT_INTERNAL_H

#include "policy/policy.h"
#include "policy/q8.h"

#define NUM_PARAM_TENSORS 16
typedef struct {
    float *wte; /* (Vp, C)    token embeddings; also the output head (tied) */
    float *wpe; /* (maxT, C)  learned positions */
    float *ln1w; /* (L, C) */
    float *ln1b; /* (L, C) */
    float *qkvw; /* (L, 3C, C) */
    float *qkvb; /* (L, 3C) */
    float *attprojw; /* (L, C, C) */
    float *attprojb; /* (L, C) */
    float *ln2w; /* (L, C) */
    float *ln2b; /* (L, C) */
    float *fcw; /* (L, 4C, C) */
    float *fcb; /* (L, 4C) */
    float *fcprojw; /* (L, C, 4C) */
    float *fcprojb; /* (L, C) */
    float *lnfw; /* (C) */
    float *lnfb; /* (C) */
} ParameterTensors;

/* The Llama family (policy.arch = llama, llama.c): KVH key/value heads,
 * hs = C/NH, KV = KVH*hs, QKV = C + 2KV (the fused q|k|v rows), F the SwiGLU
 * width. Each field names the GGUF tensor it is loaded from (blk.N.* per layer). */
#define NUM_LLAMA_PARAM_TENSORS 10
typedef struct {
    float *wte; /* (Vp, C)      token_embd; also the output head when tied */
    float *ln1w; /* (L, C)       attn_norm */
    float *qkvw; /* (L, QKV, C)  attn_q rows [0,C), attn_k rows [C,C+KV), attn_v [C+KV,QKV) */
    float *qkvb; /* (L, QKV)     attn_q|k|v bias (Qwen2); 0 floats without policy.qkv_bias */
    float *attprojw; /* (L, C, C)    attn_output */
    float *ln2w; /* (L, C)       ffn_norm */
    float *fcw; /* (L, 2F, C)   ffn_gate rows [0,F), then ffn_up rows [F,2F) */
    float *fcprojw; /* (L, C, F)    ffn_down */
    float *lnfw; /* (C)          output_norm */
    float *head; /* (Vp, C)      output; 0 floats when tied */
} LlamaParameterTensors;

/* The GPT's activations; a Llama uses the same buffers with: ln*_mean 0
 * floats (RMSNorm has no mean), qkv (L,B,T,3C) the rotated q and the k/v
 * heads repeated to NH (kv_expand; the compact rows are not kept), fch
 * (L,B,T,2F) gate|up, fch_gelu (L,B,T,F) the SwiGLU output. */
#define NUM_ACT_TENSORS 23
typedef struct {
    float *encoded; /* (B, T, C)       wte[tok] + wpe[t] */
    float *ln1; /* (L, B, T, C) */
    float *ln1_mean; /* (L, B, T) */
    float *ln1_rstd; /* (L, B, T) */
    float *qkv; /* (L, B, T, 3C) */
    float *atty; /* (L, B, T, C)    attention output before the projection */
    float *att; /* (L, B, NH, T, T) softmax probabilities, only for backends
                 * with attention_probs (cpu_ref, cpu_tt); 0 floats otherwise */
    float *lse; /* (L, B, NH, T)   log-sum-exp of each score row: backward
                 * recomputes the probabilities from it, tile by tile */
    float *attproj; /* (L, B, T, C) */
    float *residual2; /* (L, B, T, C)    residual + attention */
    float *ln2; /* (L, B, T, C) */
    float *ln2_mean; /* (L, B, T) */
    float *ln2_rstd; /* (L, B, T) */
    float *fch; /* (L, B, T, 4C) */
    float *fch_gelu; /* (L, B, T, 4C) */
    float *fcproj; /* (L, B, T, C) */
    float *residual3; /* (L, B, T, C)    residual2 + MLP: the layer's output */
    float *lnf; /* (B, T, C) */
    float *lnf_mean; /* (B, T) */
    float *lnf_rstd; /* (B, T) */
    /* The head's rows (gpt.c, head_forward), views of head_mem: the
     * positions with a target, in position order, or every position (see
     * spade_policy's head_* fields); H = head_cap rows. */
    float *logits; /* (H, Vp) */
    float *probs; /* (H, Vp) */
    float *logp; /* (H)             log p(target) per row */
} ActivationTensors;

/* Gradients of activations: only what one layer's backward needs at a time
 * (the residual-stream gradient is walked down the layers in place), so this
 * is a few (B, T, *) buffers rather than a mirror of ActivationTensors. */
#define NUM_GACT_TENSORS 9
typedef struct {
    float *dlogits; /* (H, Vp) the head's rows; the same memory as acts.logits, which
                     * nothing reads after crossentropy_forward but sampled_rows (grpo.c),
                     * before the backward */
    float *dresidual; /* (B, T, C)  d loss / d residual stream at the current layer */
    float *dln; /* (B, T, C)  d loss / d layernorm output (scratch) */
    float *dqkv; /* (B, T, 3C) */
    float *datty; /* (B, T, C) */
    float *dfch; /* (B, T, 4C) */
    float *dfch_gelu; /* (B, T, 4C) */
    float *dlogp; /* (H)        loss weights of the head's rows, uploaded by the host */
    float *dqkvc; /* (B, T, QKV) Llama only (0 floats for a GPT): the compact q|k|v
                   * rows, in forward before kv_expand, in backward after kv_reduce */
} GradActTensors;

/* Inference with a KV cache, owned by a decoding batch (decode.c): R rows of
 * activations for one pass (the rows of every slot in it), the logits of the
 * slots that pass finishes, and the per-layer caches of its S slots. */
#define NUM_SAMPLE_TENSORS 14
typedef struct {
    float *res; /* (R, C)  residual stream */
    float *res2; /* (R, C)  residual stream (the other half of a ping-pong) */
    float *ln; /* (R, C) */
    float *qkv; /* (R, 3C); 0 floats for a Llama */
    float *atty; /* (R, C) */
    float *proj; /* (R, C) */
    float *fch; /* (R, 4C); a Llama's (R, 2F) gate|up */
    float *fchg; /* (R, 4C); a Llama's (R, F) */
    float *qkvc; /* (R, QKV) a Llama's compact q|k|v rows; 0 floats for a GPT */
    float *logits; /* (S, Vp) last position of each slot the pass finishes */
    float *lora_u; /* (R, r) a LoRA policy's x A^T; NULL without LoRA */
    float *lora_z; /* (R, widest adapted output) its (x A^T) B^T */
    float *kcache; /* (L, S, maxT, KW)  KW = kvw: C for a GPT; KV for a Llama (its KVH
                    * key/value heads, rotated, not repeated) */
    float *vcache; /* (L, S, maxT, KW) */
} SampleTensors;

/* LoRA (lora.c): one adapter per target and layer, A (L, r, in) and B (L, out, r);
 * NULL for a target not adapted. Targets: 0 attn_qkv (in C, out QKV), 1 attn_output
 * (C, C), 2 ffn_gate_up (C, 2F), 3 ffn_down (F, C). In memory: a0 b0 a1 b1 ... */
#define LORA_NT 4
#define LORA_ALL 15u
typedef struct {
    float *a[LORA_NT];
    float *b[LORA_NT];
} LoraTensors;
extern const char *const lora_target_names[LORA_NT];

enum { SPADE_ARCH_GPT = 0, SPADE_ARCH_LLAMA = 1 };

struct spade_policy {
    spade_gpt_config cfg;
    int L, NH, C, maxT, V, Vp;
    int arch; /* SPADE_ARCH_* */
    int KVH, QKV, F; /* Llama: kv heads, q|k|v row width, SwiGLU width */
    int rot, neox, tied, qkvbias; /* Llama: rotary dims, pairing, head, biases */
    int kvw; /* KV cache floats per position and layer */
    float eps, rope_base; /* Llama: RMSNorm epsilon, rotary base */
    int ntensors; /* parameter tensors of this arch */
    float *head; /* (Vp, C) the output head: wte or lparams.head */
    spade_backend be;
    char be_note[512];

    size_t param_sizes[NUM_PARAM_TENSORS];
    size_t num_params;
    float *params_mem;
    int params_borrowed; /* 1: params_mem is another policy's frozen weights, read in place
                          * (spade_policy_clone_adapters): never written, never freed here */
    /* that other policy (NULL unless params_borrowed): its quantized sampling
     * copies and their kind are read in its place too (sample_q8.c); it must
     * outlive this one */
    spade_policy *base_owner;
    ParameterTensors params; /* the weights (a Llama: wte only, wpe NULL) */
    size_t ntrain; /* floats of the trained vector: grads_mem, m_mem, v_mem (num_params) */
    float *grads_mem; /* NULL until the first backward or step (gpt_ensure_grads) */
    ParameterTensors grads; /* d loss / d weights, accumulated */
    LlamaParameterTensors lparams, lgrads; /* a Llama's weights and gradients */
    float *m_mem; /* (ntrain) AdamW first moment; NULL until the first step (gpt_ensure_moments) */
    float *v_mem; /* (ntrain) AdamW second moment; allocated with m_mem */
    long step; /* AdamW steps taken */

    int actB, actT; /* activation capacity */
    float *acts_mem;
    ActivationTensors acts;
    float *gacts_mem;
    GradActTensors gacts;
    int *io_mem; /* (2, actB, actT) tokens then targets */
    int *tokens_dev, *targets_dev; /* views of io_mem */
    float *mask_host; /* (actB, actT) loss mask of the last forward */
    float *logp_host; /* (actB, actT) log-probs of the last forward */
    int fwdB, fwdT; /* shape of the last forward (0: none) */
    int fwd_has_targets;
    double mask_sum;
    /* The output head of the last forward (gpt.c, head_forward). A training
     * forward whose positions do not all have a target runs the head, the
     * softmax and the cross-entropy on the positions that do ("compact"
     * rows, in position order: a designer sample's prompt has no target, and
     * a Qwen head row is 3 x 152 K floats with its gradient); one without
     * targets on the last position of each sequence (what decoding's
     * recompute reads). head_all = 1 keeps the head on every position: the
     * reference the tests compare the compact path against. gpt_head_row
     * maps a position to its row. */
    int head_all;
    int head_n; /* rows of the last forward's head */
    int head_full; /* 1: row = position (b*T + t); 0: compact, head_pos says which */
    size_t head_cap; /* rows head_mem holds: grown on demand, freed with the activations */
    float *head_mem; /* logits, probs (head_cap, Vp); logp, dlogp (head_cap); lnfc, dlnc */
    float *lnfc, *dlnc; /* (head_cap, C) the compact rows of lnf, and their gradient */
    int *head_io; /* (2, head_cap) backend: the compact rows' positions, then their targets */
    const int *head_tg; /* the rows' targets on the backend: targets_dev or head_io + head_cap */
    int *head_pos; /* (2, head_cap) host: positions, then targets, of the compact rows */
    float *head_dl; /* (head_cap) host: the rows' logp (forward) or dlogp (backward) */

    /* LoRA (lora.c): lora_r = 0 without. The trained vector is then the
     * adapters (lora_mem, ntrain floats) and the base weights are frozen. */
    int lora_r;
    float lora_alpha, lora_scale; /* scale = alpha / r */
    unsigned lora_mask; /* 1 << target */
    size_t lora_sizes[2 * LORA_NT];
    float *lora_mem;
    LoraTensors lw, lgr; /* adapters and their gradients (views of lora_mem, grads_mem) */
    float *lora_acts; /* training: saved x A^T per target and layer, and scratch */
    size_t lora_acts_cap; /* rows it holds */
    /* Where the base weights came from, for a LoRA checkpoint (checkpoint.c):
     * 1 a model file (origin = its name or absolute path), 2 a spade
     * checkpoint (its path), 0 made here (seeded init); origin_sha256: the
     * file's, computed when LoRA is enabled. */
    int origin_kind;
    char origin[1024];
    char origin_sha256[65];

    spade_decoder *dec; /* spade_policy_sample's decoding batch */
    /* sample_weights = q8_0 or q4_1 (sample_q8.c): 8-bit (q4_1: the layers'
     * 4-bit) copies of a Llama's matrices for the decoding batch, 4 a layer
     * (qkv, attproj, fc, fcproj) and the head last; q8_valid = 0 after the
     * base weights change (not after a LoRA step: they hold the frozen base);
     * q8_builds counts the quantizations. A policy with a base_owner holds
     * none: it uses (and, when stale, builds) its owner's. */
    spade_q8mat *q8;
    int q8_valid;
    long q8_builds;

    spade_tokenizer *tok; /* owned; NULL only inside gpt_alloc's callers */
};

/* Grows the training activations to hold (B, T). */
int gpt_ensure_acts(spade_policy *p, int B, int T, char *err, size_t errlen);
/* The row of acts.logits / acts.probs holding position pos (b*T + t) of the
 * last forward, or -1 when the head did not run there. */
long gpt_head_row(const spade_policy *p, size_t pos);
/* Names of the parameter tensors and whether AdamW decays them. */
extern const char *const gpt_param_names[NUM_PARAM_TENSORS];
/* Allocate the gradients / the AdamW moments (zeroed) if they are not yet:
 * a policy is born with its weights only, so that one opened to sample,
 * score or export never holds training state. */
int gpt_ensure_grads(spade_policy *p, char *err, size_t errlen);
int gpt_ensure_moments(spade_policy *p, char *err, size_t errlen);
/* LoRA (lora.c). enable: adapters of rank r on the targets (a mask), A
 * seeded, B = 0; only on a policy just opened (no grads, moments, decoder or
 * step). lora_ensure_acts sizes the saved activations to the training
 * capacity; lora_forward adds s (x A^T) B^T of target t, layer l into y (n
 * rows) and keeps x A^T for lora_backward, which adds the adapters'
 * gradients and x's (into dx) given dy. lora_apply is the forward with the
 * caller's scratch (the decoding batch's). lora_step: AdamW over the adapters.
 * gpt_lora_merge adds s B A into the host copy h of the parameters. */
int gpt_lora_enable(spade_policy *p, int rank, float alpha, unsigned targets, char *err, size_t errlen);
void gpt_lora_free(spade_policy *p);
int lora_parse_targets(const char *v, unsigned *mask);
void lora_point_grads(spade_policy *p, float *mem);
int lora_ensure_acts(spade_policy *p, char *err, size_t errlen);
int lora_forward(spade_policy *p, int t, int l, float *y, const float *x, int n, char *err, size_t errlen);
int lora_apply(spade_policy *p, int t, int l, float *y, const float *x, int n, float *u, float *z, char *err,
               size_t errlen);
int lora_backward(spade_policy *p, int t, int l, float *dx, const float *dy, const float *x, int n, char *err,
                  size_t errlen);
int lora_step(spade_policy *p, const spade_adamw_opts *o, float scale, char *err, size_t errlen);
int gpt_lora_merge(spade_policy *p, float *h, char *err, size_t errlen);
/* Floats of the adapters a config's lora_* keys make on its base (0 without). */
size_t gpt_lora_count(const spade_gpt_config *c);
/* Points the gradient tensors at mem (the layout of grads_mem), and grads_mem too. */
void gpt_point_grads(spade_policy *p, float *mem);

/* The Llama family (llama.c). Sizes and names of its parameter tensors; */
void llama_param_sizes(const spade_gpt_config *c, size_t *s);
extern const char *const llama_param_names[NUM_LLAMA_PARAM_TENSORS];
extern const int llama_param_decay[NUM_LLAMA_PARAM_TENSORS];
void llama_point_params(LlamaParameterTensors *t, float *mem, const size_t *sizes);
/* Fills h (num_params floats) with the initial weights; */
void llama_init_weights(spade_policy *p, float *h, uint64_t seed);
/* The training passes over (B, T) rows whose tokens are in p->tokens_dev:
 * forward up to the final norm (acts.lnf), backward from d.dln, the head's
 * input gradient (gpt.c runs the head between them). */
int llama_forward(spade_policy *p, int B, int T, char *err, size_t errlen);
int llama_backward(spade_policy *p, int B, int T, char *err, size_t errlen);
/* The decoding batch's layers over r rows (decode.c), residual stream in and
 * out of s->res; tok/slot/pos are the rows' backend arrays. */
int llama_pass_layers(spade_policy *p, const SampleTensors *s, int r, const int *tok, const int *slot, const int *pos,
                      int S, int maxlen, char *err, size_t errlen);
/* The final norm of either architecture over n rows (inference: no statistics kept). */
int gpt_final_norm(spade_policy *p, float *out, const float *inp, int n, char *err, size_t errlen);
/* policy.sample_weights (sample_q8.c): "f32" / "" -> 0, "q8_0" -> 1, "q4_1" -> 2; returns 0, else -1. */
int spade_sample_weights_parse(const char *v, int *q8);
/* Builds the 8-bit (4-bit) copies if sample_weights = q8_0 (q4_1) and they are stale. */
int policy_q8_sync(spade_policy *p, char *err, size_t errlen);
void policy_q8_free(spade_policy *p);
/* out = in W^T + bias through 8-bit copy `which` (4 l + 0..3; 4 L: the head)
 * when the copies are built, else the backend's F32 matmul_forward of w. */
int policy_q8_matmul(spade_policy *p, int which, float *out, const float *in, const float *w, const float *bias, int r,
                     int IC, int OC, char *err, size_t errlen);
/* Formats the backend's last error into err with a prefix; returns SPADE_POLICY_EBACKEND. */
int gpt_backend_fail(spade_policy *p, const char *what, char *err, size_t errlen);
/* In a function with spade_policy *p and (err, errlen): the policy's backend,
 * its context, and a backend call that returns the failure when it fails. Every
 * backend call goes through CK so that a failing op stops the pass and the
 * message says which op it was. */
#define BE (p->be.vt)
#define BX (p->be.ctx)
#define CK(call)                                                                                                       \
    do {                                                                                                               \
        if ((call) != 0) return gpt_backend_fail(p, #call, err, errlen);                                               \
    } while (0)
/* Allocates a policy for cfg without initialising the weights (checkpoint load). */
int gpt_alloc(spade_policy **out, const spade_gpt_config *cfg, char *err, size_t errlen);
/* spade_policy_new_with_tokenizer; init = 0 leaves every parameter 0 for a
 * caller that sets them all (a GGUF load: drawing 135 M normal numbers that
 * the file's weights replace took a third of the load). */
int gpt_policy_new(spade_policy **out, const spade_gpt_config *cfg, const spade_tokenizer *tok, int init, char *err,
                   size_t errlen);

/* The decoder under spade_policy_sample (decode.c). gpt_decoder_push records
 * tokens in a slot without running them (the full-recompute path needs no
 * cache); gpt_decoder_sample is spade_decoder_sample with `who` naming the
 * caller in messages and `index_name` what a request is called there. */
int gpt_decoder_push(spade_decoder *d, int slot, const int *tokens, int n, char *err, size_t errlen);
int gpt_decoder_sample(spade_decoder *d, const int *slots, int n, const spade_sample_opts *o, const uint64_t *seeds,
                       const int *max_tokens, int *out_tokens, float *out_logprobs, int *out_len, int *out_status,
                       const char *who, const char *index_name, char *err, size_t errlen);
/* Checks temperature, top_p and the stop list; messages start with who. */
int gpt_check_sample_opts(const spade_sample_opts *o, const char *who, char *err, size_t errlen);
/* The distribution a draw at (temp > 0, top_p) samples from, for GRPO's
 * ratio (decode.c): probs (V floats, may be NULL) gets it, renormalised over
 * the nucleus, 0 outside; tok is kept in it even when it has fallen out
 * (with its own weight), so its log-prob, the return value, is finite. NaN
 * for logits that are not finite. scratch: gpt_sampled_dist_scratch(V) bytes. */
double gpt_sampled_dist(const float *logits, int V, float temp, float top_p, int tok, void *scratch, float *probs);
size_t gpt_sampled_dist_scratch(int V);

/* A small seeded generator (splitmix64): identical streams on every platform. */
static inline uint64_t gpt_rng_next(uint64_t *s) {
    uint64_t z = (*s += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}
/* Uniform in [0, 1) with 53 random bits. */
static inline double gpt_rng_uniform(uint64_t *s) {
    return (double)(gpt_rng_next(s) >> 11) * (1.0 / 9007199254740992.0);
}

#endif
