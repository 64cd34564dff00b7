/* sample.c — sampling from the policy: G completions of one prompt, batched,
 * with a KV cache (or, for tests and benchmarks, full recompute).
 *
 * What it is: prefill the prompt once (batch 1), copy its keys/values to the
 * G sequences, then decode one token per sequence per step; the draw
 * (temperature, top-p, seeded per completion) happens on the host from the
 * downloaded last-position logits (G x Vp floats per step).
 * What it is not: a server. One prompt per call; prompts of different lengths
 * are separate calls.
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "policy/gpt_internal.h"

void spade_sample_opts_default(spade_sample_opts *o) {
    static const int end_tok[1] = {SPADE_TOK_END};
    memset(o, 0, sizeof *o);
    o->temperature = 1.0f;
    o->top_p = 1.0f;
    o->max_tokens = 256;
    o->stop = end_tok;
    o->n_stop = 1;
    o->seed = 0;
}

/* Grows the sampling workspace to G sequences and R rows per call. */
static int ensure_samp(spade_policy *p, int G, int R, char *err, size_t errlen) {
    if (G <= p->sampG && R <= p->sampR) return 0;
    int nG = G > p->sampG ? G : p->sampG, nR = R > p->sampR ? R : p->sampR;
    /* Checked before any product below can wrap: 16C floats per row, and per
     * sequence Vp logits plus 2 L maxT C of cache (< 2^40 within config limits). */
    size_t per_row = 16 * (size_t)p->C, per_seq = (size_t)p->Vp + 2 * (size_t)p->L * p->maxT * p->C;
    if ((size_t)nR > SIZE_MAX / sizeof(float) / 2 / per_row ||
        (size_t)nG > (SIZE_MAX / sizeof(float) / 2) / per_seq) {
        snprintf(err, errlen, "sampling workspace for %d sequences, %d rows: more than this machine can address",
                 nG, nR);
        return SPADE_POLICY_ENOMEM;
    }
    BE->dealloc(BX, p->samp_mem);
    BE->dealloc(BX, p->samp_tok);
    p->samp_mem = NULL;
    p->samp_tok = NULL;
    p->sampG = p->sampR = 0;
    size_t C = p->C, L = p->L;
    size_t s[NUM_SAMPLE_TENSORS] = {
        nR * C, nR * C, nR * C, nR * 3 * C, nR * C, nR * C, nR * 4 * C, nR * 4 * C,
        (size_t)nG * p->Vp, L * nG * p->maxT * C, L * nG * p->maxT * C,
    };
    size_t n = 0;
    for (int i = 0; i < NUM_SAMPLE_TENSORS; i++) n += s[i];
    p->samp_mem = BE->alloc(BX, n * sizeof(float));
    p->samp_tok = BE->alloc(BX, (size_t)nR * sizeof(int));
    if (!p->samp_mem || !p->samp_tok) {
        snprintf(err, errlen, "cannot allocate the sampling workspace (%d sequences, %.1f MiB) on %s",
                 nG, (double)n * 4 / 1048576.0, BE->name);
        return SPADE_POLICY_ENOMEM;
    }
    float **ptr[NUM_SAMPLE_TENSORS] = {
        &p->samp.res, &p->samp.res2, &p->samp.ln, &p->samp.qkv, &p->samp.atty, &p->samp.proj,
        &p->samp.fch, &p->samp.fchg, &p->samp.logits, &p->samp.kcache, &p->samp.vcache,
    };
    float *m = p->samp_mem;
    for (int i = 0; i < NUM_SAMPLE_TENSORS; i++) {
        *ptr[i] = m;
        m += s[i];
    }
    p->sampG = nG;
    p->sampR = nR;
    return 0;
}

/* Runs B sequences x T new tokens at positions pos0.. through the model,
 * using/extending the KV cache rows 0..B-1, and leaves the logits of each
 * sequence's last new token in samp.logits (B, Vp). */
static int kv_forward(spade_policy *p, const int *toks, int B, int T, int pos0, char *err,
                      size_t errlen) {
    int L = p->L, C = p->C, NH = p->NH, maxT = p->maxT;
    size_t R = (size_t)B * T, C3 = 3 * (size_t)C, C4 = 4 * (size_t)C, CC = (size_t)C * C;
    size_t cstride = (size_t)p->sampG * maxT * C; /* one layer's cache */
    ParameterTensors w = p->params;
    SampleTensors s = p->samp;
    CK(BE->upload(BX, p->samp_tok, toks, R * sizeof(int)));
    CK(BE->encoder_forward(BX, s.res, p->samp_tok, w.wte, w.wpe, B, T, C, pos0));
    float *x = s.res, *y = s.res2;
    for (int l = 0; l < L; l++) {
        CK(BE->layernorm_forward(BX, s.ln, NULL, NULL, x, w.ln1w + l * C, w.ln1b + l * C, R, C));
        CK(BE->matmul_forward(BX, s.qkv, s.ln, w.qkvw + l * C3 * C, w.qkvb + l * C3, R, C, 3 * C));
        CK(BE->attention_forward_kv(BX, s.atty, s.qkv, s.kcache + l * cstride,
                                    s.vcache + l * cstride, B, T, C, NH, pos0, maxT));
        CK(BE->matmul_forward(BX, s.proj, s.atty, w.attprojw + l * CC, w.attprojb + l * C, R, C, C));
        CK(BE->residual_forward(BX, y, x, s.proj, R * C));
        CK(BE->layernorm_forward(BX, s.ln, NULL, NULL, y, w.ln2w + l * C, w.ln2b + l * C, R, C));
        CK(BE->matmul_forward(BX, s.fch, s.ln, w.fcw + l * C4 * C, w.fcb + l * C4, R, C, 4 * C));
        CK(BE->gelu_forward(BX, s.fchg, s.fch, R * C4));
        CK(BE->matmul_forward(BX, s.proj, s.fchg, w.fcprojw + l * C * C4, w.fcprojb + l * C, R, 4 * C, C));
        CK(BE->residual_forward(BX, x, y, s.proj, R * C));
    }
    /* Only the last position of each sequence needs logits. */
    if (T == 1) {
        CK(BE->layernorm_forward(BX, s.ln, NULL, NULL, x, w.lnfw, w.lnfb, B, C));
    } else {
        for (int b = 0; b < B; b++)
            CK(BE->layernorm_forward(BX, s.ln + (size_t)b * C, NULL, NULL,
                                     x + ((size_t)b * T + T - 1) * C, w.lnfw, w.lnfb, 1, C));
    }
    CK(BE->matmul_forward(BX, s.logits, s.ln, w.wte, NULL, B, C, p->Vp));
    return 0;
}

typedef struct {
    double w;
    int tok;
} cand;

static int cand_cmp(const void *a, const void *b) {
    const cand *x = a, *y = b;
    if (x->w > y->w) return -1;
    if (x->w < y->w) return 1;
    return x->tok - y->tok; /* ties by token id: the order is total, so draws are reproducible */
}

/* Draws one token from logits (V entries). *lp gets its log-prob at
 * temperature 1 without truncation. Returns -1 when the logits are not
 * finite (NaN or +inf somewhere: every comparison of the draw would be
 * meaningless and the fallback would hand back an arbitrary token). */
static int draw(const float *logits, int V, float temp, float top_p, uint64_t *rng, cand *buf,
                float *lp) {
    float mx = logits[0];
    int arg = 0;
    for (int v = 1; v < V; v++)
        if (logits[v] > mx) {
            mx = logits[v];
            arg = v;
        }
    double z = 0.0;
    for (int v = 0; v < V; v++) z += exp((double)logits[v] - mx);
    if (!isfinite(mx) || !isfinite(z)) return -1;
    int tok = arg;
    if (temp > 0.0f) {
        double total = 0.0;
        for (int v = 0; v < V; v++) {
            buf[v].w = exp(((double)logits[v] - mx) / temp);
            buf[v].tok = v;
            total += buf[v].w;
        }
        int k = V;
        if (top_p < 1.0f) {
            qsort(buf, V, sizeof *buf, cand_cmp);
            double c = 0.0, keep = top_p * total;
            for (k = 0; k < V;) {
                c += buf[k++].w;
                if (c >= keep) break;
            }
            total = c;
        }
        double u = gpt_rng_uniform(rng) * total, c = 0.0;
        tok = buf[k - 1].tok;
        for (int i = 0; i < k; i++) {
            c += buf[i].w;
            if (u < c) {
                tok = buf[i].tok;
                break;
            }
        }
    }
    *lp = (float)((double)logits[tok] - mx - log(z));
    return tok;
}

int spade_policy_sample(spade_policy *p, const int *prompt, int plen, int G,
                        const spade_sample_opts *o, int *out_tokens, float *out_logprobs,
                        int *out_len, char *err, size_t errlen) {
    spade_sample_opts def;
    if (!o) {
        spade_sample_opts_default(&def);
        o = &def;
    }
    if (G < 1 || plen < 1 || plen >= p->maxT || o->max_tokens < 1) {
        snprintf(err, errlen,
                 "sample: need G >= 1, 1 <= prompt length < context (%d), max_tokens >= 1 "
                 "(got G %d, prompt %d, max_tokens %d)",
                 p->maxT, G, plen, o->max_tokens);
        return SPADE_POLICY_EINVAL;
    }
    /* Written so that NaN fails too: a NaN or negative temperature used to
     * mean greedy and a NaN top_p "off", silently. */
    if (!(o->temperature >= 0.0f && isfinite(o->temperature))) {
        snprintf(err, errlen, "sample: temperature = %g: expected a finite value >= 0 (0 = greedy)",
                 o->temperature);
        return SPADE_POLICY_EINVAL;
    }
    if (!(o->top_p > 0.0f && o->top_p <= 1.0f)) {
        snprintf(err, errlen, "sample: top_p = %g: expected 0 < top_p <= 1 (1 = off)", o->top_p);
        return SPADE_POLICY_EINVAL;
    }
    if (o->n_stop < 0 || (o->n_stop > 0 && !o->stop)) {
        snprintf(err, errlen, "sample: %d stop tokens but stop = %p", o->n_stop, (const void *)o->stop);
        return SPADE_POLICY_EINVAL;
    }
    for (int i = 0; i < plen; i++)
        if (prompt[i] < 0 || prompt[i] >= p->V) {
            snprintf(err, errlen, "sample: prompt token %d at %d outside the vocabulary", prompt[i], i);
            return SPADE_POLICY_EINVAL;
        }
    /* Sequences never outgrow the context: prompt + completion <= context. */
    int maxn = o->max_tokens < p->maxT - plen ? o->max_tokens : p->maxT - plen;
    int Vp = p->Vp, V = p->V, rc = 0;
    uint64_t *rng = calloc((size_t)G, sizeof *rng);
    int *done = calloc((size_t)G, sizeof *done);
    int *step_tok = malloc((size_t)G * sizeof(int));
    float *logits = malloc((size_t)G * Vp * sizeof(float));
    cand *buf = malloc((size_t)V * sizeof(cand));
    int *seq = NULL; /* (G, plen + maxn) for full recompute */
    if (!rng || !done || !step_tok || !logits || !buf) {
        snprintf(err, errlen, "out of host memory");
        rc = SPADE_POLICY_ENOMEM;
        goto out;
    }
    for (int g = 0; g < G; g++) {
        rng[g] = o->seed * 0xD1B54A32D192ED03ull + (uint64_t)g * 0x9E3779B97F4A7C15ull + 1;
        gpt_rng_next(&rng[g]);
        out_len[g] = 0;
    }
    int Tmax = plen + maxn;
    if (o->no_kv_cache) {
        seq = malloc((size_t)G * Tmax * sizeof(int));
        if (!seq) {
            snprintf(err, errlen, "out of host memory");
            rc = SPADE_POLICY_ENOMEM;
            goto out;
        }
        for (int g = 0; g < G; g++) memcpy(seq + (size_t)g * Tmax, prompt, (size_t)plen * sizeof(int));
        if ((rc = gpt_ensure_acts(p, G, Tmax, err, errlen))) goto out;
    } else {
        if ((rc = ensure_samp(p, G, plen > G ? plen : G, err, errlen))) goto out;
        if ((rc = kv_forward(p, prompt, 1, plen, 0, err, errlen))) goto out;
        /* Prefill ran once, for sequence 0; give every sequence its copy. */
        size_t cstride = (size_t)p->sampG * p->maxT * p->C, bytes = (size_t)plen * p->C * sizeof(float);
        for (int l = 0; l < p->L && !rc; l++)
            for (int g = 1; g < G && !rc; g++) {
                size_t off = l * cstride + (size_t)g * p->maxT * p->C;
                if (BE->copy(BX, p->samp.kcache + off, p->samp.kcache + l * cstride, bytes) ||
                    BE->copy(BX, p->samp.vcache + off, p->samp.vcache + l * cstride, bytes))
                    rc = gpt_backend_fail(p, "copy KV cache", err, errlen);
            }
        if (rc) goto out;
        if (BE->download(BX, logits, p->samp.logits, (size_t)Vp * sizeof(float))) {
            rc = gpt_backend_fail(p, "download logits", err, errlen);
            goto out;
        }
        for (int g = 1; g < G; g++) memcpy(logits + (size_t)g * Vp, logits, (size_t)Vp * sizeof(float));
    }
    for (int n = 0; n < maxn; n++) {
        if (o->no_kv_cache) {
            int T = plen + n;
            /* pack the (G, Tmax) history into the (G, T) batch the forward expects */
            for (int g = 1; g < G; g++)
                memmove(seq + (size_t)g * T, seq + (size_t)g * Tmax, (size_t)T * sizeof(int));
            rc = spade_policy_forward(p, seq, NULL, NULL, G, T, NULL, NULL, err, errlen);
            for (int g = G - 1; g >= 1; g--)
                memmove(seq + (size_t)g * Tmax, seq + (size_t)g * T, (size_t)T * sizeof(int));
            if (rc) goto out;
            /* forward lays rows out as (G, T) at the start of the logits buffer */
            for (int g = 0; g < G; g++)
                if (BE->download(BX, logits + (size_t)g * Vp,
                                 p->acts.logits + ((size_t)g * T + T - 1) * Vp, (size_t)Vp * sizeof(float))) {
                    rc = gpt_backend_fail(p, "download logits", err, errlen);
                    goto out;
                }
        }
        int live = 0;
        for (int g = 0; g < G; g++) {
            if (done[g]) { /* finished: keep feeding its last token; the result is ignored */
                step_tok[g] = out_tokens[(size_t)g * o->max_tokens + out_len[g] - 1];
                if (seq) seq[(size_t)g * Tmax + plen + n] = step_tok[g];
                continue;
            }
            float lp;
            int t = draw(logits + (size_t)g * Vp, V, o->temperature, o->top_p, &rng[g], buf, &lp);
            if (t < 0) {
                snprintf(err, errlen,
                         "sample: the logits of completion %d at token %d are not finite (NaN or inf in the weights?)",
                         g, n);
                rc = SPADE_POLICY_EINVAL;
                goto out;
            }
            out_tokens[(size_t)g * o->max_tokens + n] = t;
            if (out_logprobs) out_logprobs[(size_t)g * o->max_tokens + n] = lp;
            out_len[g] = n + 1;
            step_tok[g] = t;
            if (seq) seq[(size_t)g * Tmax + plen + n] = t;
            for (int k = 0; k < o->n_stop; k++)
                if (o->stop[k] == t) done[g] = 1;
            if (!done[g]) live++;
        }
        if (!live || n + 1 >= maxn) break;
        if (!o->no_kv_cache) {
            if ((rc = kv_forward(p, step_tok, G, 1, plen + n, err, errlen))) goto out;
            if (BE->download(BX, logits, p->samp.logits, (size_t)G * Vp * sizeof(float))) {
                rc = gpt_backend_fail(p, "download logits", err, errlen);
                goto out;
            }
        }
    }
out:
    free(rng);
    free(done);
    free(step_tok);
    free(logits);
    free(buf);
    free(seq);
    return rc;
}
