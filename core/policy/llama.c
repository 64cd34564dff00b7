/* llama.c — the Llama family as the policy's second architecture
 * (policy.arch = llama): Llama, SmolLM2 and, with Q/K/V biases, Qwen2.
 *
 * What it is: the layout of its parameters (gpt_internal.h,
 * LlamaParameterTensors, each field named after the GGUF tensor it comes
 * from) and the order of its ops: pre-RMSNorm blocks, fused q|k|v with
 * optional biases, rotary positions on q and k (llama.cpp's two pairings:
 * policy.rope_pairing), grouped-query attention as the GPT's multi-head
 * attention over key/value heads repeated to NH (kv_expand; its backward
 * kv_reduce sums them back; the decoding batch's cache keeps only the KVH
 * heads, attention_forward_kv_at_gqa), a SwiGLU MLP, a final RMSNorm and a
 * tied or separate head; no learned positions. Training forward/backward and
 * the decoding batch's layers, all through the backend vtable (backend.h).
 * What it is not: the shared machinery (gpt.c: config, memory, the loss,
 * AdamW; decode.c: slots and the draw; checkpoint.c), which drive both
 * architectures without knowing which; nor a GGUF reader. Training keeps
 * the repeated heads in its activations (NH, not KVH, per position).
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "errbuf.h"
#include "policy/gpt_internal.h"

const char *const llama_param_names[NUM_LLAMA_PARAM_TENSORS] = {
    "wte", "ln1w", "qkvw", "qkvb", "attprojw", "ln2w", "fcw", "fcprojw", "lnfw", "head",
};
/* Matrices decay; gains and biases do not (as the GPT's). */
const int llama_param_decay[NUM_LLAMA_PARAM_TENSORS] = {1, 0, 1, 0, 1, 0, 1, 1, 0, 1};

void llama_param_sizes(const spade_gpt_config *c, size_t *s) {
    size_t L = c->layers, C = c->width, NH = c->heads, hs = C / NH;
    size_t KVH = c->kv_heads ? (size_t)c->kv_heads : NH, QKV = C + 2 * KVH * hs;
    size_t F = c->ffn ? (size_t)c->ffn : 4 * C;
    size_t V = c->vocab ? c->vocab : SPADE_VOCAB, Vp = SPADE_VOCAB_PAD(V);
    s[0] = Vp * C;
    s[1] = L * C;
    s[2] = L * QKV * C;
    s[3] = c->qkv_bias ? L * QKV : 0;
    s[4] = L * C * C;
    s[5] = L * C;
    s[6] = L * 2 * F * C;
    s[7] = L * C * F;
    s[8] = C;
    s[9] = c->untied ? Vp * C : 0;
}

void llama_point_params(LlamaParameterTensors *t, float *mem, const size_t *sizes) {
    float **ptrs[NUM_LLAMA_PARAM_TENSORS] = {
        &t->wte, &t->ln1w, &t->qkvw, &t->qkvb, &t->attprojw, &t->ln2w, &t->fcw, &t->fcprojw, &t->lnfw, &t->head,
    };
    for (int i = 0; i < NUM_LLAMA_PARAM_TENSORS; i++) {
        *ptrs[i] = sizes[i] ? mem : NULL;
        mem += sizes[i];
    }
}

/* splitmix64 + Box-Muller, as gpt.c's initialisation: the same stream on every platform. */
static double llama_normal(uint64_t *s, int *have, double *spare) {
    if (*have) {
        *have = 0;
        return *spare;
    }
    double u1 = gpt_rng_uniform(s), u2 = gpt_rng_uniform(s);
    if (u1 < 1e-300) u1 = 1e-300;
    double rad = sqrt(-2.0 * log(u1)), th = 6.283185307179586 * u2;
    *spare = rad * sin(th);
    *have = 1;
    return rad * cos(th);
}

void llama_init_weights(spade_policy *p, float *h, uint64_t seed) {
    /* N(0, 0.02) matrices, the two projections into the residual stream
     * scaled by 1/sqrt(2L), gains 1, biases 0, padded vocabulary rows 0: a
     * random model for tests and for training from scratch; pretrained
     * weights replace all of it. */
    uint64_t s = seed;
    int have = 0;
    double spare = 0;
    memset(h, 0, p->num_params * sizeof(float));
    float resid_std = 0.02f / sqrtf(2.0f * p->L);
    size_t o = 0;
    for (int i = 0; i < NUM_LLAMA_PARAM_TENSORS; i++) {
        float *t = h + o;
        size_t n = p->param_sizes[i];
        o += n;
        switch (i) {
        case 0:
        case 9: /* wte, head: real vocabulary rows only */
            if (n)
                for (size_t j = 0; j < (size_t)p->V * p->C; j++) t[j] = (float)(0.02 * llama_normal(&s, &have, &spare));
            break;
        case 2:
        case 6: /* qkvw, fcw */
            for (size_t j = 0; j < n; j++) t[j] = (float)(0.02 * llama_normal(&s, &have, &spare));
            break;
        case 4:
        case 7: /* attprojw, fcprojw */
            for (size_t j = 0; j < n; j++) t[j] = (float)(resid_std * llama_normal(&s, &have, &spare));
            break;
        case 1:
        case 5:
        case 8: /* RMSNorm gains */
            for (size_t j = 0; j < n; j++) t[j] = 1.0f;
            break;
        default: /* qkvb */ break;
        }
    }
}

/* ---------------------------------------------------------------- training */

int llama_forward(spade_policy *p, int B, int T, char *err, size_t errlen) {
    int L = p->L, C = p->C, NH = p->NH, KVH = p->KVH, hs = C / NH;
    size_t BT = (size_t)B * T, LBT = (size_t)p->actB * p->actT; /* layer stride: the capacity */
    size_t QKV = p->QKV, F = p->F, C3 = 3 * (size_t)C, CC = (size_t)C * C;
    LlamaParameterTensors w = p->lparams;
    ActivationTensors a = p->acts;
    /* With KVH = NH the compact rows are the expanded ones: rope in place, no copy. */
    int gqa = KVH<NH, rc, lo = p->lora_r> 0;
    if (lo && (rc = lora_ensure_acts(p, err, errlen))) return rc;
    CK(BE->encoder_forward(BX, a.encoded, p->tokens_dev, w.wte, NULL, B, T, C, 0));
    for (int l = 0; l < L; l++) {
        float *residual = l == 0 ? a.encoded : a.residual3 + (l - 1) * LBT * C;
        float *ln1 = a.ln1 + l * LBT * C, *ln1r = a.ln1_rstd + l * LBT;
        float *qkv = a.qkv + l * LBT * C3, *atty = a.atty + l * LBT * C;
        float *att = BE->attention_probs ? a.att + (size_t)l * p->actB * NH * p->actT * p->actT : NULL;
        float *lse = a.lse + (size_t)l * p->actB * NH * p->actT;
        float *attproj = a.attproj + l * LBT * C, *res2 = a.residual2 + l * LBT * C;
        float *ln2 = a.ln2 + l * LBT * C, *ln2r = a.ln2_rstd + l * LBT;
        float *fch = a.fch + l * LBT * 2 * F, *fchg = a.fch_gelu + l * LBT * F;
        float *fcproj = a.fcproj + l * LBT * C, *res3 = a.residual3 + l * LBT * C;
        float *qc = gqa ? p->gacts.dqkvc : qkv; /* (BT, QKV) */
        CK(BE->rmsnorm_forward(BX, ln1, ln1r, residual, w.ln1w + l * C, BT, C, p->eps));
        CK(BE->matmul_forward(BX, qc, ln1, w.qkvw + l * QKV * C, w.qkvb ? w.qkvb + l * QKV : NULL, BT, C, QKV));
        if (lo && (rc = lora_forward(p, 0, l, qc, ln1, (int)BT, err, errlen))) return rc;
        CK(BE->rope(BX, qc, NULL, BT, T, QKV, NH + KVH, hs, p->rot, p->rope_base, p->neox, 0));
        if (gqa) CK(BE->kv_expand(BX, qkv, qc, BT, NH, KVH, hs));
        CK(BE->attention_forward(BX, atty, lse, att, qkv, B, T, C, NH));
        CK(BE->matmul_forward(BX, attproj, atty, w.attprojw + l * CC, NULL, BT, C, C));
        if (lo && (rc = lora_forward(p, 1, l, attproj, atty, (int)BT, err, errlen))) return rc;
        CK(BE->residual_forward(BX, res2, residual, attproj, BT * C));
        CK(BE->rmsnorm_forward(BX, ln2, ln2r, res2, w.ln2w + l * C, BT, C, p->eps));
        CK(BE->matmul_forward(BX, fch, ln2, w.fcw + l * 2 * F * C, NULL, BT, C, 2 * F));
        if (lo && (rc = lora_forward(p, 2, l, fch, ln2, (int)BT, err, errlen))) return rc;
        CK(BE->swiglu_forward(BX, fchg, fch, BT, F));
        CK(BE->matmul_forward(BX, fcproj, fchg, w.fcprojw + l * C * F, NULL, BT, F, C));
        if (lo && (rc = lora_forward(p, 3, l, fcproj, fchg, (int)BT, err, errlen))) return rc;
        CK(BE->residual_forward(BX, res3, res2, fcproj, BT * C));
    }
    float *last = a.residual3 + (L - 1) * LBT * C;
    CK(BE->rmsnorm_forward(BX, a.lnf, a.lnf_rstd, last, w.lnfw, BT, C, p->eps));
    return 0; /* the head: gpt.c's head_forward, on the rows that have a target */
}

/* t + o, or NULL for a tensor that has no gradient (a LoRA policy's frozen base). */
static float *off(float *t, size_t o) { return t ? t + o : NULL; }

int llama_backward(spade_policy *p, int B, int T, char *err, size_t errlen) {
    int L = p->L, C = p->C, NH = p->NH, KVH = p->KVH, hs = C / NH;
    size_t BT = (size_t)B * T, LBT = (size_t)p->actB * p->actT;
    size_t QKV = p->QKV, F = p->F, C3 = 3 * (size_t)C, CC = (size_t)C * C;
    LlamaParameterTensors w = p->lparams, g = p->lgrads;
    ActivationTensors a = p->acts;
    GradActTensors d = p->gacts;
    int gqa = KVH<NH, rc, lo = p->lora_r> 0;
    /* With LoRA every base gradient tensor in g is NULL: the ops compute only
     * what flows to the inputs, and the adapters collect theirs (lora_backward). */
    /* d.dln holds the head's input gradient (gpt.c's head_backward; tied, wte has its weight gradient) */
    CK(BE->zero(BX, d.dresidual, BT * C * sizeof(float)));
    float *last = a.residual3 + (L - 1) * LBT * C;
    CK(BE->rmsnorm_backward(BX, d.dresidual, g.lnfw, d.dln, last, w.lnfw, a.lnf_rstd, BT, C));
    for (int l = L - 1; l >= 0; l--) {
        float *residual = l == 0 ? a.encoded : a.residual3 + (l - 1) * LBT * C;
        float *ln1 = a.ln1 + l * LBT * C, *ln1r = a.ln1_rstd + l * LBT;
        float *qkv = a.qkv + l * LBT * C3, *atty = a.atty + l * LBT * C;
        float *att = BE->attention_probs ? a.att + (size_t)l * p->actB * NH * p->actT * p->actT : NULL;
        float *lse = a.lse + (size_t)l * p->actB * NH * p->actT;
        float *res2 = a.residual2 + l * LBT * C;
        float *ln2 = a.ln2 + l * LBT * C, *ln2r = a.ln2_rstd + l * LBT;
        float *fch = a.fch + l * LBT * 2 * F, *fchg = a.fch_gelu + l * LBT * F;
        /* MLP: residual3 = residual2 + down(swiglu(gate|up(rmsnorm(residual2)))) */
        CK(BE->matmul_backward(BX, d.dfch_gelu, off(g.fcprojw, l * C * F), NULL, d.dresidual, fchg,
                               w.fcprojw + l * C * F, BT, F, C));
        if (lo && (rc = lora_backward(p, 3, l, d.dfch_gelu, d.dresidual, fchg, (int)BT, err, errlen))) return rc;
        CK(BE->swiglu_backward(BX, d.dfch, fch, d.dfch_gelu, BT, F));
        CK(BE->matmul_backward(BX, d.dln, off(g.fcw, l * 2 * F * C), NULL, d.dfch, ln2, w.fcw + l * 2 * F * C, BT, C,
                               2 * F));
        if (lo && (rc = lora_backward(p, 2, l, d.dln, d.dfch, ln2, (int)BT, err, errlen))) return rc;
        CK(BE->rmsnorm_backward(BX, d.dresidual, off(g.ln2w, l * C), d.dln, res2, w.ln2w + l * C, ln2r, BT, C));
        /* attention: residual2 = residual + o(attention(expand(rope(qkv(rmsnorm(residual)))))) */
        CK(BE->matmul_backward(BX, d.datty, off(g.attprojw, l * CC), NULL, d.dresidual, atty, w.attprojw + l * CC, BT,
                               C, C));
        if (lo && (rc = lora_backward(p, 1, l, d.datty, d.dresidual, atty, (int)BT, err, errlen))) return rc;
        CK(BE->attention_backward(BX, d.dqkv, d.datty, qkv, atty, lse, att, B, T, C, NH));
        float *dq = d.dqkv;
        if (gqa) {
            CK(BE->kv_reduce(BX, d.dqkvc, d.dqkv, BT, NH, KVH, hs));
            dq = d.dqkvc;
        }
        /* the rotation is orthogonal: its backward is the inverse rotation */
        CK(BE->rope(BX, dq, NULL, BT, T, QKV, NH + KVH, hs, p->rot, p->rope_base, p->neox, 1));
        CK(BE->matmul_backward(BX, d.dln, off(g.qkvw, l * QKV * C), g.qkvb ? g.qkvb + l * QKV : NULL, dq, ln1,
                               w.qkvw + l * QKV * C, BT, C, QKV));
        /* the adapter sits before the rotation, as its forward: dq is the unrotated gradient */
        if (lo && (rc = lora_backward(p, 0, l, d.dln, dq, ln1, (int)BT, err, errlen))) return rc;
        CK(BE->rmsnorm_backward(BX, d.dresidual, off(g.ln1w, l * C), d.dln, residual, w.ln1w + l * C, ln1r, BT, C));
    }
    if (g.wte) CK(BE->encoder_backward(BX, g.wte, NULL, d.dresidual, p->tokens_dev, B, T, C));
    return 0;
}

/* ---------------------------------------------------------------- decoding */

/* A decoding product: the 8-bit copy when sample_weights = q8_0, else F32. */
#define MM(which, out, in, wt, bias, IC, OC)                                                                           \
    do {                                                                                                               \
        if ((rc = policy_q8_matmul(p, which, out, in, wt, bias, r, IC, OC, err, errlen))) return rc;                   \
    } while (0)

int llama_pass_layers(spade_policy *p, const SampleTensors *s, int r, const int *tok, const int *slot, const int *pos,
                      int S, int maxlen, char *err, size_t errlen) {
    int L = p->L, C = p->C, NH = p->NH, KVH = p->KVH, hs = C / NH, maxT = p->maxT;
    size_t R = (size_t)r, QKV = p->QKV, F = p->F, CC = (size_t)C * C;
    size_t cstride = (size_t)S * maxT * p->kvw; /* one layer's cache: KVH heads a position */
    LlamaParameterTensors w = p->lparams;
    float *qc = s->qkvc;
    /* LoRA: the low-rank path in the pass itself (no merged copy of the weights
     * to refresh after each step), with the decoder's scratch; sample_weights =
     * q8_0 quantizes the frozen base only */
    int lo = p->lora_r > 0;
    if (lo && !s->lora_u) {
        spade_errf(err, errlen, "decoder: made before LoRA was enabled on its policy");
        return SPADE_POLICY_EINVAL;
    }
    int rc = policy_q8_sync(p, err, errlen); /* sample_weights = q8_0: the 8-bit copies (sample_q8.c) */
    if (rc) return rc;
    CK(BE->encoder_forward_at(BX, s->res, tok, pos, w.wte, NULL, r, C));
    float *x = s->res, *y = s->res2;
    for (int l = 0; l < L; l++) {
        CK(BE->rmsnorm_forward(BX, s->ln, NULL, x, w.ln1w + l * C, r, C, p->eps));
        MM(4 * l, qc, s->ln, w.qkvw + l * QKV * C, w.qkvb ? w.qkvb + l * QKV : NULL, C, QKV);
        if (lo && (rc = lora_apply(p, 0, l, qc, s->ln, r, s->lora_u, s->lora_z, err, errlen))) return rc;
        CK(BE->rope(BX, qc, pos, r, 1, QKV, NH + KVH, hs, p->rot, p->rope_base, p->neox, 0));
        CK(BE->attention_forward_kv_at_gqa(BX, s->atty, qc, s->kcache + l * cstride, s->vcache + l * cstride, slot, pos,
                                           r, C, NH, KVH, S, maxT, maxlen));
        MM(4 * l + 1, s->proj, s->atty, w.attprojw + l * CC, NULL, C, C);
        if (lo && (rc = lora_apply(p, 1, l, s->proj, s->atty, r, s->lora_u, s->lora_z, err, errlen))) return rc;
        CK(BE->residual_forward(BX, y, x, s->proj, R * C));
        CK(BE->rmsnorm_forward(BX, s->ln, NULL, y, w.ln2w + l * C, r, C, p->eps));
        MM(4 * l + 2, s->fch, s->ln, w.fcw + l * 2 * F * C, NULL, C, 2 * F);
        if (lo && (rc = lora_apply(p, 2, l, s->fch, s->ln, r, s->lora_u, s->lora_z, err, errlen))) return rc;
        CK(BE->swiglu_forward(BX, s->fchg, s->fch, r, F));
        MM(4 * l + 3, s->proj, s->fchg, w.fcprojw + l * C * F, NULL, F, C);
        if (lo && (rc = lora_apply(p, 3, l, s->proj, s->fchg, r, s->lora_u, s->lora_z, err, errlen))) return rc;
        CK(BE->residual_forward(BX, x, y, s->proj, R * C));
    }
    return 0;
}
