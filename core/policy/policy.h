/* policy.h — the policy object both roles share: a GPT (pre-LayerNorm, GELU,
 * learned positions, tied embeddings) or a Llama-family model (policy.arch =
 * llama: RMSNorm, rotary positions, grouped-query attention, SwiGLU; llama.c)
 * over a byte or BPE tokenizer, with training,
 * sampling with a KV cache, log-probs, AdamW, checkpoints and the GRPO loss.
 *
 * What it is: the public C API of core/policy. One opaque spade_policy owns a
 * backend (backend.h) and, on it, one allocation each for parameters,
 * gradients, AdamW m, AdamW v, activations, activation gradients and the
 * sampling workspace (the layout is written out in gpt.c).
 * What it is not: the self-play loop (it only computes losses and gradients
 * for samples it is handed) nor the run's configuration layer (which calls
 * spade_gpt_config_set for the [policy] keys it reads).
 *
 * Conventions: every function that can fail returns 0 or a negative
 * SPADE_POLICY_E* code (backend.h) and writes a message into err (errlen bytes,
 * may be NULL/0) with spade_errf, as the rest of the library does
 * (docs/architecture.md, "Errors at module boundaries"). Nothing here exits or
 * prints, except where said.
 */
#ifndef SPADE_POLICY_POLICY_H
#define SPADE_POLICY_POLICY_H

#include <stddef.h>
#include <stdint.h>

#include "policy/backend.h"
#include "policy/tokenizer.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- configuration ([policy] section of a run's .ini) ---- */

typedef struct spade_gpt_config {
    int layers; /* policy.layers   L, >= 1 */
    int heads; /* policy.heads    NH, divides width */
    int width; /* policy.width    C, channels */
    int context; /* policy.context  maxT, positions (prompt + completion) */
    char backend[16]; /* policy.backend  auto | cpu | cuda | cpu_ref */
    uint64_t seed; /* policy.seed     initialisation seed */
    char tokenizer[8]; /* policy.tokenizer  bytes | bpe */
    char tokenizer_file[1024]; /* policy.tokenizer_file  the BPE file (spade tokenizer train) that
                                * spade_policy_new loads when tokenizer = bpe */
    int vocab; /* V of the policy's tokenizer; not a key: 0 until a tokenizer is known
                * (then the byte tokenizer's 263 is assumed), set by spade_policy_new*
                * and read from checkpoints. Vp = SPADE_VOCAB_PAD(V). */
    /* The architecture, and the keys only the Llama family reads. Every one of
     * them is 0 / empty in its default, so a config zeroed by hand is a GPT, and
     * a Llama with zeros takes the Llama defaults named here. A GGUF loader
     * fills them from the file's llama.* / qwen2.* metadata (core/policy/llama.c). */
    char arch[8]; /* policy.arch       gpt (default; "" reads as gpt) | llama (Llama, SmolLM2,
                   * Qwen2: RMSNorm, rotary positions, grouped-query attention, SwiGLU) */
    int kv_heads; /* policy.kv_heads   KVH, key/value heads, divides heads; 0 = heads */
    int ffn; /* policy.ffn        F, the SwiGLU hidden width; 0 = 4 x width */
    double rope_base; /* policy.rope_base  the rotary base; 0 = 10000 */
    int rope_dims; /* policy.rope_dims  rotated dimensions per head, even; 0 = the head size */
    int rope_neox; /* policy.rope_pairing  adjacent (0: pairs (2j, 2j+1), llama.cpp's LLAMA rope,
                    * GGUF llama files) | half (1: pairs (j, j + rot/2), llama.cpp's NEOX rope,
                    * GGUF qwen2 files and Hugging Face checkpoints) */
    float norm_eps; /* policy.norm_eps   the RMSNorm epsilon; 0 = 1e-5 */
    int untied; /* policy.tied       1 (default): the output head is wte; 0: its own (Vp, C) */
    int qkv_bias; /* policy.qkv_bias   0 (default) | 1: Q/K/V biases (Qwen2) */
    char sample_weights[8]; /* policy.sample_weights  f32 (default; "" reads as f32) | q8_0: sampling
                             * (the decoding batch) multiplies by 8-bit copies of the weights
                             * (core/policy/q8.h) | q4_1: by 4-bit copies of the layers' matrices
                             * (Q4_1's rounding) and an 8-bit head; a Llama on the cpu backend
                             * only; training and log-probs stay F32. Not saved in checkpoints. */
    /* LoRA (arch llama only): the base weights frozen, low-rank adapters
     * trained (core/policy/lora.c, docs/policy.md "LoRA"). */
    int lora_rank; /* policy.lora_rank     r, 0 = off (default) */
    float lora_alpha; /* policy.lora_alpha    the adapters' scale is alpha / r; 0 = r */
    unsigned lora_targets; /* policy.lora_targets  attn_qkv, attn_output, ffn_gate_up, ffn_down (a
                            * bit each in that order); 0 = all four */
} spade_gpt_config;

/* Defaults: 4 layers, 4 heads, width 128, context 256, backend auto, seed 1337,
 * tokenizer bytes. */
void spade_gpt_config_default(spade_gpt_config *cfg);
/* Sets one key ("policy.layers" or, inside a [policy] section, "layers") from
 * its text value. Returns 0; SPADE_POLICY_EINVAL for a bad value (err names the
 * key, the value and the accepted range); SPADE_POLICY_ENOKEY for a key that is
 * not a policy key (err names it). */
#define SPADE_POLICY_ENOKEY (-7)
int spade_gpt_config_set(spade_gpt_config *cfg, const char *key, const char *value, char *err, size_t errlen);
/* Cross-key checks (heads divides width, ...); err names the keys involved. */
int spade_gpt_config_validate(const spade_gpt_config *cfg, char *err, size_t errlen);
/* 1 when a and b are the same architecture (policy.arch and every Llama key,
 * defaults resolved), 0 otherwise: with layers, heads, width and context,
 * what decides whether a checkpoint's weights fit a config. */
int spade_gpt_config_same_arch(const spade_gpt_config *a, const spade_gpt_config *b);
/* Number of parameters of a configuration (including the padded vocabulary rows). */
size_t spade_gpt_config_num_params(const spade_gpt_config *cfg);

/* ---- the policy ---- */

typedef struct spade_policy spade_policy;
/* policy.sample_weights of a live policy ("f32", "q8_0" or "q4_1"; a model
 * from spade_policy_from_model starts at f32). Returns 0 or SPADE_POLICY_EINVAL.
 * q8_0 or q4_1 on a GPT or off the cpu backend fails at the first sampling pass. */
int spade_policy_set_sample_weights(spade_policy *p, const char *kind, char *err, size_t errlen);
/* How many times the policy has built its quantized sampling copies (q8_0 or
 * q4_1; 0 at f32): once after each change of the base weights (a full-weight
 * step, spade_policy_set_params, a checkpoint) or of sample_weights, never
 * after a LoRA step, whose base is frozen: the count lets a test see that an
 * update did not requantize the base. */
long spade_policy_sample_weights_builds(const spade_policy *p);

/* Creates a policy with freshly initialised weights (deterministic in cfg->seed:
 * the same seed gives bit-identical parameters on every backend). Its
 * tokenizer: the byte tokenizer, or with tokenizer = bpe the file
 * cfg->tokenizer_file (an error naming the file when it is missing or bad). */
int spade_policy_new(spade_policy **out, const spade_gpt_config *cfg, char *err, size_t errlen);
/* The same with the tokenizer given (copied; NULL: as spade_policy_new). The
 * vocabulary, hence the embedding size, follows from it. */
int spade_policy_new_with_tokenizer(spade_policy **out, const spade_gpt_config *cfg, const spade_tokenizer *tok,
                                    char *err, size_t errlen);
/* The policy's tokenizer (owned by the policy; saved inside its checkpoints).
 * Not const: encoding fills its cache. */
spade_tokenizer *spade_policy_tokenizer(spade_policy *p);
void spade_policy_free(spade_policy *p);
/* A new policy with the same config, parameters and step (not optimizer
 * state), on backend `backend` (NULL: the source's config value). Used for a
 * frozen GRPO reference and for cross-backend tests. */
int spade_policy_clone(spade_policy **out, const spade_policy *src, const char *backend, char *err, size_t errlen);
/* A copy that can train as src would while holding only what trains: for a
 * LoRA policy, its own adapters (and the step count; the moments and the
 * scratch a step needs come as for any policy) over src's frozen base weights,
 * read in place on src's backend, so the copy of Qwen2.5-Coder-0.5B at rank 8
 * holds 3.9 M adapter floats (62 MB with gradient and moments), not 2 GB of
 * weights. Under sample_weights = q8_0 / q4_1 it samples with src's
 * quantized copies of that base as well (its adapters, its own, run in F32
 * beside them), building none of its own: its first sampling pass builds
 * src's if they are stale, as src's next pass would, and it follows src's
 * sample_weights (setting its own is refused). src must outlive the copy
 * (free the copy first); its base never
 * changes under LoRA, and the copy refuses spade_policy_set_params. Without
 * LoRA everything trains: a full spade_policy_clone on src's backend. Used by
 * self-play's learning-potential look-ahead, whose copy takes one step and is
 * dropped. */
int spade_policy_clone_adapters(spade_policy **out, const spade_policy *src, char *err, size_t errlen);
/* 1 when p reads another policy's weights in place (spade_policy_clone_adapters on a LoRA policy). */
int spade_policy_shares_weights(const spade_policy *p);

const spade_gpt_config *spade_policy_config(const spade_policy *p);
/* The backend in use ("cpu", "cuda", "cpu_ref") and how it was chosen
 * (e.g. "auto: built without CUDA; using cpu (cblas GEMMs, 2 OpenMP threads)"). */
const char *spade_policy_backend_name(const spade_policy *p);
const char *spade_policy_backend_note(const spade_policy *p);
size_t spade_policy_num_params(const spade_policy *p);
/* Optimizer steps taken so far (saved in checkpoints). */
long spade_policy_steps(const spade_policy *p);

/* Parameter tensors by index 0..n-1 (wte, wpe, ln1w, ... lnfb): name, offset
 * into the flat parameter vector, element count. Returns -1 past the end. */
int spade_policy_tensor(const spade_policy *p, int i, const char **name, size_t *offset, size_t *count);
/* Host copies of the flat parameter vector (num_params floats). */
int spade_policy_get_params(spade_policy *p, float *host, char *err, size_t errlen);
int spade_policy_set_params(spade_policy *p, const float *host, char *err, size_t errlen);
/* Puts LoRA adapters of rank in 1..1024 on a Llama-family policy just
 * opened (from a model, a checkpoint or spade_policy_new; no gradient or
 * decoder yet; a checkpoint's AdamW moments and step count are dropped, the
 * adapters' optimizer starts at step 0): alpha <= 0 means rank; targets a set of bits as
 * spade_gpt_config's lora_targets (0: all). A is drawn from the
 * policy's seed, B is 0, so the policy computes exactly what it did. From
 * then on only the adapters train; checkpoints hold them and name the base
 * (spade_policy_save). The cuda backend refuses (no LoRA path yet). */
int spade_policy_lora(spade_policy *p, int rank, float alpha, unsigned targets, char *err, size_t errlen);
/* The adapters' rank (0: no LoRA). */
int spade_policy_lora_rank(const spade_policy *p);
/* The trained vector (num_trainable floats): the adapters with LoRA, else the parameters. */
int spade_policy_get_trainable(spade_policy *p, float *host, char *err, size_t errlen);
int spade_policy_set_trainable(spade_policy *p, const float *host, char *err, size_t errlen);
/* Floats of the trained vector: num_params, or with LoRA (spade_policy_lora)
 * the adapters' only. Gradients and AdamW moments have this size; they are
 * allocated by the first backward / step / set_moments, not by opening a
 * policy (a policy opened to sample holds its weights only). */
size_t spade_policy_num_trainable(const spade_policy *p);
/* The gradient (num_trainable floats; zeros before any backward). */
int spade_policy_get_grads(spade_policy *p, float *host, char *err, size_t errlen);
/* AdamW moments (num_trainable floats each; either may be NULL; zeros before any step). */
int spade_policy_get_moments(spade_policy *p, float *m, float *v, char *err, size_t errlen);
/* Sets them (either may be NULL): with spade_policy_clone, a copy that takes
 * exactly the step the source would (self-play's learning-potential look-ahead). */
int spade_policy_set_moments(spade_policy *p, const float *m, const float *v, char *err, size_t errlen);

/* ---- training ---- */

/* Frees the training passes' activations (and a LoRA policy's saved x A^T):
 * they are sized to the longest batch trained so far and kept for the next
 * forward, ~2.4 MB a token for Qwen2.5-Coder-0.5B and 1.2 MB more a trained
 * token (the head runs on those only), so one 3,000-token designer sample
 * with 1,000 trained leaves ~8.3 GB held through the sampling that follows. The next
 * forward allocates them again; a backward before it is refused, as with no
 * forward. The weights, adapters, gradient and moments are untouched. */
void spade_policy_release_training_scratch(spade_policy *p);

/* Forward pass over B sequences of T tokens (T <= context).
 * targets (B,T): the token to predict at each position (usually tokens shifted
 *   left by one); -1 = nothing to predict there. NULL: no loss is formed.
 * mask (B,T) or NULL (= 1 wherever targets >= 0): the loss weight per position;
 *   training only on chosen tokens is a 0/1 mask.
 * loss (may be NULL): sum(mask * -log p(target)) / sum(mask) (0 if sum(mask) = 0).
 * logp (may be NULL, B*T floats): log p(targets[b,t]) per position (0 where -1).
 * The activations are kept for spade_policy_backward. The output head runs on
 * the positions whose target is >= 0 only (a prompt's -1 costs neither its
 * product nor its Vp-wide rows; docs/policy.md). */
int spade_policy_forward(spade_policy *p, const int *tokens, const int *targets, const float *mask, int B, int T,
                         float *loss, float *logp, char *err, size_t errlen);
/* Backward pass of the last forward's masked mean loss, times scale (use 1/k
 * when accumulating k micro-batches). Gradients ACCUMULATE into the policy. */
int spade_policy_backward(spade_policy *p, float scale, char *err, size_t errlen);
/* Backward pass of an arbitrary loss of the last forward's log-probs: dlogp
 * (B*T floats, host) is dLoss/dlogp[b,t]. Gradients accumulate. */
int spade_policy_backward_logp(spade_policy *p, const float *dlogp, char *err, size_t errlen);
int spade_policy_zero_grad(spade_policy *p, char *err, size_t errlen);

typedef struct spade_adamw_opts {
    float lr; /* learning rate (3e-4) */
    float beta1, beta2; /* 0.9, 0.95 */
    float eps; /* 1e-8 */
    float weight_decay; /* 0.1, applied to matrices (wte, wpe, qkvw, attprojw, fcw, fcprojw) only */
    float grad_clip; /* clip the global gradient L2 norm to this (1.0); <= 0: no clipping */
} spade_adamw_opts;
void spade_adamw_opts_default(spade_adamw_opts *o);
/* One AdamW step with the accumulated gradients (clipped by global norm), then
 * zeroes the gradients. grad_norm (may be NULL) receives the norm before clipping.
 * A non-finite gradient norm skips the step (weights and step count untouched,
 * gradients zeroed) and returns SPADE_POLICY_EINVAL; so do options that would
 * make the update non-finite (lr NaN, a beta outside [0, 1), eps <= 0, ...),
 * checked before anything changes. */
int spade_policy_step(spade_policy *p, const spade_adamw_opts *o, float *grad_norm, char *err, size_t errlen);

/* ---- log-probs ---- */

/* logp[b*T+t] = log p(tokens[b,t+1] | tokens[b,0..t]) for t < T-1, and 0 at t = T-1.
 * Temperature 1, no top-p: the policy itself. GRPO differentiates the same
 * model at each sample's own temperature and top-p (spade_grpo_sample). */
int spade_policy_logprobs(spade_policy *p, const int *tokens, int B, int T, float *logp, char *err, size_t errlen);
/* Per-token log-probs of one completion after one prompt: out[i] = log p(completion[i] |
 * prompt, completion[0..i)) for i < clen. Every token must be in [0, V). */
int spade_policy_completion_logprobs(spade_policy *p, const int *prompt, int plen, const int *completion, int clen,
                                     float *out, char *err, size_t errlen);

/* ---- sampling ---- */

typedef struct spade_sample_opts {
    float temperature; /* 1.0; 0 = greedy (argmax); finite, >= 0 */
    float top_p; /* 1.0 = off; keep the smallest set of tokens with mass >= top_p; (0, 1] */
    int max_tokens; /* completion length limit (also bounded by the context) */
    const int *stop; /* stop tokens (the stop token is kept as the last completion token) */
    int n_stop;
    uint64_t seed; /* completion g draws from its own stream seeded by (seed, g) */
    int no_kv_cache; /* 1: recompute the whole sequence each token (slow; for tests/bench) */
} spade_sample_opts;
/* temperature 1, top_p 1, max_tokens 256, stop = {<|end|>}, seed 0, KV cache on. */
void spade_sample_opts_default(spade_sample_opts *o);

/* G completions of one prompt, batched. out_tokens (G, max_tokens) row-major,
 * out_len (G) the length of each completion, out_logprobs (G, max_tokens) or
 * NULL: the log-prob of each sampled token under the distribution it was
 * drawn from (log softmax(z / temperature) at it, renormalised over the
 * nucleus when top_p < 1; 0 for greedy, a point mass): GRPO's "old
 * log-probs", given with the same temperature and top_p in the sample.
 * Logits that are not finite (a model with NaN/inf weights) are an error. */
int spade_policy_sample(spade_policy *p, const int *prompt, int plen, int G, const spade_sample_opts *o,
                        int *out_tokens, float *out_logprobs, int *out_len, char *err, size_t errlen);

/* ---- the decoding batch ---- */

/* A decoding batch: up to max_slots token sequences ("slots"), each with its
 * own length and its own KV cache that persists across calls, so that an
 * episode's turns append to what is already computed instead of re-reading
 * the history, and episodes of different lengths decode in one batch.
 * spade_policy_sample is one use of it (one prompt, copied to G slots).
 *
 * A decoder borrows its policy: free it before the policy. It reads the
 * policy's weights at every pass, but what is in a cache was computed with
 * the weights of its time: after an optimizer step, reset the slots (or
 * accept stale keys/values, as an off-policy sampler would).
 *
 * The context rule: a slot holds at most policy.context tokens (appended
 * plus sampled). An append that would pass it appends nothing and returns
 * SPADE_SLOT_CONTEXT_FULL (> 0: not an error, the slot is unchanged);
 * sampling stops a slot when its last sampled token fills the context, with
 * status SPADE_SLOT_CONTEXT_FULL, and a slot already full samples nothing
 * (length 0, the same status). Nothing is ever dropped from the front.
 *
 * Memory: 2 x layers x max_slots x context x width floats of cache on the
 * backend, allocated by spade_decoder_new, plus a fixed row workspace; no
 * call after that allocates backend memory (except o->no_kv_cache, which
 * runs the policy's training forward), and resetting a slot is free. */
typedef struct spade_decoder spade_decoder;

/* Per-slot outcome of spade_decoder_sample (and of an append that did not fit). */
enum {
    SPADE_SLOT_STOP = 1, /* drew a stop token (kept as its last token) */
    SPADE_SLOT_MAX_TOKENS = 2, /* drew its max_tokens */
    SPADE_SLOT_CONTEXT_FULL = 3 /* the slot holds policy.context tokens */
};

/* max_slots in 1..65536; err says how many bytes the caches needed when they
 * do not fit. All slots start empty. */
int spade_decoder_new(spade_decoder **out, spade_policy *p, int max_slots, char *err, size_t errlen);
void spade_decoder_free(spade_decoder *d);
int spade_decoder_slots(const spade_decoder *d);
/* Tokens in slot (appended + sampled); -1 when slot is out of range. */
int spade_decoder_len(const spade_decoder *d, int slot);
/* The slot's tokens (spade_decoder_len of them), valid until the next call
 * that changes the slot; NULL when slot is out of range. */
const int *spade_decoder_tokens(const spade_decoder *d, int slot);
/* Empties a slot for reuse (no memory is touched or freed). */
int spade_decoder_reset(spade_decoder *d, int slot, char *err, size_t errlen);
/* dst becomes a copy of src: its tokens, cache and next-token state (G
 * samples of one prompt prefill it once). dst == src is a no-op. */
int spade_decoder_copy(spade_decoder *d, int dst, int src, char *err, size_t errlen);

/* Appends n >= 1 tokens (each in [0, V)) to a slot and runs them through the
 * model (prefill), continuing after whatever the slot holds (a sampled last
 * token included). Returns 0, SPADE_SLOT_CONTEXT_FULL (nothing appended), or
 * a negative error. */
int spade_decoder_append(spade_decoder *d, int slot, const int *tokens, int n, char *err, size_t errlen);
/* The same for count distinct slots in ONE batched pass (chunked only past
 * the row workspace, 512 rows or max_slots): slot slots[i] gets n[i] tokens
 * tokens[i]. status[i] (may be NULL): 0, or SPADE_SLOT_CONTEXT_FULL for a
 * slot that did not fit (left unchanged; the others still run). Bad input
 * (any slot, token or count) is an error before anything changes. */
int spade_decoder_append_batch(spade_decoder *d, const int *slots, const int *const *tokens, const int *n, int count,
                               int *status, char *err, size_t errlen);
/* spade_decoder_append_batch for prompts that share a prefix (the designer's
 * system card and instructions): the longest prefix common to the lists of
 * the listed slots that are empty (and fit the context) is prefilled once, in
 * the first of them, and its keys/values copied to the others
 * (spade_decoder_copy); then every slot's remainder runs in one batch. The
 * slots end as append_batch leaves them: the same tokens, and on cpu_ref the
 * same caches and logits bit for bit (a row's arithmetic does not depend on
 * its pass); on cpu within cblas rounding. Non-empty slots, or fewer than two
 * empty ones, are appended as by append_batch. Same status and errors. */
int spade_decoder_append_shared(spade_decoder *d, const int *slots, const int *const *tokens, const int *n, int count,
                                int *status, char *err, size_t errlen);

/* Samples continuations of n distinct, non-empty slots together, one token
 * per slot per pass, until each stops (stop token, its max tokens, or the
 * context). Options o (NULL: defaults): temperature, top_p and the stop list
 * are shared; o->max_tokens is the row stride of the outputs and the default
 * per-slot limit; max_tokens[i] (NULL: all o->max_tokens) in 1..o->max_tokens
 * limits request i. Request i draws from the stream seeded by (seeds[i], 0)
 * when seeds is given, else (o->seed, i): a slot sampled alone with seed s
 * gives what it gives among others with seed s, and what spade_policy_sample
 * gives its first completion with o->seed = s. o->no_kv_cache recomputes
 * every step from the slot's tokens (slow; the reference for tests).
 * Outputs: out_tokens (n, o->max_tokens); out_logprobs (same shape, may be
 * NULL): the log-prob of each drawn token under the distribution it was
 * drawn from, as spade_policy_sample's (GRPO's old log-probs); out_len (n);
 * out_status (n, may be NULL):
 * SPADE_SLOT_*. The drawn tokens are appended to the slots. */
int spade_decoder_sample(spade_decoder *d, const int *slots, int n, const spade_sample_opts *o, const uint64_t *seeds,
                         const int *max_tokens, int *out_tokens, float *out_logprobs, int *out_len, int *out_status,
                         char *err, size_t errlen);
/* log p(v | the slot's tokens) for v in [0, V) at temperature 1: the
 * distribution the next sample of this slot draws from at temperature 1
 * without top-p (other options draw from it tempered and truncated, as
 * spade_decoder_sample's log-probs say). The slot must be non-empty. */
int spade_decoder_next_logprobs(spade_decoder *d, int slot, float *out, char *err, size_t errlen);
/* Bytes the decoder holds (backend + host); constant from spade_decoder_new on. */
size_t spade_decoder_bytes(const spade_decoder *d);

/* ---- checkpoints ---- */

/* Atomic save: writes PATH.tmp.PID, fsyncs it, renames over PATH, fsyncs the
 * directory. Stores the config, the tokenizer, the step count, parameters and
 * AdamW moments. */
int spade_policy_save(spade_policy *p, const char *path, char *err, size_t errlen);
/* Reads a checkpoint into a new policy; backend overrides the file's
 * policy.backend when not NULL. A missing, foreign, truncated, corrupt or
 * newer-version file is an error whose message names the file and the fault. */
int spade_policy_load(spade_policy **out, const char *path, const char *backend, char *err, size_t errlen);
/* The same for a policy that will not be trained (sampling, scoring, export,
 * a frozen role): the AdamW moments are checked with the rest of the file but
 * not kept. Training it afterwards starts AdamW from zero moments. */
int spade_policy_load_weights(spade_policy **out, const char *path, const char *backend, char *err, size_t errlen);
/* Reads only the config header of a checkpoint (same checks on the header). */
int spade_policy_read_config(const char *path, spade_gpt_config *cfg, char *err, size_t errlen);
/* Reads the tokenizer stored in a checkpoint (the byte tokenizer for one
 * written before tokenizers were stored), checking the whole file's checksum
 * but keeping no weights. */
int spade_policy_read_tokenizer(const char *path, spade_tokenizer **out, char *err, size_t errlen);

/* ---- GRPO ---- */

/* One GRPO sample, in either of two forms.
 *
 * Single completion (tokens == NULL): prompt (prompt_len >= 1) then completion
 * (completion_len >= 1); every completion token is trained; old_logprobs has
 * completion_len entries, one per completion token.
 *
 * Masked sequence (tokens != NULL; prompt, completion NULL and their lengths
 * 0): one token sequence of len tokens, e.g. a whole episode
 * prompt, action, observation, action, ... ; mask (len) is 1 on the tokens the
 * role wrote (the agent's actions, the designer's source) and 0 on everything
 * else (prompts, observations, tool results, hints); mask[0] must be 0 (nothing
 * predicts the first token). old_logprobs (len) is aligned with tokens:
 * old_logprobs[t] = log p(tokens[t] | tokens[0..t)) at sampling time, read only
 * where mask[t] = 1 (anything, NaN included, elsewhere). Tokens after the last
 * trained one are never read past their vocabulary check, and only the prefix
 * up to the last trained token has to fit the context. A sample with no
 * trained token still counts in its group's reward statistics.
 * The single-completion form is exactly the masked sequence prompt ++
 * completion with mask 0 on the prompt and 1 on the completion.
 *
 * advantage is read only with adv_mode = SPADE_GRPO_ADV_GIVEN. */
typedef struct spade_grpo_sample {
    const int *prompt; /* (prompt_len) */
    int prompt_len;
    const int *completion; /* (completion_len) sampled tokens */
    int completion_len;
    const float *old_logprobs; /* (completion_len), or (len) in the masked form */
    float reward;
    int group; /* samples of one prompt share a group id */
    int role; /* role tag (e.g. 0 designer, 1 agent), 0..SPADE_GRPO_MAX_ROLES-1 */
    const int *tokens; /* (len) the masked form's sequence, or NULL */
    int len;
    const unsigned char *mask; /* (len) 1 = trained, 0 = context only */
    float advantage; /* the caller's advantage (adv_mode = GIVEN) */
    /* How the trained tokens were drawn (the spade_sample_opts they came
     * from), so that the ratio compares the distribution they were sampled
     * from with the same distribution under the current weights:
     * temperature > 0 (0: 1, for samples that do not say), top_p in (0, 1]
     * (0: 1). Greedy draws (temperature 0 at sampling) cannot be trained:
     * their distribution is a point mass whatever the weights. */
    float temperature, top_p;
} spade_grpo_sample;

#define SPADE_GRPO_MAX_ROLES 8

/* Where advantages come from. GROUP_MEAN: A = r - mean(r) over the sample's
 * group; GROUP_Z: the same divided by the group's std (what std_norm = 1 also
 * selects); GIVEN: the sample's own advantage field, no group is dropped (the
 * caller z-scores per environment, centres per family, ...). role_norm
 * applies after every mode; set it to 0 to use given advantages as they are. */
enum { SPADE_GRPO_ADV_GROUP_MEAN = 0, SPADE_GRPO_ADV_GROUP_Z = 1, SPADE_GRPO_ADV_GIVEN = 2 };
/* What a token's loss is divided by. BATCH: the number of trained tokens of
 * the (mini)batch; ROLE: the number of trained tokens of its role in the
 * (mini)batch, so each role present contributes one token mean and a role's
 * gradient does not depend on what the other roles brought. */
enum { SPADE_GRPO_NORM_BATCH = 0, SPADE_GRPO_NORM_ROLE = 1 };

typedef struct spade_grpo_opts {
    float eps_low, eps_high; /* ratio clip range [1-eps_low, 1+eps_high]: 0.2, 0.28 */
    float beta; /* k3 KL coefficient against the reference policy (0 = off) */
    int std_norm; /* divide group advantages by the group's std (0) */
    int role_norm; /* scale each role's advantages to unit RMS (1) */
    int micro_batch; /* sequences per forward/backward (8) */
    int adv_mode; /* SPADE_GRPO_ADV_* (GROUP_MEAN) */
    int token_norm; /* SPADE_GRPO_NORM_* (BATCH) */
    float tis_cap; /* > 0: truncated importance sampling instead of the clipped
                    * surrogate, weight min(r, tis_cap); 0 = off (0) */
    int epochs; /* spade_grpo_update: passes over the batch (1) */
    int minibatch; /* spade_grpo_update: sequences per optimiser step; 0 = all (0) */
} spade_grpo_opts;
void spade_grpo_opts_default(spade_grpo_opts *o);

typedef struct spade_grpo_stats {
    float loss; /* the surrogate loss (+ beta * KL) that was differentiated */
    float clip_frac; /* fraction of tokens whose clipped branch was active
                      * (with tis_cap: whose ratio was truncated) */
    float kl; /* mean k3 KL per token (0 without a reference) */
    float mean_ratio; /* mean exp(logp - old_logp) per token */
    int n_groups; /* distinct groups in the batch */
    int n_dropped_groups; /* groups dropped because all their rewards were equal */
    int n_samples; /* samples that contributed */
    long n_tokens; /* trained tokens that contributed (one pass) */
    /* The L2 norm of each role's own contribution to the gradient (before
     * any clipping): role r's tokens are back-propagated alone into a zeroed
     * buffer, measured, then added to the gradient. 0 for absent roles. */
    float role_grad_norm[SPADE_GRPO_MAX_ROLES];
    float grad_norm; /* spade_grpo_update: pre-clip global norm (0 from spade_grpo_batch) */
    int n_steps; /* spade_grpo_update: optimiser steps taken (0 from spade_grpo_batch) */
} spade_grpo_stats;

/* Group advantages only (what spade_grpo_batch uses): adv[i] for every
 * sample, 0 for samples of dropped groups; kept[i] (may be NULL) 1/0.
 * A group is dropped when max(r) - min(r) <= SPADE_GRPO_EQUAL_TOL * max(1, max|r|):
 * rewards that differ only by float rounding are equal. With adv_mode GIVEN
 * every sample is kept with its advantage (then role_norm). */
#define SPADE_GRPO_EQUAL_TOL 1e-6
int spade_grpo_advantages(const spade_grpo_sample *s, int n, const spade_grpo_opts *o, float *adv, int *kept,
                          int *n_groups, int *n_dropped, char *err, size_t errlen);

/* The GRPO loss of a batch: per trained token t of sample i with ratio
 * r = exp(logp - old_logp) and advantage A_i, where logp is the current
 * weights' log-prob under the sample's own sampling distribution (its
 * temperature and top_p; the nucleus of the current logits, holding the
 * token) and old_logp the same at sampling time (docs/policy.md, "What the
 * loss optimises"), and ref_logp the reference's under that distribution,
 *   l = -min(r A, clip(r, 1-eps_low, 1+eps_high) A) + beta * k3,
 *   k3 = exp(ref_logp - logp) - (ref_logp - logp) - 1,
 * divided by the trained-token count that token_norm names (default: all
 * trained tokens of kept samples). With tis_cap > 0 the first term is replaced
 * by the truncated importance-weighted policy gradient: dl/dlogp =
 * -min(r, tis_cap) A (the weight is not differentiated; no clip band).
 * Gradients ACCUMULATE into p (call spade_policy_step afterwards). ref may be
 * NULL when beta = 0. SPADE_POLICY_EINVAL, naming the sample, for a token
 * outside [0, V), a bad mask (not 0/1, mask[0] = 1, trained tokens past the
 * context), a non-finite old log-prob at a trained position, a role out of
 * range, a non-finite reward or given advantage, or opts outside eps_low in
 * [0, 1), eps_high >= 0, beta >= 0, tis_cap >= 0 (NaN included). */
int spade_grpo_batch(spade_policy *p, spade_policy *ref, const spade_grpo_sample *s, int n, const spade_grpo_opts *o,
                     spade_grpo_stats *stats, char *err, size_t errlen);

/* PPO-style update: advantages once for the whole batch, then `epochs` passes,
 * each over consecutive minibatches of `minibatch` kept samples (in input
 * order) with one spade_policy_step(p, adamw) per minibatch. The ratio is
 * always against the samples' sampling-time old_logprobs. Zeroes the gradient
 * first. stats: loss, clip_frac, kl, mean_ratio, role_grad_norm and grad_norm
 * are means over the steps; n_steps counts them. epochs = 1, minibatch = 0 is
 * exactly spade_grpo_batch then spade_policy_step. A step refused for a
 * non-finite gradient stops the update with its error. */
int spade_grpo_update(spade_policy *p, spade_policy *ref, const spade_grpo_sample *s, int n, const spade_grpo_opts *o,
                      const spade_adamw_opts *adamw, spade_grpo_stats *stats, char *err, size_t errlen);

#ifdef __cplusplus
}
#endif

#endif
