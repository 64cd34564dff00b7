/* lora.c — low-rank adapters (LoRA) on a Llama-family policy: the base
 * weights frozen, only A and B of each adapted matrix trained.
 *
 * What it is: for each targeted matrix W (out, in) of each layer, y = x W^T
 * becomes y = x W^T + s (x A^T) B^T with A (r, in), B (out, r), s =
 * lora_alpha / lora_rank. A starts uniform in +-1/sqrt(in) (seeded, as PEFT's
 * kaiming init), B at 0, so a fresh adapter computes exactly the base. The
 * targets are spade's fused matrices (gpt_internal.h): attn_qkv (the q|k|v
 * rows, one adapter of rank r on the (C+2KV, C) matrix), attn_output,
 * ffn_gate_up (the gate|up rows, (2F, C)) and ffn_down. The adapters are
 * the policy's trained vector (ntrain floats: grads_mem, m_mem, v_mem), so a
 * LoRA policy allocates no gradient and no moment for its base. The same
 * low-rank path runs in the training passes (llama.c) and in the decoding
 * batch's pass, so sampling always uses the current adapters with no merged
 * copy to refresh; export merges them into W (gpt_lora_merge).
 * What it is not: the loss or the optimizer (gpt.c), the checkpoint format
 * (checkpoint.c), or a LoRA for the GPT architecture (refused).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "errbuf.h"
#include "policy/gpt_internal.h"
#include "policy/models.h"
#include "sha256.h"

const char *const lora_target_names[LORA_NT] = {"attn_qkv", "attn_output", "ffn_gate_up", "ffn_down"};

int lora_parse_targets(const char *v, unsigned *mask) {
    unsigned m = 0;
    const char *s = v;
    while (*s) {
        while (*s == ' ' || *s == ',' || *s == '|' || *s == '\t') s++;
        if (!*s) break;
        size_t n = strcspn(s, " ,|\t");
        int hit = 0;
        if (n == 3 && !strncmp(s, "all", 3)) m |= LORA_ALL, hit = 1;
        for (int t = 0; t < LORA_NT && !hit; t++)
            if (strlen(lora_target_names[t]) == n && !strncmp(s, lora_target_names[t], n)) m |= 1u << t, hit = 1;
        if (!hit) return -1;
        s += n;
    }
    if (!m) return -1;
    *mask = m;
    return 0;
}

/* in and out widths of target t. */
static void dims(const spade_policy *p, int t, size_t *in, size_t *out) {
    size_t C = p->C, F = p->F;
    *in = t == 3 ? F : C;
    *out = t == 0 ? (size_t)p->QKV : t == 2 ? 2 * F : C;
}

static void point(spade_policy *p, LoraTensors *t, float *mem) {
    memset(t, 0, sizeof *t);
    for (int k = 0; k < 2 * LORA_NT; k++) {
        if (!p->lora_sizes[k]) continue;
        if (k % 2)
            t->b[k / 2] = mem;
        else
            t->a[k / 2] = mem;
        mem += p->lora_sizes[k];
    }
}

void lora_point_grads(spade_policy *p, float *mem) { point(p, &p->lgr, mem); }

int gpt_lora_enable(spade_policy *p, int rank, float alpha, unsigned targets, char *err, size_t errlen) {
    if (p->arch != SPADE_ARCH_LLAMA) {
        spade_errf(err, errlen, "policy.lora_rank applies to policy.arch = llama, not gpt");
        return SPADE_POLICY_EINVAL;
    }
    if (!BE->axpy) {
        spade_errf(err, errlen, "policy.lora_rank = %d: the %s backend has no LoRA path yet (use backend = cpu)", rank,
                   BE->name);
        return SPADE_POLICY_EINVAL;
    }
    if (rank < 1 || rank > 1024 || !(alpha > 0 && isfinite(alpha)) || !targets || targets > LORA_ALL) {
        spade_errf(err, errlen, "policy.lora_rank = %d, lora_alpha = %g: expected a rank in 1..1024 and alpha > 0",
                   rank, (double)alpha);
        return SPADE_POLICY_EINVAL;
    }
    if (p->lora_r || p->grads_mem || p->dec) {
        spade_errf(err, errlen, "policy.lora_rank: LoRA is enabled on a policy just opened (this one %s)",
                   p->lora_r ? "has adapters already" : "has a gradient or a decoder");
        return SPADE_POLICY_EINVAL;
    }
    if (p->origin_kind && !p->origin_sha256[0]) {
        /* the base file's hash goes into the checkpoints, which hold the adapters only */
        char path[4096], e[600];
        uint64_t sz;
        int bad = p->origin_kind == 1 ? spade_model_resolve(p->origin, path, sizeof path, e, sizeof e)
                                      : (snprintf(path, sizeof path, "%s", p->origin), 0);
        if (bad || spade_sha256_file(path, p->origin_sha256, &sz, e, sizeof e)) {
            p->origin_sha256[0] = 0;
            spade_errf(err, errlen, "policy.lora_rank: the base '%s': %s", p->origin, e);
            return SPADE_POLICY_EIO;
        }
    }
    size_t n = 0, L = p->L;
    for (int t = 0; t < LORA_NT; t++) {
        size_t in, out;
        dims(p, t, &in, &out);
        int on = (targets >> t) & 1;
        p->lora_sizes[2 * t] = on ? L * rank * in : 0;
        p->lora_sizes[2 * t + 1] = on ? L * out * rank : 0;
        n += p->lora_sizes[2 * t] + p->lora_sizes[2 * t + 1];
    }
    float *h = malloc(n * sizeof(float));
    float *mem = BE->alloc(BX, n * sizeof(float));
    if (!h || !mem) {
        free(h);
        BE->dealloc(BX, mem);
        spade_errf(err, errlen, "cannot allocate %zu LoRA parameters on %s", n, BE->name);
        return SPADE_POLICY_ENOMEM;
    }
    /* a checkpoint's moments and step were its weights' optimizer: the
     * adapters' AdamW starts afresh (bias correction from step 1) */
    BE->dealloc(BX, p->m_mem);
    BE->dealloc(BX, p->v_mem);
    p->m_mem = p->v_mem = NULL;
    p->step = 0;
    p->lora_r = rank;
    p->lora_alpha = alpha;
    p->lora_scale = alpha / (float)rank;
    p->lora_mask = targets;
    p->lora_mem = mem;
    p->ntrain = n;
    point(p, &p->lw, mem);
    /* the base's gradient tensors stay NULL: llama_backward skips them */
    memset(&p->grads, 0, sizeof p->grads);
    memset(&p->lgrads, 0, sizeof p->lgrads);
    /* A ~ U(-1/sqrt(in), 1/sqrt(in)) from its own seeded stream, B = 0 */
    uint64_t s = p->cfg.seed ^ 0x4C4F5241ull; /* "LORA" */
    size_t o = 0;
    for (int k = 0; k < 2 * LORA_NT; k++) {
        size_t in, out;
        dims(p, k / 2, &in, &out);
        double bound = 1.0 / sqrt((double)in);
        for (size_t j = 0; j < p->lora_sizes[k]; j++)
            h[o + j] = k % 2 ? 0.0f : (float)((2.0 * gpt_rng_uniform(&s) - 1.0) * bound);
        o += p->lora_sizes[k];
    }
    int rc = 0;
    if (BE->upload(BX, mem, h, n * sizeof(float))) rc = gpt_backend_fail(p, "upload adapters", err, errlen);
    free(h);
    p->cfg.lora_rank = rank;
    p->cfg.lora_alpha = alpha;
    p->cfg.lora_targets = targets;
    return rc;
}

void gpt_lora_free(spade_policy *p) {
    if (!p->be.vt) return;
    BE->dealloc(BX, p->lora_mem);
    BE->dealloc(BX, p->lora_acts);
    p->lora_mem = p->lora_acts = NULL;
    p->lora_acts_cap = 0;
}

/* (rows, r) per target and layer for the forward's x A^T, then the
 * scratch: z (rows, out max), and for backward du (rows, r), dxl (rows, in max). */
static size_t widest(const spade_policy *p, int want_out) {
    size_t w = 0;
    for (int t = 0; t < LORA_NT; t++) {
        size_t in, out;
        dims(p, t, &in, &out);
        size_t x = want_out ? out : in;
        if (x > w) w = x;
    }
    return w;
}

int lora_ensure_acts(spade_policy *p, char *err, size_t errlen) {
    size_t cap = (size_t)p->actB * p->actT;
    if (cap <= p->lora_acts_cap) return 0;
    size_t r = p->lora_r, per = LORA_NT * (size_t)p->L * r + widest(p, 1) + r + widest(p, 0);
    BE->dealloc(BX, p->lora_acts);
    p->lora_acts_cap = 0;
    p->lora_acts = BE->alloc(BX, cap * per * sizeof(float));
    if (!p->lora_acts) {
        spade_errf(err, errlen, "cannot allocate LoRA activations for %zu rows on %s", cap, BE->name);
        return SPADE_POLICY_ENOMEM;
    }
    p->lora_acts_cap = cap;
    return 0;
}

/* The forward's x A^T of target t at layer l (cap rows each). */
static float *saved_u(spade_policy *p, int t, int l) {
    return p->lora_acts + ((size_t)t * p->L + l) * p->lora_acts_cap * p->lora_r;
}
static float *scratch(spade_policy *p, int k) { /* 0: z, 1: du, 2: dxl */
    float *s = p->lora_acts + (size_t)LORA_NT * p->L * p->lora_acts_cap * p->lora_r;
    if (k >= 1) s += p->lora_acts_cap * widest(p, 1);
    if (k >= 2) s += p->lora_acts_cap * p->lora_r;
    return s;
}

int lora_apply(spade_policy *p, int t, int l, float *y, const float *x, int n, float *u, float *z, char *err,
               size_t errlen) {
    if (!(p->lora_mask >> t & 1)) return 0;
    size_t in, out, r = p->lora_r;
    dims(p, t, &in, &out);
    CK(BE->matmul_forward(BX, u, x, p->lw.a[t] + (size_t)l * r * in, NULL, n, (int)in, (int)r));
    CK(BE->matmul_forward(BX, z, u, p->lw.b[t] + (size_t)l * out * r, NULL, n, (int)r, (int)out));
    CK(BE->axpy(BX, y, z, p->lora_scale, (size_t)n * out));
    return 0;
}

int lora_forward(spade_policy *p, int t, int l, float *y, const float *x, int n, char *err, size_t errlen) {
    return lora_apply(p, t, l, y, x, n, saved_u(p, t, l), scratch(p, 0), err, errlen);
}

int lora_backward(spade_policy *p, int t, int l, float *dx, const float *dy, const float *x, int n, char *err,
                  size_t errlen) {
    if (!(p->lora_mask >> t & 1)) return 0;
    size_t in, out, r = p->lora_r, N = (size_t)n;
    dims(p, t, &in, &out);
    float *dz = scratch(p, 0), *du = scratch(p, 1), *dxl = scratch(p, 2);
    /* y += s z, z = u B^T, u = x A^T:  dz = s dy; du = dz B, dB += dz^T u; dxl = du A, dA += du^T x */
    CK(BE->zero(BX, dz, N * out * sizeof(float)));
    CK(BE->axpy(BX, dz, dy, p->lora_scale, N * out));
    CK(BE->matmul_backward(BX, du, p->lgr.b[t] + (size_t)l * out * r, NULL, dz, saved_u(p, t, l),
                           p->lw.b[t] + (size_t)l * out * r, n, (int)r, (int)out));
    CK(BE->matmul_backward(BX, dxl, p->lgr.a[t] + (size_t)l * r * in, NULL, du, x, p->lw.a[t] + (size_t)l * r * in, n,
                           (int)in, (int)r));
    CK(BE->axpy(BX, dx, dxl, 1.0f, N * in));
    return 0;
}

int lora_step(spade_policy *p, const spade_adamw_opts *o, float scale, char *err, size_t errlen) {
    size_t off = 0;
    for (int k = 0; k < 2 * LORA_NT; k++) {
        size_t n = p->lora_sizes[k];
        if (!n) continue;
        CK(BE->adamw(BX, p->lora_mem + off, p->grads_mem + off, p->m_mem + off, p->v_mem + off, n, o->lr, o->beta1,
                     o->beta2, o->eps, o->weight_decay, scale, (int)p->step));
        off += n;
    }
    return 0;
}

int gpt_lora_merge(spade_policy *p, float *h, char *err, size_t errlen) {
    if (!p->lora_r) return 0;
    size_t r = p->lora_r, L = p->L;
    float *ad = malloc(p->ntrain * sizeof(float));
    if (!ad) {
        spade_errf(err, errlen, "LoRA merge: out of host memory");
        return SPADE_POLICY_ENOMEM;
    }
    if (BE->download(BX, ad, p->lora_mem, p->ntrain * sizeof(float))) {
        free(ad);
        return gpt_backend_fail(p, "download adapters", err, errlen);
    }
    /* the base matrices, in the order of llama_param_names: qkvw, attprojw, fcw, fcprojw */
    static const int tensor_of[LORA_NT] = {2, 4, 6, 7};
    size_t ao = 0;
    for (int t = 0; t < LORA_NT; t++) {
        size_t in, out, toff = 0;
        dims(p, t, &in, &out);
        for (int j = 0; j < tensor_of[t]; j++) toff += p->param_sizes[j];
        if (!p->lora_sizes[2 * t]) continue;
        const float *A = ad + ao, *B = A + p->lora_sizes[2 * t];
        ao += p->lora_sizes[2 * t] + p->lora_sizes[2 * t + 1];
        for (size_t l = 0; l < L; l++) {
            float *W = h + toff + l * out * in;
            const float *Al = A + l * r * in, *Bl = B + l * out * r;
            for (size_t o = 0; o < out; o++)
                for (size_t i = 0; i < in; i++) {
                    double d = 0;
                    for (size_t k = 0; k < r; k++) d += (double)Bl[o * r + k] * Al[k * in + i];
                    W[o * in + i] += (float)(p->lora_scale * d);
                }
        }
    }
    free(ad);
    return 0;
}

int spade_policy_lora(spade_policy *p, int rank, float alpha, unsigned targets, char *err, size_t errlen) {
    return gpt_lora_enable(p, rank, alpha > 0 ? alpha : (float)rank, targets ? targets : LORA_ALL, err, errlen);
}

int spade_policy_lora_rank(const spade_policy *p) { return p->lora_r; }

int spade_policy_get_trainable(spade_policy *p, float *host, char *err, size_t errlen) {
    CK(BE->download(BX, host, p->lora_r ? p->lora_mem : p->params_mem, p->ntrain * sizeof(float)));
    return 0;
}

int spade_policy_set_trainable(spade_policy *p, const float *host, char *err, size_t errlen) {
    if (!p->lora_r) p->q8_valid = 0; /* the weights themselves: the 8-bit sampling copies are stale */
    CK(BE->upload(BX, p->lora_r ? p->lora_mem : p->params_mem, host, p->ntrain * sizeof(float)));
    return 0;
}
