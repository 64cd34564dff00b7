/* decode.c — the decoding batch: slots that each hold a token sequence and
 * its KV cache across calls, appended to and sampled from together.
 *
 * What it is: the one sampling implementation of core/policy (sample.c's
 * spade_policy_sample is a use of it). A pass runs the pending tokens of
 * several slots as rows of one batch (a prefill of one slot's observation
 * and single decode rows of others alike), each row at its own slot and
 * position (backend.h: encoder_forward_at, attention_forward_kv_at), and
 * keeps the last-position logits of every slot it finishes on the host; the
 * draw (temperature, top-p, a seeded stream per request) happens there.
 * What it is not: a scheduler. Which slots run together, when an episode
 * ends and what a truncated one means are the caller's decisions; this file
 * only reports each slot's status. Nothing is evicted: a slot that reaches
 * the context stops (policy.h, "the context rule").
 *
 * State per slot: hist (its tokens), len, cached (how many of them have
 * keys/values in the cache: len after an append, len - 1 after a sample,
 * whose last token runs at the next pass) and fresh (the host logits are
 * those after all len tokens).
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "policy/gpt_internal.h"

/* Rows of one pass: enough for a long observation to prefill in few passes,
 * small enough that the workspace (16 C floats a row) stays a few MiB. */
#define DEC_ROWS 512

typedef struct {
    double w;
    int tok;
} cand;

struct spade_decoder {
    spade_policy *p;
    int S, R; /* slots; rows per pass (>= S: a decode pass has one row per slot) */
    float *cache_mem; /* (2, L, S, maxT, C): kcache then vcache */
    float *rows_mem; /* the row workspace and the (S, Vp) logits, see SampleTensors */
    float *lora_mem; /* a LoRA policy's (R, r + widest output) scratch; NULL without */
    int *rows_dev; /* (3, R) token, slot, position of each row of a pass */
    SampleTensors s;
    int *hist; /* (S, maxT) tokens of each slot */
    int *len, *cached; /* (S) */
    unsigned char *fresh; /* (S) */
    unsigned char *mark; /* (S) scratch: which slots a call lists */
    float *logits; /* (S, Vp) host: next-token logits of each fresh slot */
    float *stage; /* (S, Vp) host: one pass's downloaded logits */
    int *rows_host; /* (3, R) */
    int *ent_slot, *ent_row, *ent_k; /* (S) a pass's entries: slot, first row, rows */
    int *live; /* (S) request indices still sampling */
    int *work; /* (S) slot lists handed to a pass */
    int *fin; /* (S) a pass's entries that finish their slot */
    uint64_t *rng; /* (S) one stream per request */
    cand *buf; /* (V) the draw's candidates */
    size_t bytes; /* everything above, backend and host */
};

/* ------------------------------------------------------------ lifetime */

void spade_decoder_free(spade_decoder *d) {
    if (!d) return;
    spade_policy *p = d->p;
    BE->dealloc(BX, d->cache_mem);
    BE->dealloc(BX, d->rows_mem);
    BE->dealloc(BX, d->rows_dev);
    BE->dealloc(BX, d->lora_mem);
    free(d->hist);
    free(d->len);
    free(d->cached);
    free(d->fresh);
    free(d->mark);
    free(d->logits);
    free(d->stage);
    free(d->rows_host);
    free(d->ent_slot);
    free(d->ent_row);
    free(d->ent_k);
    free(d->live);
    free(d->work);
    free(d->fin);
    free(d->rng);
    free(d->buf);
    free(d);
}

int spade_decoder_new(spade_decoder **out, spade_policy *p, int max_slots, char *err, size_t errlen) {
    if (!out || !p) {
        snprintf(err, errlen, "decoder_new: %s is NULL", out ? "the policy" : "out");
        return SPADE_POLICY_EINVAL;
    }
    *out = NULL;
    if (max_slots < 1 || max_slots > 65536) {
        snprintf(err, errlen, "decoder_new: max_slots = %d: expected 1..65536", max_slots);
        return SPADE_POLICY_EINVAL;
    }
    spade_decoder *d = calloc(1, sizeof *d);
    if (!d) {
        snprintf(err, errlen, "decoder_new: out of host memory");
        return SPADE_POLICY_ENOMEM;
    }
    d->p = p;
    d->S = max_slots;
    d->R = max_slots > DEC_ROWS ? max_slots : DEC_ROWS;
    size_t S = d->S, R = d->R, L = p->L, C = p->C, maxT = p->maxT, Vp = p->Vp;
    /* Within the limits (L <= 2^8, S and maxT <= 2^16, C <= 2^14) the cache
     * is at most 2^55 floats, so no product here wraps; whether it fits is
     * the allocator's answer. */
    /* a position's keys are kvw floats (C; a Llama's key/value heads only) */
    size_t KW = p->kvw, cache = L * S * maxT * KW;
    /* the MLP's widths and the q|k|v rows differ by architecture (gpt_internal.h) */
    int llama = p->arch == SPADE_ARCH_LLAMA;
    size_t FF = llama ? 2 * (size_t)p->F : 4 * C, FH = llama ? (size_t)p->F : 4 * C;
    size_t rs[9] = {R * C, R * C, R * C, llama ? 0 : R * 3 * C, R * C, R * C, R * FF, R * FH, llama ? R * p->QKV : 0};
    size_t nrow = S * Vp;
    for (int i = 0; i < 9; i++) nrow += rs[i];
    d->cache_mem = BE->alloc(BX, 2 * cache * sizeof(float));
    d->rows_mem = BE->alloc(BX, nrow * sizeof(float));
    d->rows_dev = BE->alloc(BX, 3 * R * sizeof(int));
    /* a LoRA policy's low-rank path runs in the pass (llama_pass_layers): x A^T and its B^T product */
    size_t lz = llama ? (size_t)(p->QKV > 2 * p->F ? p->QKV : 2 * p->F) : 0, lr = (size_t)p->lora_r;
    if (lr) {
        d->lora_mem = BE->alloc(BX, R * (lr + lz) * sizeof(float));
        d->s.lora_u = d->lora_mem;
        d->s.lora_z = d->lora_mem ? d->lora_mem + R * lr : NULL;
    }
    d->hist = malloc(S * maxT * sizeof(int));
    d->len = calloc(S, sizeof(int));
    d->cached = calloc(S, sizeof(int));
    d->fresh = calloc(S, 1);
    d->mark = calloc(S, 1);
    d->logits = malloc(S * Vp * sizeof(float));
    d->stage = malloc(S * Vp * sizeof(float));
    d->rows_host = malloc(3 * R * sizeof(int));
    d->ent_slot = malloc(S * sizeof(int));
    d->ent_row = malloc(S * sizeof(int));
    d->ent_k = malloc(S * sizeof(int));
    d->live = malloc(S * sizeof(int));
    d->work = malloc(S * sizeof(int));
    d->fin = malloc(S * sizeof(int));
    d->rng = malloc(S * sizeof(uint64_t));
    d->buf = malloc((size_t)p->V * sizeof(cand));
    if (!d->cache_mem || !d->rows_mem || !d->rows_dev || (lr && !d->lora_mem)) {
        snprintf(err, errlen,
                 "decoder_new: cannot allocate the caches of %d slots (%.1f MiB: 2 x %zu layers x %zu "
                 "positions x %zu channels each) and %.1f MiB of workspace on %s: %s",
                 max_slots, 2.0 * cache * 4 / 1048576.0, L, maxT, KW, nrow * 4 / 1048576.0, BE->name,
                 BE->last_error(BX));
        spade_decoder_free(d);
        return SPADE_POLICY_ENOMEM;
    }
    if (!d->hist || !d->len || !d->cached || !d->fresh || !d->mark || !d->logits || !d->stage || !d->rows_host ||
        !d->ent_slot || !d->ent_row || !d->ent_k || !d->live || !d->work || !d->fin || !d->rng || !d->buf) {
        snprintf(err, errlen, "decoder_new: out of host memory for %d slots", max_slots);
        spade_decoder_free(d);
        return SPADE_POLICY_ENOMEM;
    }
    d->s.kcache = d->cache_mem;
    d->s.vcache = d->cache_mem + cache;
    float **ptr[10] = {&d->s.res,  &d->s.res2, &d->s.ln,   &d->s.qkv,  &d->s.atty,
                       &d->s.proj, &d->s.fch,  &d->s.fchg, &d->s.qkvc, &d->s.logits};
    float *m = d->rows_mem;
    for (int i = 0; i < 10; i++) {
        *ptr[i] = m;
        m += i < 9 ? rs[i] : 0;
    }
    d->bytes = sizeof *d + (2 * cache + nrow + (lr ? R * (lr + lz) : 0)) * sizeof(float) +
               3 * R * sizeof(int) /* backend */
               + S * maxT * sizeof(int) + 2 * S * sizeof(int) + 2 * S + 2 * S * Vp * sizeof(float) +
               3 * R * sizeof(int) + 6 * S * sizeof(int) + S * sizeof(uint64_t) + (size_t)p->V * sizeof(cand);
    *out = d;
    return 0;
}

int spade_decoder_slots(const spade_decoder *d) { return d ? d->S : 0; }
size_t spade_decoder_bytes(const spade_decoder *d) { return d ? d->bytes : 0; }

int spade_decoder_len(const spade_decoder *d, int slot) {
    if (!d || slot < 0 || slot >= d->S) return -1;
    return d->len[slot];
}

const int *spade_decoder_tokens(const spade_decoder *d, int slot) {
    if (!d || slot < 0 || slot >= d->S) return NULL;
    return d->hist + (size_t)slot * d->p->maxT;
}

static int bad_slot(const spade_decoder *d, const char *who, const char *what, int slot, char *err, size_t errlen) {
    if (!d) {
        snprintf(err, errlen, "%s: the decoder is NULL", who);
        return SPADE_POLICY_EINVAL;
    }
    if (slot < 0 || slot >= d->S) {
        snprintf(err, errlen, "%s: %s %d outside 0..%d (the decoder has %d slots)", who, what, slot, d->S - 1, d->S);
        return SPADE_POLICY_EINVAL;
    }
    return 0;
}

int spade_decoder_reset(spade_decoder *d, int slot, char *err, size_t errlen) {
    int rc = bad_slot(d, "decoder_reset", "slot", slot, err, errlen);
    if (rc) return rc;
    d->len[slot] = d->cached[slot] = 0;
    d->fresh[slot] = 0;
    return 0;
}

int spade_decoder_copy(spade_decoder *d, int dst, int src, char *err, size_t errlen) {
    int rc = bad_slot(d, "decoder_copy", "dst", dst, err, errlen);
    if (!rc) rc = bad_slot(d, "decoder_copy", "src", src, err, errlen);
    if (rc || dst == src) return rc;
    spade_policy *p = d->p;
    size_t maxT = p->maxT, C = p->kvw, layer = (size_t)d->S * maxT * C; /* C: a position's cache floats */
    size_t bytes = (size_t)d->cached[src] * C * sizeof(float);
    /* dst is emptied first: a failed copy leaves it empty, never half made */
    d->len[dst] = d->cached[dst] = 0;
    d->fresh[dst] = 0;
    if (bytes)
        for (int l = 0; l < p->L; l++) {
            size_t from = l * layer + src * maxT * C, to = l * layer + dst * maxT * C;
            CK(BE->copy(BX, d->s.kcache + to, d->s.kcache + from, bytes));
            CK(BE->copy(BX, d->s.vcache + to, d->s.vcache + from, bytes));
        }
    memcpy(d->hist + dst * maxT, d->hist + src * maxT, (size_t)d->len[src] * sizeof(int));
    memcpy(d->logits + dst * (size_t)p->Vp, d->logits + src * (size_t)p->Vp, (size_t)p->Vp * sizeof(float));
    d->len[dst] = d->len[src];
    d->cached[dst] = d->cached[src];
    d->fresh[dst] = d->fresh[src];
    return 0;
}

/* ------------------------------------------------------------ passes */

/* One pass over rows already in d->rows_host (r rows, ne entries): the
 * model's layers over all rows, then the head over the last row of every
 * entry that finishes its slot (nf of them, listed first to last). */
static int run_pass(spade_decoder *d, int r, int ne, int maxlen, const int *finishing, int nf, char *err,
                    size_t errlen) {
    spade_policy *p = d->p;
    int L = p->L, C = p->C, NH = p->NH, maxT = p->maxT;
    size_t R = (size_t)r, C3 = 3 * (size_t)C, C4 = 4 * (size_t)C, CC = (size_t)C * C;
    size_t cstride = (size_t)d->S * maxT * C; /* one layer's cache */
    ParameterTensors w = p->params;
    SampleTensors s = d->s;
    /* One upload a pass (it waits for the device on cuda): the three
     * columns, built d->R apart, are packed r apart first. */
    memmove(d->rows_host + R, d->rows_host + d->R, R * sizeof(int));
    memmove(d->rows_host + 2 * R, d->rows_host + 2 * (size_t)d->R, R * sizeof(int));
    const int *tok = d->rows_dev, *slot = d->rows_dev + R, *pos = d->rows_dev + 2 * R;
    CK(BE->upload(BX, d->rows_dev, d->rows_host, 3 * R * sizeof(int)));
    float *x = s.res, *y = s.res2;
    int rc = policy_q8_sync(p, err, errlen); /* sample_weights = q8_0 (sample_q8.c); refuses a GPT */
    if (rc) return rc;
    if (p->arch == SPADE_ARCH_LLAMA) {
        if ((rc = llama_pass_layers(p, &s, r, tok, slot, pos, d->S, maxlen, err, errlen))) return rc;
        L = 0; /* its layers ran; the head below is shared */
    } else {
        CK(BE->encoder_forward_at(BX, s.res, tok, pos, w.wte, w.wpe, r, C));
    }
    for (int l = 0; l < L; l++) {
        CK(BE->layernorm_forward(BX, s.ln, NULL, NULL, x, w.ln1w + l * C, w.ln1b + l * C, r, C));
        CK(BE->matmul_forward(BX, s.qkv, s.ln, w.qkvw + l * C3 * C, w.qkvb + l * C3, r, C, 3 * C));
        CK(BE->attention_forward_kv_at(BX, s.atty, s.qkv, s.kcache + l * cstride, s.vcache + l * cstride, slot, pos, r,
                                       C, NH, d->S, maxT, maxlen));
        CK(BE->matmul_forward(BX, s.proj, s.atty, w.attprojw + l * CC, w.attprojb + l * C, r, C, C));
        CK(BE->residual_forward(BX, y, x, s.proj, R * C));
        CK(BE->layernorm_forward(BX, s.ln, NULL, NULL, y, w.ln2w + l * C, w.ln2b + l * C, r, C));
        CK(BE->matmul_forward(BX, s.fch, s.ln, w.fcw + l * C4 * C, w.fcb + l * C4, r, C, 4 * C));
        CK(BE->gelu_forward(BX, s.fchg, s.fch, R * C4));
        CK(BE->matmul_forward(BX, s.proj, s.fchg, w.fcprojw + l * C * C4, w.fcprojb + l * C, r, 4 * C, C));
        CK(BE->residual_forward(BX, x, y, s.proj, R * C));
    }
    if (!nf) return 0;
    /* Only the last row of a finished slot needs logits. In a decode pass
     * (one row per entry, all finishing) those are all the rows, in order. */
    if (nf == ne && r == ne) {
        if ((rc = gpt_final_norm(p, s.ln, x, r, err, errlen))) return rc;
    } else {
        for (int j = 0; j < nf; j++) {
            int e = finishing[j], last = d->ent_row[e] + d->ent_k[e] - 1;
            if ((rc = gpt_final_norm(p, s.ln + (size_t)j * C, x + (size_t)last * C, 1, err, errlen))) return rc;
        }
    }
    /* the head's 8-bit copy when sample_weights = q8_0 (sample_q8.c), else F32 */
    if ((rc = policy_q8_matmul(p, 4 * p->L, s.logits, s.ln, p->head, NULL, nf, C, p->Vp, err, errlen))) return rc;
    CK(BE->download(BX, d->stage, s.logits, (size_t)nf * p->Vp * sizeof(float)));
    return 0;
}

/* Brings the listed slots up to date: every token in the cache and the
 * logits after the last one on the host. Slots are taken in list order,
 * up to d->R rows a pass (a long prefill continues in the next pass). */
static int catch_up(spade_decoder *d, const int *slots, int n, char *err, size_t errlen) {
    spade_policy *p = d->p;
    int maxT = p->maxT, Vp = p->Vp;
    for (int i = 0; i < n; i++) {
        int s = slots[i];
        /* in the cache without its logits (no call leaves a slot so; kept so
         * that one never samples stale logits): run the last token again, its
         * cache row is rewritten with the same values */
        if (d->len[s] > 0 && d->cached[s] == d->len[s] && !d->fresh[s]) d->cached[s] = d->len[s] - 1;
    }
    int *finbuf = d->fin, rc = 0;
    for (;;) {
        int r = 0, ne = 0, nf = 0, maxlen = 1;
        for (int i = 0; i < n && r < d->R; i++) {
            int s = slots[i], k = d->len[s] - d->cached[s];
            if (k <= 0) continue;
            if (k > d->R - r) k = d->R - r;
            for (int j = 0; j < k; j++) {
                int at = d->cached[s] + j;
                d->rows_host[r + j] = d->hist[(size_t)s * maxT + at];
                d->rows_host[d->R + r + j] = s;
                d->rows_host[2 * d->R + r + j] = at;
            }
            if (d->cached[s] + k > maxlen) maxlen = d->cached[s] + k;
            d->ent_slot[ne] = s;
            d->ent_row[ne] = r;
            d->ent_k[ne] = k;
            if (d->cached[s] + k == d->len[s]) finbuf[nf++] = ne;
            ne++;
            r += k;
        }
        if (!r) break;
        if ((rc = run_pass(d, r, ne, maxlen, finbuf, nf, err, errlen))) break;
        for (int e = 0; e < ne; e++) d->cached[d->ent_slot[e]] += d->ent_k[e];
        for (int j = 0; j < nf; j++) {
            int s = d->ent_slot[finbuf[j]];
            memcpy(d->logits + (size_t)s * Vp, d->stage + (size_t)j * Vp, (size_t)Vp * sizeof(float));
            d->fresh[s] = 1;
        }
    }
    return rc;
}

/* The reference: each listed slot's logits from a full forward over its
 * tokens (spade_policy_forward; slots of equal length share one batch).
 * The cache is not touched; the next pass catches it up. */
static int recompute(spade_decoder *d, const int *slots, int n, char *err, size_t errlen) {
    spade_policy *p = d->p;
    int maxT = p->maxT, Vp = p->Vp, rc = 0;
    int *grp = malloc((size_t)n * sizeof(int)), *seq = malloc((size_t)n * maxT * sizeof(int));
    unsigned char *done = calloc((size_t)n, 1);
    if (!grp || !seq || !done) {
        snprintf(err, errlen, "out of host memory");
        rc = SPADE_POLICY_ENOMEM;
    }
    for (int i = 0; i < n && !rc; i++) {
        if (done[i]) continue;
        int T = d->len[slots[i]], G = 0;
        for (int j = i; j < n; j++)
            if (!done[j] && d->len[slots[j]] == T) {
                grp[G] = slots[j];
                memcpy(seq + (size_t)G * T, d->hist + (size_t)slots[j] * maxT, (size_t)T * sizeof(int));
                done[j] = 1;
                G++;
            }
        if ((rc = spade_policy_forward(p, seq, NULL, NULL, G, T, NULL, NULL, err, errlen))) break;
        /* without targets the head runs on each sequence's last position
         * (every position on the reference path): gpt_head_row finds it */
        for (int g = 0; g < G && !rc; g++) {
            long row = gpt_head_row(p, (size_t)g * T + T - 1);
            if (row < 0) {
                snprintf(err, errlen, "decoder: recompute: no head row for sequence %d's last position", g);
                rc = SPADE_POLICY_EINVAL;
            } else if (BE->download(BX, d->logits + (size_t)grp[g] * Vp, p->acts.logits + (size_t)row * Vp,
                                    (size_t)Vp * sizeof(float))) {
                rc = gpt_backend_fail(p, "download logits", err, errlen);
            }
        }
    }
    free(grp);
    free(seq);
    free(done);
    return rc;
}

/* ------------------------------------------------------------ append */

static int check_tokens(const spade_decoder *d, const char *who, int slot, const int *t, int n, char *err,
                        size_t errlen) {
    if (n < 1 || !t) {
        snprintf(err, errlen, "%s: slot %d: %d tokens at %p: expected n >= 1 and a token array", who, slot, n,
                 (const void *)t);
        return SPADE_POLICY_EINVAL;
    }
    for (int i = 0; i < n; i++)
        if (t[i] < 0 || t[i] >= d->p->V) {
            snprintf(err, errlen, "%s: slot %d: token %d at %d is outside the vocabulary [0, %d)", who, slot, t[i], i,
                     d->p->V);
            return SPADE_POLICY_EINVAL;
        }
    return 0;
}

int gpt_decoder_push(spade_decoder *d, int slot, const int *tokens, int n, char *err, size_t errlen) {
    int rc = bad_slot(d, "decoder_append", "slot", slot, err, errlen);
    if (!rc) rc = check_tokens(d, "decoder_append", slot, tokens, n, err, errlen);
    if (rc) return rc;
    if (n > d->p->maxT - d->len[slot]) return SPADE_SLOT_CONTEXT_FULL;
    memcpy(d->hist + (size_t)slot * d->p->maxT + d->len[slot], tokens, (size_t)n * sizeof(int));
    d->len[slot] += n;
    d->fresh[slot] = 0;
    return 0;
}

/* The checks of a batched append (every slot valid and listed once, every
 * token in the vocabulary), before anything changes. */
static int check_batch(spade_decoder *d, const char *who, const int *slots, const int *const *tokens, const int *n,
                       int count, char *err, size_t errlen) {
    if (!d || count < 1 || !slots || !tokens || !n) {
        snprintf(err, errlen, "%s: decoder %p, %d slots at %p, tokens %p, counts %p: need all, count >= 1", who,
                 (void *)d, count, (const void *)slots, (const void *)tokens, (const void *)n);
        return SPADE_POLICY_EINVAL;
    }
    if (count > d->S) {
        snprintf(err, errlen, "%s: %d slots listed, the decoder has %d", who, count, d->S);
        return SPADE_POLICY_EINVAL;
    }
    int rc = 0;
    memset(d->mark, 0, (size_t)d->S);
    for (int i = 0; i < count && !rc; i++) {
        if ((rc = bad_slot(d, who, "slot", slots[i], err, errlen))) break;
        if (d->mark[slots[i]]) {
            snprintf(err, errlen, "%s: slot %d is listed twice", who, slots[i]);
            rc = SPADE_POLICY_EINVAL;
            break;
        }
        d->mark[slots[i]] = 1;
        rc = check_tokens(d, who, slots[i], tokens[i], n[i], err, errlen);
    }
    return rc;
}

int spade_decoder_append_batch(spade_decoder *d, const int *slots, const int *const *tokens, const int *n, int count,
                               int *status, char *err, size_t errlen) {
    int rc = check_batch(d, "decoder_append", slots, tokens, n, count, err, errlen);
    if (rc) return rc;
    int m = 0;
    for (int i = 0; i < count; i++) {
        int st = gpt_decoder_push(d, slots[i], tokens[i], n[i], err, errlen);
        if (status) status[i] = st;
        if (!st) d->work[m++] = slots[i];
    }
    return m ? catch_up(d, d->work, m, err, errlen) : 0;
}

int spade_decoder_append_shared(spade_decoder *d, const int *slots, const int *const *tokens, const int *n, int count,
                                int *status, char *err, size_t errlen) {
    int rc = check_batch(d, "decoder_append_shared", slots, tokens, n, count, err, errlen);
    if (rc) return rc;
    /* The slots that share (d->mark 2): empty, and whose prompt fits the
     * context (one that does not is refused below, as append_batch does). */
    int first = -1, sharers = 0, P = 0, maxT = d->p->maxT;
    for (int i = 0; i < count; i++) {
        if (d->len[slots[i]] || n[i] > maxT) continue;
        d->mark[slots[i]] = 2;
        if (first < 0) {
            first = i;
            P = n[i];
        } else {
            int j = 0;
            while (j < P && j < n[i] && tokens[i][j] == tokens[first][j]) j++;
            P = j;
        }
        sharers++;
    }
    if (sharers < 2 || P < 1) return spade_decoder_append_batch(d, slots, tokens, n, count, status, err, errlen);
    /* The prefix once, in the first sharer; its cache, tokens and logits
     * then copied to the other sharers (spade_decoder_copy), each of which
     * is then as if it had been prefilled with the prefix itself. */
    int s0 = slots[first];
    if ((rc = gpt_decoder_push(d, s0, tokens[first], P, err, errlen)) || (rc = catch_up(d, &s0, 1, err, errlen)))
        return rc;
    for (int i = 0; i < count; i++)
        if (i != first && d->mark[slots[i]] == 2 && (rc = spade_decoder_copy(d, slots[i], s0, err, errlen))) return rc;
    /* Every slot's remainder in one batch: a sharer's is what follows the
     * prefix (possibly nothing), another slot's its whole list. */
    int m = 0;
    for (int i = 0; i < count; i++) {
        int s = slots[i], skip = d->mark[s] == 2 ? P : 0, st = 0;
        if (n[i] > skip) st = gpt_decoder_push(d, s, tokens[i] + skip, n[i] - skip, err, errlen);
        if (status) status[i] = st;
        if (!st && n[i] > skip) d->work[m++] = s;
    }
    return m ? catch_up(d, d->work, m, err, errlen) : 0;
}

int spade_decoder_append(spade_decoder *d, int slot, const int *tokens, int n, char *err, size_t errlen) {
    int st = 0;
    int rc = spade_decoder_append_batch(d, &slot, &tokens, &n, 1, &st, err, errlen);
    if (rc) return rc;
    if (st == SPADE_SLOT_CONTEXT_FULL)
        snprintf(err, errlen, "decoder_append: slot %d holds %d tokens; %d more would pass the context %d", slot,
                 d->len[slot], n, d->p->maxT);
    return st;
}

/* ------------------------------------------------------------ sampling */

static int cand_cmp(const void *a, const void *b) {
    const cand *x = a, *y = b;
    if (x->w > y->w) return -1;
    if (x->w < y->w) return 1;
    return x->tok - y->tok; /* ties by token id: the order is total, so draws are reproducible */
}

/* The distribution a draw samples from, as candidates: buf[0..k) with
 * weights exp((z - max) / temp) and *kept their sum. top_p < 1 sorts them
 * (most likely first, ties by token id) and keeps the shortest prefix whose
 * mass reaches top_p of the total; otherwise every token in id order.
 * Returns k, or -1 when the logits are not finite (NaN or +inf somewhere:
 * every comparison of the draw would be meaningless). temp > 0. */
static int nucleus(const float *logits, int V, float temp, float top_p, cand *buf, double *kept) {
    float mx = logits[0];
    for (int v = 1; v < V; v++)
        if (logits[v] > mx) mx = logits[v];
    if (!isfinite(mx)) return -1;
    double total = 0.0;
    for (int v = 0; v < V; v++) {
        buf[v].w = exp(((double)logits[v] - mx) / temp);
        buf[v].tok = v;
        total += buf[v].w;
    }
    if (!isfinite(total)) return -1;
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
    *kept = total;
    return k;
}

/* Draws one token from logits (V entries). *lp gets its log-prob under the
 * distribution it was drawn from: log softmax(z / temp) at the token, and
 * with top_p < 1 that renormalised over the nucleus; greedy (temp 0) draws
 * from a point mass, log-prob 0. (GRPO's old log-prob: docs/policy.md,
 * "What the loss optimises".) Returns -1 when the logits are not finite. */
static int draw(const float *logits, int V, float temp, float top_p, uint64_t *rng, cand *buf, float *lp) {
    if (temp <= 0.0f) {
        int arg = 0, nan = 0;
        for (int v = 1; v < V; v++)
            if (logits[v] > logits[arg]) arg = v;
        /* The softmax's sum over exp(z - max) is finite unless some z is NaN
         * (the max is checked below; every other term is at most 1): a NaN
         * test instead of V exp() calls (SmolLM2's 49152: 0.16 ms a token). */
        for (int v = 0; v < V; v++) nan |= logits[v] != logits[v];
        if (!isfinite(logits[arg]) || nan) return -1;
        *lp = 0.0f;
        return arg;
    }
    double total;
    int k = nucleus(logits, V, temp, top_p, buf, &total);
    if (k < 0) return -1;
    double u = gpt_rng_uniform(rng) * total, c = 0.0;
    int at = k - 1;
    for (int i = 0; i < k; i++) {
        c += buf[i].w;
        if (u < c) {
            at = i;
            break;
        }
    }
    *lp = (float)(log(buf[at].w) - log(total));
    return buf[at].tok;
}

double gpt_sampled_dist(const float *logits, int V, float temp, float top_p, int tok, void *scratch, float *probs) {
    cand *buf = scratch;
    double total;
    int k = nucleus(logits, V, temp, top_p, buf, &total);
    if (k < 0) return NAN;
    int in = 0;
    for (int i = 0; i < k && !in; i++) in = buf[i].tok == tok;
    if (!in) { /* outside the nucleus now: kept with its own weight, so its log-prob stays finite */
        for (int i = k; i < V; i++)
            if (buf[i].tok == tok) {
                cand t = buf[k];
                buf[k] = buf[i];
                buf[i] = t;
                break;
            }
        total += buf[k++].w;
    }
    double lp = 0.0;
    if (probs) memset(probs, 0, (size_t)V * sizeof *probs);
    for (int i = 0; i < k; i++) {
        if (probs) probs[buf[i].tok] = (float)(buf[i].w / total);
        if (buf[i].tok == tok) lp = log(buf[i].w) - log(total);
    }
    return lp;
}

size_t gpt_sampled_dist_scratch(int V) { return (size_t)V * sizeof(cand); }

int gpt_decoder_sample(spade_decoder *d, const int *slots, int n, const spade_sample_opts *o, const uint64_t *seeds,
                       const int *max_tokens, int *out_tokens, float *out_logprobs, int *out_len, int *out_status,
                       const char *who, const char *index_name, char *err, size_t errlen) {
    spade_sample_opts def;
    if (!o) {
        spade_sample_opts_default(&def);
        o = &def;
    }
    if (!d || !slots || n < 1 || !out_tokens || !out_len) {
        snprintf(err, errlen, "%s: decoder %p, %d slots at %p, out_tokens %p, out_len %p: need all, n >= 1", who,
                 (void *)d, n, (const void *)slots, (void *)out_tokens, (void *)out_len);
        return SPADE_POLICY_EINVAL;
    }
    if (n > d->S) {
        snprintf(err, errlen, "%s: %d slots listed, the decoder has %d", who, n, d->S);
        return SPADE_POLICY_EINVAL;
    }
    int rc = gpt_check_sample_opts(o, who, err, errlen);
    if (rc) return rc;
    if (o->max_tokens < 1) {
        snprintf(err, errlen, "%s: max_tokens = %d: expected >= 1", who, o->max_tokens);
        return SPADE_POLICY_EINVAL;
    }
    memset(d->mark, 0, (size_t)d->S);
    for (int i = 0; i < n; i++) {
        if ((rc = bad_slot(d, who, "slot", slots[i], err, errlen))) return rc;
        if (d->mark[slots[i]]) {
            snprintf(err, errlen, "%s: slot %d is listed twice", who, slots[i]);
            return SPADE_POLICY_EINVAL;
        }
        d->mark[slots[i]] = 1;
        if (d->len[slots[i]] < 1) {
            snprintf(err, errlen, "%s: slot %d is empty: append a prompt before sampling", who, slots[i]);
            return SPADE_POLICY_EINVAL;
        }
        if (max_tokens && (max_tokens[i] < 1 || max_tokens[i] > o->max_tokens)) {
            snprintf(err, errlen, "%s: max_tokens[%d] = %d: expected 1..%d (opts max_tokens, the row stride)", who, i,
                     max_tokens[i], o->max_tokens);
            return SPADE_POLICY_EINVAL;
        }
    }
    spade_policy *p = d->p;
    int maxT = p->maxT, Vp = p->Vp, V = p->V, nl = 0;
    for (int i = 0; i < n; i++) {
        uint64_t seed = seeds ? seeds[i] : o->seed, stream = seeds ? 0 : (uint64_t)i;
        d->rng[i] = seed * 0xD1B54A32D192ED03ull + stream * 0x9E3779B97F4A7C15ull + 1;
        gpt_rng_next(&d->rng[i]);
        out_len[i] = 0;
        if (out_status) out_status[i] = 0;
        if (d->len[slots[i]] >= maxT) {
            if (out_status) out_status[i] = SPADE_SLOT_CONTEXT_FULL;
            continue;
        }
        d->live[nl++] = i;
    }
    if (o->no_kv_cache && nl) {
        int longest = 0;
        for (int j = 0; j < nl; j++) {
            int i = d->live[j], mt = max_tokens ? max_tokens[i] : o->max_tokens;
            int lim = d->len[slots[i]] + (mt < maxT ? mt : maxT);
            if (lim > maxT) lim = maxT;
            if (lim > longest) longest = lim;
        }
        /* sized once for the longest sequence, not regrown every step */
        if ((rc = gpt_ensure_acts(p, nl, longest, err, errlen))) return rc;
    }
    for (int step = 0; nl; step++) {
        for (int j = 0; j < nl; j++) d->work[j] = slots[d->live[j]];
        rc = o->no_kv_cache ? recompute(d, d->work, nl, err, errlen) : catch_up(d, d->work, nl, err, errlen);
        if (rc) return rc;
        int still = 0;
        for (int j = 0; j < nl; j++) {
            int i = d->live[j], s = slots[i];
            float lp;
            int t = draw(d->logits + (size_t)s * Vp, V, o->temperature, o->top_p, &d->rng[i], d->buf, &lp);
            if (t < 0) {
                if (index_name)
                    snprintf(err, errlen,
                             "%s: the logits of %s %d at token %d are not finite (NaN or inf in the weights?)", who,
                             index_name, i, step);
                else
                    snprintf(err, errlen,
                             "%s: the logits of slot %d at token %d are not finite (NaN or inf in the weights?)", who,
                             s, step);
                return SPADE_POLICY_EINVAL;
            }
            out_tokens[(size_t)i * o->max_tokens + out_len[i]] = t;
            if (out_logprobs) out_logprobs[(size_t)i * o->max_tokens + out_len[i]] = lp;
            out_len[i]++;
            d->hist[(size_t)s * maxT + d->len[s]++] = t;
            d->fresh[s] = 0;
            int st = 0;
            for (int k = 0; k < o->n_stop; k++)
                if (o->stop[k] == t) st = SPADE_SLOT_STOP;
            if (!st && d->len[s] >= maxT) st = SPADE_SLOT_CONTEXT_FULL;
            if (!st && out_len[i] >= (max_tokens ? max_tokens[i] : o->max_tokens)) st = SPADE_SLOT_MAX_TOKENS;
            if (st) {
                if (out_status) out_status[i] = st;
            } else {
                d->live[still++] = i;
            }
        }
        nl = still;
    }
    return 0;
}

int spade_decoder_sample(spade_decoder *d, const int *slots, int n, const spade_sample_opts *o, const uint64_t *seeds,
                         const int *max_tokens, int *out_tokens, float *out_logprobs, int *out_len, int *out_status,
                         char *err, size_t errlen) {
    return gpt_decoder_sample(d, slots, n, o, seeds, max_tokens, out_tokens, out_logprobs, out_len, out_status,
                              "decoder_sample", NULL, err, errlen);
}

int spade_decoder_next_logprobs(spade_decoder *d, int slot, float *out, char *err, size_t errlen) {
    int rc = bad_slot(d, "decoder_next_logprobs", "slot", slot, err, errlen);
    if (rc) return rc;
    if (!out || d->len[slot] < 1) {
        snprintf(err, errlen, "decoder_next_logprobs: slot %d %s", slot,
                 out ? "is empty: it has no next token yet" : ": out is NULL");
        return SPADE_POLICY_EINVAL;
    }
    if ((rc = catch_up(d, &slot, 1, err, errlen))) return rc;
    const float *l = d->logits + (size_t)slot * d->p->Vp;
    int V = d->p->V;
    float mx = l[0];
    for (int v = 1; v < V; v++)
        if (l[v] > mx) mx = l[v];
    double z = 0.0;
    for (int v = 0; v < V; v++) z += exp((double)l[v] - mx);
    double lz = log(z);
    for (int v = 0; v < V; v++) out[v] = (float)((double)l[v] - mx - lz);
    return 0;
}
