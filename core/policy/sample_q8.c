/* sample_q8.c — policy.sample_weights: the decoding batch's 8-bit (4-bit) weights.
 *
 * What it is: with sample_weights = q8_0, a Llama-family policy on the cpu
 * backend keeps an 8-bit copy (q8.h) of each layer's four weight matrices and
 * of the output head; with q4_1, 4-bit copies of the layers' matrices (Q4_1's
 * rounding: a Q4_1 file's own values come back) and the 8-bit head (SmolLM2's
 * file keeps its embedding, the tied head, at Q8_0 too). The decoding batch
 * (llama_pass_layers, decode.c's logits) multiplies by those instead of the F32 weights in passes of at
 * most Q8_MAX_ROWS rows (a few slots decoding: prefill and many slots stay
 * on F32, where the F32 GEMM is faster). The copy is made
 * on the first decoding pass after the weights change (a full-weight
 * spade_policy_step, spade_policy_set_params or set_trainable, a checkpoint's
 * weights mark it stale), so training, log-probs and GRPO see only the F32
 * weights, and sampling always sees the current ones. Under LoRA the copy
 * holds the frozen base alone (the adapters' low-rank path runs in F32 beside
 * it, llama_pass_layers), so adapter steps keep it: a GRPO update of Qwen
 * does not requantize its 0.5 B weights, and a copy over the same base
 * (spade_policy_clone_adapters) samples with the source's copies instead of
 * quantizing the base again.
 * What it is not: smaller in memory (the F32 weights stay for training: the
 * copy adds a quarter of their size, q4_1 about a fifth), or for the GPT family or other backends
 * (refused with a message, not silently run in F32).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "errbuf.h"
#include "policy/gpt_internal.h"
#include "policy/q8.h"

int spade_sample_weights_parse(const char *v, int *q8) {
    if (!strcmp(v, "f32") || !*v)
        *q8 = 0;
    else if (!strcmp(v, "q8_0"))
        *q8 = 1;
    else if (!strcmp(v, "q4_1"))
        *q8 = 2;
    else
        return -1;
    return 0;
}

int spade_policy_set_sample_weights(spade_policy *p, const char *kind, char *err, size_t errlen) {
    int q8;
    if (!kind || spade_sample_weights_parse(kind, &q8)) {
        spade_errf(err, errlen, "policy.sample_weights = '%s': expected f32, q8_0 or q4_1", kind ? kind : "(null)");
        return SPADE_POLICY_EINVAL;
    }
    if (p->base_owner) {
        spade_errf(err, errlen,
                   "policy.sample_weights: this policy samples with the quantized copies of the weights it reads "
                   "in place (spade_policy_clone_adapters); set sample_weights on the policy it was copied from");
        return SPADE_POLICY_EINVAL;
    }
    snprintf(p->cfg.sample_weights, sizeof p->cfg.sample_weights, "%s", q8 == 2 ? "q4_1" : q8 ? "q8_0" : "f32");
    policy_q8_free(p);
    return 0;
}

long spade_policy_sample_weights_builds(const spade_policy *p) { return p->q8_builds; }

void policy_q8_free(spade_policy *p) {
    if (p->q8)
        for (int i = 0; i < 4 * p->L + 1; i++) spade_q8_free(&p->q8[i]);
    free(p->q8);
    p->q8 = NULL;
    p->q8_valid = 0;
}

/* Builds the copies if sample_weights asks for them and they are stale. A
 * policy that reads another's frozen base in place (base_owner) brings its
 * owner's copies up to date instead, with the owner's sample_weights: they are
 * quantizations of the very weights it reads, and the adapters, its own, run
 * in F32 beside them (llama_pass_layers), so it never holds copies of its own.
 * Reading the owner's state at every pass (not a pointer taken once) keeps it
 * right when the owner rebuilds or frees its copies meanwhile. */
int policy_q8_sync(spade_policy *p, char *err, size_t errlen) {
    if (p->base_owner) {
        memcpy(p->cfg.sample_weights, p->base_owner->cfg.sample_weights, sizeof p->cfg.sample_weights);
        return policy_q8_sync(p->base_owner, err, errlen);
    }
    int q8 = 0;
    spade_sample_weights_parse(p->cfg.sample_weights, &q8);
    if (!q8 || p->q8_valid) return 0;
    if (p->arch != SPADE_ARCH_LLAMA || strcmp(p->be.vt->name, "cpu")) {
        spade_errf(err, errlen,
                   "policy.sample_weights = %s is for the Llama family on the cpu backend (this is a %s on %s)",
                   p->cfg.sample_weights, p->arch == SPADE_ARCH_LLAMA ? "Llama" : "GPT", p->be.vt->name);
        return SPADE_POLICY_EINVAL;
    }
    int L = p->L, C = p->C;
    size_t QKV = p->QKV, F = p->F, CC = (size_t)C * C;
    if (!p->q8 && !(p->q8 = calloc(4 * (size_t)L + 1, sizeof *p->q8))) goto oom;
    LlamaParameterTensors w = p->lparams;
    for (int l = 0; l < L; l++) {
        struct {
            const float *m;
            int rows, cols;
        } t[4] = {{w.qkvw + l * QKV * C, (int)QKV, C},
                  {w.attprojw + l * CC, C, C},
                  {w.fcw + l * 2 * F * C, (int)(2 * F), C},
                  {w.fcprojw + l * C * F, C, (int)F}};
        for (int i = 0; i < 4; i++) {
            spade_q8mat *m = &p->q8[4 * l + i];
            spade_q8_free(m);
            int rc = q8 == 2 ? spade_q8_quantize4(m, t[i].m, t[i].rows, t[i].cols)
                             : spade_q8_quantize(m, t[i].m, t[i].rows, t[i].cols);
            if (rc == -2) goto oom;
            if (rc) {
                spade_errf(err, errlen,
                           "policy.sample_weights = %s: a %d x %d matrix has rows of %d, not a multiple of %d",
                           p->cfg.sample_weights, t[i].rows, t[i].cols, t[i].cols, SPADE_Q8_BLOCK);
                policy_q8_free(p);
                return SPADE_POLICY_EINVAL;
            }
        }
    }
    spade_q8_free(&p->q8[4 * L]);
    if (spade_q8_quantize(&p->q8[4 * L], p->head, p->Vp, C)) goto oom;
    p->q8_valid = 1;
    p->q8_builds++;
    return 0;
oom:
    policy_q8_free(p);
    spade_errf(err, errlen, "policy.sample_weights = %s: out of memory for the quantized weights",
               p->cfg.sample_weights);
    return SPADE_POLICY_ENOMEM;
}

/* The 8-bit path runs products of at most this many rows. Decoding a few
 * slots reads the whole weight matrix for a few rows: memory-bound, and a
 * quarter of the bytes is the win (one slot of SmolLM2-135M: 1.95-1.99x
 * tokens/s). With more rows the product is compute-bound, and the F32
 * GEMM's register-blocked FMAs beat int8 dot products that need a scale
 * and a float add per block (32 slots through the 8-bit path: 0.55x of F32,
 * BENCHMARKS.md), so those rows stay on the F32 weights. */
#define Q8_MAX_ROWS 4

/* out(r, OC) = in W^T + bias through the 8-bit copy number `which` (4 l + 0..3,
 * 4 L for the head) when it is there and r is small, else the backend's F32 matmul. */
int policy_q8_matmul(spade_policy *p, int which, float *out, const float *in, const float *w, const float *bias, int r,
                     int IC, int OC, char *err, size_t errlen) {
    const spade_policy *h = p->base_owner ? p->base_owner : p; /* whose copies (policy_q8_sync) */
    if (h->q8_valid && r <= Q8_MAX_ROWS) {
        if (spade_q8_matmul(out, in, &h->q8[which], bias, r)) {
            spade_errf(err, errlen, "out of memory quantizing %d activation rows", r);
            return SPADE_POLICY_ENOMEM;
        }
        return 0;
    }
    CK(BE->matmul_forward(BX, out, in, w, bias, r, IC, OC));
    return 0;
}
