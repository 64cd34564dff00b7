/* grpo.c — the GRPO loss: advantages, the token-level clipped surrogate (or
 * truncated importance sampling), an optional k3 KL to a frozen reference,
 * its gradient into the policy, and a PPO-style multi-step update.
 *
 * What it is: given samples (a prompt and a completion, or one masked token
 * sequence such as a whole episode; old log-probs, reward, group, role),
 * computes per-group advantages A = r - mean(r) (optionally / std; or takes
 * the caller's), drops groups whose rewards are all equal (they carry no
 * signal and would only dilute the token mean), scales each role's
 * advantages to unit RMS so designer and agent samples pull with comparable
 * force, then runs forward/backward in micro-batches with dLoss/dlogp on
 * every trained token (mask 1) and exactly 0 elsewhere.
 * Loss per trained token (ratio r = exp(logp - old_logp), both under the
 * distribution the token was drawn from: the sample's temperature and top-p,
 * see sampled_rows and docs/policy.md):
 *   -min(r A, clip(r, 1 - eps_low, 1 + eps_high) A) + beta * (exp(q - logp) - (q - logp) - 1)
 * with q the reference log-prob, divided by a count of trained tokens
 * (token_norm). The count never depends on how tokens are split into
 * sequences: one masked episode and its turns given as separate
 * single-completion samples are the same sum over the same tokens with the
 * same divisor, so their gradients agree up to float summation order
 * (tests/test_grpo.c).
 * Per-role gradient norms are measured, not estimated: each role's
 * micro-batches are back-propagated into a zeroed gradient buffer, its sum of
 * squares taken, and the buffer added to the real gradient on the host.
 * What it is not: the sampling (decode.c records old log-probs) or the
 * optimizer (spade_policy_step, which spade_grpo_update calls per minibatch).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "errbuf.h"
#include "policy/gpt_internal.h"

void spade_grpo_opts_default(spade_grpo_opts *o) {
    o->eps_low = 0.2f;
    o->eps_high = 0.28f;
    o->beta = 0.0f;
    o->std_norm = 0;
    o->role_norm = 1;
    o->micro_batch = 8;
    o->adv_mode = SPADE_GRPO_ADV_GROUP_MEAN;
    o->token_norm = SPADE_GRPO_NORM_BATCH;
    o->tis_cap = 0.0f;
    o->epochs = 1;
    o->minibatch = 0;
}

int spade_grpo_advantages(const spade_grpo_sample *s, int n, const spade_grpo_opts *o, float *adv, int *kept,
                          int *n_groups, int *n_dropped, char *err, size_t errlen) {
    int ng = 0, nd = 0;
    int given = o->adv_mode == SPADE_GRPO_ADV_GIVEN;
    int zscore = o->std_norm || o->adv_mode == SPADE_GRPO_ADV_GROUP_Z;
    int *seen = calloc(n > 0 ? (size_t)n : 1, sizeof(int));
    int *own = kept ? NULL : calloc(n > 0 ? (size_t)n : 1, sizeof(int));
    if (!kept) kept = own;
    if (!seen || !kept) {
        free(seen);
        free(own);
        spade_errf(err, errlen, "grpo: out of memory");
        return SPADE_POLICY_ENOMEM;
    }
    for (int i = 0; i < n; i++) {
        if (s[i].role < 0 || s[i].role >= SPADE_GRPO_MAX_ROLES) {
            free(seen);
            free(own);
            spade_errf(err, errlen, "grpo: sample %d has role %d outside 0..%d", i, s[i].role,
                       SPADE_GRPO_MAX_ROLES - 1);
            return SPADE_POLICY_EINVAL;
        }
        if (!isfinite(s[i].reward)) {
            free(seen);
            free(own);
            spade_errf(err, errlen, "grpo: sample %d has a non-finite reward", i);
            return SPADE_POLICY_EINVAL;
        }
        if (given && !isfinite(s[i].advantage)) {
            free(seen);
            free(own);
            spade_errf(err, errlen, "grpo: sample %d has a non-finite advantage %g (adv_mode = given)", i,
                       s[i].advantage);
            return SPADE_POLICY_EINVAL;
        }
        adv[i] = given ? s[i].advantage : 0.0f;
        kept[i] = given;
    }
    for (int i = 0; i < n; i++) {
        if (seen[i]) continue;
        /* one group: every later sample with the same id */
        int cnt = 0;
        double sum = 0.0, lo = s[i].reward, hi = s[i].reward;
        for (int j = i; j < n; j++)
            if (!seen[j] && s[j].group == s[i].group) {
                seen[j] = 1;
                cnt++;
                sum += s[j].reward;
                if (s[j].reward < lo) lo = s[j].reward;
                if (s[j].reward > hi) hi = s[j].reward;
            }
        ng++;
        if (given) continue; /* counted, never dropped: the caller chose the advantages */
        /* All rewards equal (or a group of one): no signal. "Equal" allows
         * float rounding (0.1 + 0.2 vs 0.3): role normalisation would scale a
         * 1e-8 spread up to advantages of +-1, pure noise at full strength. */
        double mag = fmax(1.0, fmax(fabs(lo), fabs(hi)));
        if (hi - lo <= SPADE_GRPO_EQUAL_TOL * mag) {
            nd++;
            continue;
        }
        double mean = sum / cnt, var = 0.0;
        for (int j = i; j < n; j++)
            if (s[j].group == s[i].group) var += (s[j].reward - mean) * (s[j].reward - mean);
        double sd = sqrt(var / cnt);
        for (int j = i; j < n; j++)
            if (s[j].group == s[i].group) {
                double a = s[j].reward - mean;
                if (zscore) a /= sd + 1e-6;
                adv[j] = (float)a;
                kept[j] = 1;
            }
    }
    if (o->role_norm) {
        double ss[SPADE_GRPO_MAX_ROLES] = {0};
        int cnt[SPADE_GRPO_MAX_ROLES] = {0};
        for (int i = 0; i < n; i++)
            if (kept[i]) {
                ss[s[i].role] += (double)adv[i] * adv[i];
                cnt[s[i].role]++;
            }
        for (int i = 0; i < n; i++) {
            int r = s[i].role;
            if (cnt[r] && ss[r] > 0) adv[i] = (float)(adv[i] / sqrt(ss[r] / cnt[r]));
        }
    }
    free(seen);
    free(own);
    if (n_groups) *n_groups = ng;
    if (n_dropped) *n_dropped = nd;
    return 0;
}

/* ------------------------------------------------------------ sample views */

/* Both forms read as one sequence: token t, whether it is trained, and its
 * old log-prob (only asked where it is trained). */
static int seq_tok(const spade_grpo_sample *x, int t) {
    if (x->tokens) return x->tokens[t];
    return t < x->prompt_len ? x->prompt[t] : x->completion[t - x->prompt_len];
}
static int seq_trained(const spade_grpo_sample *x, int t) { return x->tokens ? x->mask[t] != 0 : t >= x->prompt_len; }
static double seq_old(const spade_grpo_sample *x, int t) {
    return x->tokens ? x->old_logprobs[t] : x->old_logprobs[t - x->prompt_len];
}
/* The sampling distribution's temperature and top-p (0 in the sample: 1). */
static float samp_temp(const spade_grpo_sample *x) { return x->temperature > 0 ? x->temperature : 1.0f; }
static float samp_top(const spade_grpo_sample *x) { return x->top_p > 0 ? x->top_p : 1.0f; }
static int samp_plain(const spade_grpo_sample *x) { return samp_temp(x) == 1.0f && samp_top(x) >= 1.0f; }

typedef struct {
    int last; /* index of the last trained token (0: none); the row is tokens[0..last) */
    int ntrain; /* trained tokens */
} seqinfo;

static int check_opts(spade_policy *p, spade_policy *ref, const spade_grpo_opts *o, char *err, size_t errlen) {
    if (o->beta > 0 && !ref) {
        spade_errf(err, errlen, "grpo: beta = %g needs a reference policy", o->beta);
        return SPADE_POLICY_EINVAL;
    }
    if (ref && (ref->L != p->L || ref->C != p->C || ref->NH != p->NH || ref->maxT != p->maxT || ref->V != p->V)) {
        spade_errf(err, errlen, "grpo: the reference policy's config differs from the policy's");
        return SPADE_POLICY_EINVAL;
    }
    /* A NaN would pass every "<" test below and quietly change the objective. */
    if (!(o->eps_low >= 0 && o->eps_low < 1) || !(o->eps_high >= 0 && isfinite(o->eps_high)) ||
        !(o->beta >= 0 && isfinite(o->beta)) || !(o->tis_cap >= 0 && isfinite(o->tis_cap))) {
        spade_errf(err, errlen,
                   "grpo: eps_low = %g must be in [0, 1), eps_high = %g, beta = %g and tis_cap = %g "
                   "finite and >= 0",
                   o->eps_low, o->eps_high, o->beta, o->tis_cap);
        return SPADE_POLICY_EINVAL;
    }
    if (o->adv_mode < SPADE_GRPO_ADV_GROUP_MEAN || o->adv_mode > SPADE_GRPO_ADV_GIVEN ||
        o->token_norm < SPADE_GRPO_NORM_BATCH || o->token_norm > SPADE_GRPO_NORM_ROLE || o->epochs < 1 ||
        o->minibatch < 0) {
        spade_errf(err, errlen,
                   "grpo: adv_mode = %d (0..2), token_norm = %d (0..1), epochs = %d (>= 1), "
                   "minibatch = %d (>= 0): out of range",
                   o->adv_mode, o->token_norm, o->epochs, o->minibatch);
        return SPADE_POLICY_EINVAL;
    }
    return 0;
}

static int check_sample(spade_policy *p, const spade_grpo_sample *x, int i, seqinfo *info, char *err, size_t errlen) {
    if (x->role < 0 || x->role >= SPADE_GRPO_MAX_ROLES) {
        spade_errf(err, errlen, "grpo: sample %d has role %d outside 0..%d", i, x->role, SPADE_GRPO_MAX_ROLES - 1);
        return SPADE_POLICY_EINVAL;
    }
    info->last = 0;
    info->ntrain = 0;
    if (!(x->temperature >= 0 && isfinite(x->temperature)) || !(x->top_p >= 0 && x->top_p <= 1)) {
        spade_errf(err, errlen,
                   "grpo: sample %d: temperature = %g, top_p = %g: expected a finite temperature >= 0 and top_p "
                   "in [0, 1] (0 = 1 for both: drawn at temperature 1 without top-p)",
                   i, x->temperature, x->top_p);
        return SPADE_POLICY_EINVAL;
    }
    if (x->tokens) {
        if (x->prompt || x->completion || x->prompt_len || x->completion_len) {
            spade_errf(err, errlen, "grpo: sample %d sets both tokens (the masked form) and prompt/completion", i);
            return SPADE_POLICY_EINVAL;
        }
        if (x->len < 1 || !x->mask) {
            spade_errf(err, errlen,
                       "grpo: sample %d: a masked sequence needs len >= 1 (got %d) and a mask of len entries", i,
                       x->len);
            return SPADE_POLICY_EINVAL;
        }
        for (int t = 0; t < x->len; t++) {
            if (x->tokens[t] < 0 || x->tokens[t] >= p->V) {
                spade_errf(err, errlen, "grpo: sample %d: token %d at %d is outside the vocabulary [0, %d)", i,
                           x->tokens[t], t, p->V);
                return SPADE_POLICY_EINVAL;
            }
            if (x->mask[t] > 1 || (t == 0 && x->mask[t])) {
                spade_errf(err, errlen,
                           "grpo: sample %d: mask[%d] = %d: the mask is 0 or 1, and 0 at position 0 "
                           "(nothing predicts the first token)",
                           i, t, x->mask[t]);
                return SPADE_POLICY_EINVAL;
            }
            if (x->mask[t]) {
                if (!x->old_logprobs) {
                    spade_errf(err, errlen, "grpo: sample %d has trained tokens but no old log-probs", i);
                    return SPADE_POLICY_EINVAL;
                }
                if (!isfinite(x->old_logprobs[t])) {
                    spade_errf(err, errlen, "grpo: sample %d: old log-prob %g at trained position %d is not finite", i,
                               x->old_logprobs[t], t);
                    return SPADE_POLICY_EINVAL;
                }
                info->last = t;
                info->ntrain++;
            }
        }
        if (info->last > p->maxT) {
            spade_errf(err, errlen,
                       "grpo: sample %d: its last trained token is at %d, so %d tokens of it must fit "
                       "the context %d",
                       i, info->last, info->last, p->maxT);
            return SPADE_POLICY_EINVAL;
        }
        return 0;
    }
    if (x->prompt_len < 1 || x->completion_len < 1 || x->prompt_len + x->completion_len - 1 > p->maxT ||
        !x->old_logprobs || !x->prompt || !x->completion) {
        spade_errf(err, errlen,
                   "grpo: sample %d: prompt %d + completion %d tokens must be >= 1 each, fit "
                   "the context %d, and come with old log-probs",
                   i, x->prompt_len, x->completion_len, p->maxT);
        return SPADE_POLICY_EINVAL;
    }
    for (int j = 0; j < x->prompt_len; j++)
        if (x->prompt[j] < 0 || x->prompt[j] >= p->V) {
            spade_errf(err, errlen, "grpo: sample %d: prompt token %d at %d is outside the vocabulary [0, %d)", i,
                       x->prompt[j], j, p->V);
            return SPADE_POLICY_EINVAL;
        }
    /* The last completion token is only a target, where -1 means "nothing
     * to predict": checked here or it would count as a token of log-prob 0. */
    for (int j = 0; j < x->completion_len; j++) {
        if (x->completion[j] < 0 || x->completion[j] >= p->V) {
            spade_errf(err, errlen, "grpo: sample %d: completion token %d at %d is outside the vocabulary [0, %d)", i,
                       x->completion[j], j, p->V);
            return SPADE_POLICY_EINVAL;
        }
        if (!isfinite(x->old_logprobs[j])) {
            spade_errf(err, errlen, "grpo: sample %d: old log-prob %g at %d is not finite", i, x->old_logprobs[j], j);
            return SPADE_POLICY_EINVAL;
        }
    }
    info->last = x->prompt_len + x->completion_len - 1;
    info->ntrain = x->completion_len;
    return 0;
}

/* ------------------------------------------------------------ one pass */

typedef struct {
    spade_policy *p, *ref;
    const spade_grpo_sample *s;
    const seqinfo *info;
    const float *adv;
    const spade_grpo_opts *o;
    int mb; /* sequences per micro-batch */
    int *tok, *tgt; /* (mb, Tcap) host rows */
    float *lp, *rlp, *dl; /* (mb, Tcap) */
    float *rows; /* (SAMP_ROWS, Vp) host: logits, then the sampling distribution; lazy */
    void *scr; /* gpt_sampled_dist's scratch; lazy */
    float *scratch; /* (num_params) backend memory, one role's gradient; lazy */
    float *gh, *gtmp; /* (num_params) host: the real gradient, a role's; lazy */
} grpo_work;

typedef struct {
    double loss, kl, ratio;
    long nclip, ntok;
    double role_n2[SPADE_GRPO_MAX_ROLES];
    int role_present[SPADE_GRPO_MAX_ROLES];
} pass_out;

/* Points the policy's gradient tensors at mem (same layout as grads_mem). */
static void grads_point(spade_policy *p, float *mem) { gpt_point_grads(p, mem); }

/* Rows of logits a sample drawn at another temperature or top-p brings to
 * the host at a time. */
#define SAMP_ROWS 64

/* For the samples of the micro-batch drawn from a distribution other than
 * temperature 1 without top-p: lp (the forward's log softmax(z) at each
 * trained token) becomes the log-prob under that distribution, computed by
 * the function that drew the token (gpt_sampled_dist, decode.c). With
 * grad_too, p's saved probabilities at those rows become that distribution
 * too, so that crossentropy_backward's dlogp * ([v == tok] - probs) with
 * dlogp / temperature (run_rows) is d/dz of its log-prob: (onehot - pi) / T
 * on the nucleus, 0 off it (the nucleus is piecewise constant in z). */
static int sampled_rows(grpo_work *w, spade_policy *p, const int *idx, int B, int T, float *lp, int grad_too, char *err,
                        size_t errlen) {
    int V = p->V, Vp = p->Vp;
    for (int b = 0; b < B; b++) {
        const spade_grpo_sample *x = &w->s[idx[b]];
        if (samp_plain(x)) continue;
        if (!w->rows) {
            w->rows = malloc((size_t)SAMP_ROWS * Vp * sizeof(float));
            w->scr = malloc(gpt_sampled_dist_scratch(V));
            if (!w->rows || !w->scr) {
                spade_errf(err, errlen, "grpo: out of memory for the sampling distribution's rows");
                return SPADE_POLICY_ENOMEM;
            }
        }
        int last = w->info[idx[b]].last;
        for (int t = 1; t <= last;) {
            if (!seq_trained(x, t)) {
                t++;
                continue;
            }
            int t0 = t, n = 0;
            while (t <= last && seq_trained(x, t) && n < SAMP_ROWS) t++, n++;
            size_t pos0 = (size_t)b * T + t0 - 1;
            /* positions pos0.. predict trained tokens, so each has a target and
             * a head row, consecutive ones consecutive rows (gpt_head_row) */
            long row0 = gpt_head_row(p, pos0);
            if (row0 < 0 || gpt_head_row(p, pos0 + n - 1) != row0 + n - 1) {
                spade_errf(err, errlen, "grpo: sample %d: no head rows for positions %zu..%zu", idx[b], pos0,
                           pos0 + n - 1);
                return SPADE_POLICY_EINVAL;
            }
            if (BE->download(BX, w->rows, p->acts.logits + (size_t)row0 * Vp, (size_t)n * Vp * sizeof(float)))
                return gpt_backend_fail(p, "download logits", err, errlen);
            for (int j = 0; j < n; j++) {
                float *row = w->rows + (size_t)j * Vp;
                double l = gpt_sampled_dist(row, V, samp_temp(x), samp_top(x), seq_tok(x, t0 + j), w->scr,
                                            grad_too ? row : NULL);
                if (isnan(l)) {
                    spade_errf(err, errlen, "grpo: sample %d: the logits at position %d are not finite", idx[b],
                               t0 + j);
                    return SPADE_POLICY_EINVAL;
                }
                lp[pos0 + j] = (float)l;
                if (grad_too)
                    for (int v = V; v < Vp; v++) row[v] = 0.0f;
            }
            if (grad_too && BE->upload(BX, p->acts.probs + (size_t)row0 * Vp, w->rows, (size_t)n * Vp * sizeof(float)))
                return gpt_backend_fail(p, "upload probabilities", err, errlen);
        }
    }
    return 0;
}

/* Forward/backward of samples idx[0..m) (one role), each token's loss times
 * scale, into whatever p->grads points at. */
static int run_rows(grpo_work *w, const int *idx, int m, double scale, pass_out *out, char *err, size_t errlen) {
    spade_policy *p = w->p, *ref = w->ref;
    const spade_grpo_opts *o = w->o;
    int use_ref = ref && o->beta > 0, tis = o->tis_cap > 0;
    double lo = 1.0 - o->eps_low, hi = 1.0 + o->eps_high, cap = o->tis_cap;
    int rc;
    for (int k0 = 0; k0 < m; k0 += w->mb) {
        int B = m - k0 < w->mb ? m - k0 : w->mb, T = 0;
        for (int b = 0; b < B; b++)
            if (w->info[idx[k0 + b]].last > T) T = w->info[idx[k0 + b]].last;
        /* Row b: the sequence up to (not including) its last trained token,
         * padded with <|end|>; a target only where a trained token is
         * predicted, so an untrained position has logp 0 and dlogp exactly 0. */
        for (int b = 0; b < B; b++) {
            const spade_grpo_sample *x = &w->s[idx[k0 + b]];
            int last = w->info[idx[k0 + b]].last;
            int *tr = w->tok + (size_t)b * T, *gr = w->tgt + (size_t)b * T;
            for (int t = 0; t < T; t++) {
                tr[t] = t < last ? seq_tok(x, t) : SPADE_TOK_END;
                gr[t] = t + 1 <= last && seq_trained(x, t + 1) ? seq_tok(x, t + 1) : -1;
            }
        }
        if (use_ref && (rc = spade_policy_forward(ref, w->tok, w->tgt, NULL, B, T, NULL, w->rlp, err, errlen)))
            return rc;
        if (use_ref && (rc = sampled_rows(w, ref, idx + k0, B, T, w->rlp, 0, err, errlen))) return rc;
        if ((rc = spade_policy_forward(p, w->tok, w->tgt, NULL, B, T, NULL, w->lp, err, errlen))) return rc;
        if ((rc = sampled_rows(w, p, idx + k0, B, T, w->lp, 1, err, errlen))) return rc;
        for (size_t i = 0; i < (size_t)B * T; i++) w->dl[i] = 0.0f;
        for (int b = 0; b < B; b++) {
            int si = idx[k0 + b];
            const spade_grpo_sample *x = &w->s[si];
            double A = w->adv[si], inv_t = 1.0 / samp_temp(x); /* dlogp -> the backend's, see sampled_rows */
            for (int t = 1; t <= w->info[si].last; t++) {
                if (!seq_trained(x, t)) continue;
                size_t pos = (size_t)b * T + t - 1;
                double l = w->lp[pos], r = exp(l - seq_old(x, t)), g, val;
                if (tis) { /* truncated IS policy gradient: weight min(r, cap), not differentiated */
                    double wgt = r > cap ? cap : r;
                    if (r > cap) out->nclip++;
                    val = -wgt * A;
                    g = -wgt * A;
                } else {
                    double rc_ = r < lo ? lo : (r > hi ? hi : r);
                    double un = r * A, cl = rc_ * A;
                    if (un <= cl) { /* unclipped branch active: d(rA)/dlogp = rA */
                        val = -un;
                        g = -r * A;
                    } else { /* clipped branch: constant in logp */
                        val = -cl;
                        g = 0.0;
                        out->nclip++;
                    }
                }
                out->ratio += r;
                if (use_ref) {
                    double d = (double)w->rlp[pos] - l, ed = exp(d);
                    double k3 = ed - d - 1.0;
                    out->kl += k3;
                    val += o->beta * k3;
                    g += o->beta * (1.0 - ed); /* d k3 / d logp */
                }
                out->loss += val * scale;
                w->dl[pos] = (float)(g * scale * inv_t);
                out->ntok++;
            }
        }
        if ((rc = spade_policy_backward_logp(p, w->dl, err, errlen))) return rc;
    }
    return 0;
}

/* One accumulate pass over samples idx[0..m) (kept, with trained tokens):
 * roles in ascending order, each measured on its own (see the file comment). */
static int grpo_pass(grpo_work *w, const int *idx, int m, pass_out *out, char *err, size_t errlen) {
    spade_policy *p = w->p;
    size_t P = p->ntrain;
    int rc = gpt_ensure_grads(p, err, errlen);
    if (rc) return rc;
    long ntok_role[SPADE_GRPO_MAX_ROLES] = {0}, ntok = 0;
    int cnt[SPADE_GRPO_MAX_ROLES] = {0};
    for (int k = 0; k < m; k++) {
        int r = w->s[idx[k]].role;
        ntok_role[r] += w->info[idx[k]].ntrain;
        ntok += w->info[idx[k]].ntrain;
        cnt[r]++;
    }
    if (!ntok) return 0;
    int *byrole = malloc((size_t)m * sizeof(int));
    if (!byrole) {
        spade_errf(err, errlen, "grpo: out of memory");
        return SPADE_POLICY_ENOMEM;
    }
    int nr = 0, start[SPADE_GRPO_MAX_ROLES];
    for (int r = 0; r < SPADE_GRPO_MAX_ROLES; r++) {
        start[r] = nr;
        nr += cnt[r];
    }
    for (int r = 0, q = 0; r < SPADE_GRPO_MAX_ROLES; r++)
        for (int k = 0; k < m; k++)
            if (w->s[idx[k]].role == r) byrole[q++] = idx[k];
    /* A gradient that is zero on entry (the usual case: after a step or
     * zero_grad) takes the first role directly; the others go through the
     * scratch buffer so that each is measured alone. */
    double g0;
    if (BE->sumsq(BX, p->grads_mem, P, &g0)) {
        free(byrole);
        return gpt_backend_fail(p, "sumsq", err, errlen);
    }
    int direct = g0 == 0.0, host_loaded = 0;
    float *real = p->grads_mem;
    for (int r = 0; r < SPADE_GRPO_MAX_ROLES && !rc; r++) {
        if (!cnt[r]) continue;
        double scale = 1.0 / (double)(w->o->token_norm == SPADE_GRPO_NORM_ROLE ? ntok_role[r] : ntok);
        out->role_present[r] = 1;
        if (direct) {
            direct = 0;
            rc = run_rows(w, byrole + start[r], cnt[r], scale, out, err, errlen);
            if (!rc && BE->sumsq(BX, real, P, &out->role_n2[r])) rc = gpt_backend_fail(p, "sumsq", err, errlen);
            continue;
        }
        if (!w->scratch) {
            w->scratch = BE->alloc(BX, P * sizeof(float));
            w->gh = malloc(P * sizeof(float));
            w->gtmp = malloc(P * sizeof(float));
            if (!w->scratch || !w->gh || !w->gtmp) {
                spade_errf(err, errlen, "grpo: out of memory for the per-role gradient (%zu floats)", P);
                rc = SPADE_POLICY_ENOMEM;
                break;
            }
        }
        if (!host_loaded) {
            if (BE->download(BX, w->gh, real, P * sizeof(float))) {
                rc = gpt_backend_fail(p, "download", err, errlen);
                break;
            }
            host_loaded = 1;
        }
        if (BE->zero(BX, w->scratch, P * sizeof(float))) {
            rc = gpt_backend_fail(p, "zero", err, errlen);
            break;
        }
        grads_point(p, w->scratch);
        rc = run_rows(w, byrole + start[r], cnt[r], scale, out, err, errlen);
        /* every view back on the real gradient: a Llama's (lgrads) and the
         * adapters' (lgr) too, not only the GPT's tensors */
        grads_point(p, real);
        if (rc) break;
        if (BE->sumsq(BX, w->scratch, P, &out->role_n2[r]) ||
            BE->download(BX, w->gtmp, w->scratch, P * sizeof(float))) {
            rc = gpt_backend_fail(p, "sumsq/download", err, errlen);
            break;
        }
        for (size_t i = 0; i < P; i++) w->gh[i] += w->gtmp[i];
    }
    if (!rc && host_loaded && BE->upload(BX, real, w->gh, P * sizeof(float)))
        rc = gpt_backend_fail(p, "upload", err, errlen);
    free(byrole);
    return rc;
}

/* ------------------------------------------------------------ batch and update */

typedef struct {
    grpo_work w;
    float *adv;
    int *kept;
    seqinfo *info;
    int *idx; /* kept samples with trained tokens, in input order */
    int nk;
    long ntok;
} grpo_prep;

static void prep_free(spade_policy *p, grpo_prep *g) {
    free(g->adv);
    free(g->kept);
    free(g->info);
    free(g->idx);
    free(g->w.tok);
    free(g->w.tgt);
    free(g->w.lp);
    free(g->w.rlp);
    free(g->w.dl);
    free(g->w.rows);
    free(g->w.scr);
    if (g->w.scratch) BE->dealloc(BX, g->w.scratch);
    free(g->w.gh);
    free(g->w.gtmp);
}

/* Checks everything, computes advantages, sizes the host rows. */
static int prep(grpo_prep *g, spade_policy *p, spade_policy *ref, const spade_grpo_sample *s, int n,
                const spade_grpo_opts *o, spade_grpo_stats *st, char *err, size_t errlen) {
    memset(g, 0, sizeof *g);
    int rc = check_opts(p, ref, o, err, errlen);
    if (rc) return rc;
    if (n < 0 || (n > 0 && !s)) {
        spade_errf(err, errlen, "grpo: %d samples at %p", n, (const void *)s);
        return SPADE_POLICY_EINVAL;
    }
    size_t nn = n ? (size_t)n : 1;
    g->adv = malloc(nn * sizeof(float));
    g->kept = malloc(nn * sizeof(int));
    g->info = malloc(nn * sizeof(seqinfo));
    g->idx = malloc(nn * sizeof(int));
    if (!g->adv || !g->kept || !g->info || !g->idx) {
        spade_errf(err, errlen, "grpo: out of memory");
        return SPADE_POLICY_ENOMEM;
    }
    for (int i = 0; i < n; i++)
        if ((rc = check_sample(p, &s[i], i, &g->info[i], err, errlen))) return rc;
    rc = spade_grpo_advantages(s, n, o, g->adv, g->kept, &st->n_groups, &st->n_dropped_groups, err, errlen);
    if (rc) return rc;
    int Tcap = 0;
    for (int i = 0; i < n; i++)
        if (g->kept[i] && g->info[i].ntrain) {
            g->idx[g->nk++] = i;
            g->ntok += g->info[i].ntrain;
            if (g->info[i].last > Tcap) Tcap = g->info[i].last;
        }
    st->n_samples = g->nk;
    st->n_tokens = g->ntok;
    g->w = (grpo_work){.p = p,
                       .ref = ref,
                       .s = s,
                       .info = g->info,
                       .adv = g->adv,
                       .o = o,
                       .mb = o->micro_batch > 0 ? o->micro_batch : 8};
    if (!g->nk) return 0;
    size_t cap = (size_t)g->w.mb * Tcap;
    g->w.tok = malloc(cap * sizeof(int));
    g->w.tgt = malloc(cap * sizeof(int));
    g->w.lp = malloc(cap * sizeof(float));
    g->w.rlp = malloc(cap * sizeof(float));
    g->w.dl = malloc(cap * sizeof(float));
    if (!g->w.tok || !g->w.tgt || !g->w.lp || !g->w.rlp || !g->w.dl) {
        spade_errf(err, errlen, "grpo: out of memory");
        return SPADE_POLICY_ENOMEM;
    }
    return 0;
}

int spade_grpo_batch(spade_policy *p, spade_policy *ref, const spade_grpo_sample *s, int n, const spade_grpo_opts *o,
                     spade_grpo_stats *st, char *err, size_t errlen) {
    spade_grpo_opts def;
    if (!o) {
        spade_grpo_opts_default(&def);
        o = &def;
    }
    spade_grpo_stats local;
    if (!st) st = &local;
    memset(st, 0, sizeof *st);
    grpo_prep g;
    int rc = prep(&g, p, ref, s, n, o, st, err, errlen);
    if (!rc && g.nk) { /* else nothing to learn from: gradients untouched */
        pass_out po;
        memset(&po, 0, sizeof po);
        rc = grpo_pass(&g.w, g.idx, g.nk, &po, err, errlen);
        if (!rc) {
            st->loss = (float)po.loss;
            st->kl = (float)(po.kl / po.ntok);
            st->clip_frac = (float)((double)po.nclip / po.ntok);
            st->mean_ratio = (float)(po.ratio / po.ntok);
            for (int r = 0; r < SPADE_GRPO_MAX_ROLES; r++) st->role_grad_norm[r] = (float)sqrt(po.role_n2[r]);
        }
    }
    prep_free(p, &g);
    return rc;
}

int spade_grpo_update(spade_policy *p, spade_policy *ref, const spade_grpo_sample *s, int n, const spade_grpo_opts *o,
                      const spade_adamw_opts *ao, spade_grpo_stats *st, char *err, size_t errlen) {
    spade_grpo_opts def;
    if (!o) {
        spade_grpo_opts_default(&def);
        o = &def;
    }
    spade_adamw_opts adef;
    if (!ao) {
        spade_adamw_opts_default(&adef);
        ao = &adef;
    }
    spade_grpo_stats local;
    if (!st) st = &local;
    memset(st, 0, sizeof *st);
    grpo_prep g;
    int rc = prep(&g, p, ref, s, n, o, st, err, errlen);
    if (!rc) rc = spade_policy_zero_grad(p, err, errlen);
    double loss = 0, kl = 0, ratio = 0, gnorm = 0, rnorm[SPADE_GRPO_MAX_ROLES] = {0};
    long nclip = 0, ntok = 0;
    int rsteps[SPADE_GRPO_MAX_ROLES] = {0};
    int mbs = o->minibatch > 0 ? o->minibatch : (g.nk ? g.nk : 1);
    for (int e = 0; !rc && e < o->epochs && g.nk; e++)
        for (int k0 = 0; !rc && k0 < g.nk; k0 += mbs) {
            int m = g.nk - k0 < mbs ? g.nk - k0 : mbs;
            pass_out po;
            memset(&po, 0, sizeof po);
            if ((rc = grpo_pass(&g.w, g.idx + k0, m, &po, err, errlen))) break;
            float gn = 0.0f;
            if ((rc = spade_policy_step(p, ao, &gn, err, errlen))) break;
            st->n_steps++;
            loss += po.loss;
            kl += po.kl;
            ratio += po.ratio;
            nclip += po.nclip;
            ntok += po.ntok;
            gnorm += gn;
            for (int r = 0; r < SPADE_GRPO_MAX_ROLES; r++)
                if (po.role_present[r]) {
                    rnorm[r] += sqrt(po.role_n2[r]);
                    rsteps[r]++;
                }
        }
    if (st->n_steps) {
        st->loss = (float)(loss / st->n_steps);
        st->grad_norm = (float)(gnorm / st->n_steps);
        st->kl = (float)(kl / ntok);
        st->clip_frac = (float)((double)nclip / ntok);
        st->mean_ratio = (float)(ratio / ntok);
        for (int r = 0; r < SPADE_GRPO_MAX_ROLES; r++)
            if (rsteps[r]) st->role_grad_norm[r] = (float)(rnorm[r] / rsteps[r]);
    }
    prep_free(p, &g);
    return rc;
}
