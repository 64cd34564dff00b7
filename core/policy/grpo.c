/* grpo.c — the GRPO loss: group advantages, the token-level clipped surrogate,
 * an optional k3 KL to a frozen reference, and its gradient into the policy.
 *
 * What it is: given samples {prompt, completion, old log-probs, reward, group,
 * role}, computes per-group advantages A = r - mean(r) (optionally / std),
 * drops groups whose rewards are all equal (they carry no signal and would
 * only dilute the token mean), scales each role's advantages to unit RMS so
 * designer and agent samples pull with comparable force, then runs
 * forward/backward in micro-batches with dLoss/dlogp per completion token.
 * Loss per token (ratio r = exp(logp - old_logp)):
 *   -min(r A, clip(r, 1 - eps_low, 1 + eps_high) A) + beta * (exp(q - logp) - (q - logp) - 1)
 * with q the reference log-prob, averaged over all kept completion tokens.
 * What it is not: the sampling (sample.c records old log-probs) or the
 * optimizer step (spade_policy_step, called by the training loop).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "policy/gpt_internal.h"

void spade_grpo_opts_default(spade_grpo_opts *o) {
    o->eps_low = 0.2f;
    o->eps_high = 0.28f;
    o->beta = 0.0f;
    o->std_norm = 0;
    o->role_norm = 1;
    o->micro_batch = 8;
}

int spade_grpo_advantages(const spade_grpo_sample *s, int n, const spade_grpo_opts *o,
                          float *adv, int *kept, int *n_groups, int *n_dropped, char *err,
                          size_t errlen) {
    int ng = 0, nd = 0;
    int *seen = calloc(n > 0 ? (size_t)n : 1, sizeof(int));
    int *own = kept ? NULL : calloc(n > 0 ? (size_t)n : 1, sizeof(int));
    if (!kept) kept = own;
    if (!seen || !kept) {
        free(seen);
        free(own);
        snprintf(err, errlen, "grpo: out of memory");
        return SPADE_POLICY_ENOMEM;
    }
    for (int i = 0; i < n; i++) {
        if (s[i].role < 0 || s[i].role >= SPADE_GRPO_MAX_ROLES) {
            free(seen);
            free(own);
            snprintf(err, errlen, "grpo: sample %d has role %d outside 0..%d", i, s[i].role,
                     SPADE_GRPO_MAX_ROLES - 1);
            return SPADE_POLICY_EINVAL;
        }
        if (!isfinite(s[i].reward)) {
            free(seen);
            free(own);
            snprintf(err, errlen, "grpo: sample %d has a non-finite reward", i);
            return SPADE_POLICY_EINVAL;
        }
        adv[i] = 0.0f;
        kept[i] = 0;
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
                if (o->std_norm) a /= sd + 1e-6;
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

int spade_grpo_batch(spade_policy *p, spade_policy *ref, const spade_grpo_sample *s, int n,
                     const spade_grpo_opts *o, spade_grpo_stats *st, char *err, size_t errlen) {
    spade_grpo_opts def;
    if (!o) {
        spade_grpo_opts_default(&def);
        o = &def;
    }
    spade_grpo_stats local;
    if (!st) st = &local;
    memset(st, 0, sizeof *st);
    if (o->beta > 0 && !ref) {
        snprintf(err, errlen, "grpo: beta = %g needs a reference policy", o->beta);
        return SPADE_POLICY_EINVAL;
    }
    if (ref && (ref->L != p->L || ref->C != p->C || ref->NH != p->NH || ref->maxT != p->maxT)) {
        snprintf(err, errlen, "grpo: the reference policy's config differs from the policy's");
        return SPADE_POLICY_EINVAL;
    }
    /* A NaN would pass every "<" test below and quietly change the objective. */
    if (!(o->eps_low >= 0 && o->eps_low < 1) || !(o->eps_high >= 0 && isfinite(o->eps_high)) ||
        !(o->beta >= 0 && isfinite(o->beta))) {
        snprintf(err, errlen,
                 "grpo: eps_low = %g must be in [0, 1), eps_high = %g and beta = %g finite and >= 0",
                 o->eps_low, o->eps_high, o->beta);
        return SPADE_POLICY_EINVAL;
    }
    for (int i = 0; i < n; i++) {
        if (s[i].prompt_len < 1 || s[i].completion_len < 1 ||
            s[i].prompt_len + s[i].completion_len - 1 > p->maxT || !s[i].old_logprobs ||
            !s[i].prompt || !s[i].completion) {
            snprintf(err, errlen,
                     "grpo: sample %d: prompt %d + completion %d tokens must be >= 1 each, fit "
                     "the context %d, and come with old log-probs",
                     i, s[i].prompt_len, s[i].completion_len, p->maxT);
            return SPADE_POLICY_EINVAL;
        }
        /* The last completion token is only a target, where -1 means "nothing
         * to predict": checked here or it would count as a token of log-prob 0. */
        for (int j = 0; j < s[i].completion_len; j++) {
            if (s[i].completion[j] < 0 || s[i].completion[j] >= p->V) {
                snprintf(err, errlen, "grpo: sample %d: completion token %d at %d is outside the vocabulary [0, %d)",
                         i, s[i].completion[j], j, p->V);
                return SPADE_POLICY_EINVAL;
            }
            if (!isfinite(s[i].old_logprobs[j])) {
                snprintf(err, errlen, "grpo: sample %d: old log-prob %g at %d is not finite", i,
                         s[i].old_logprobs[j], j);
                return SPADE_POLICY_EINVAL;
            }
        }
    }
    float *adv = malloc((n ? n : 1) * sizeof(float));
    int *kept = malloc((n ? n : 1) * sizeof(int));
    int *idx = malloc((n ? n : 1) * sizeof(int));
    int rc = 0;
    int *tok = NULL, *tgt = NULL;
    float *lp = NULL, *rlp = NULL, *dl = NULL;
    if (!adv || !kept || !idx) {
        rc = SPADE_POLICY_ENOMEM;
        snprintf(err, errlen, "grpo: out of memory");
        goto out;
    }
    rc = spade_grpo_advantages(s, n, o, adv, kept, &st->n_groups, &st->n_dropped_groups, err, errlen);
    if (rc) goto out;
    long ntok = 0;
    int nk = 0;
    for (int i = 0; i < n; i++)
        if (kept[i]) {
            idx[nk++] = i;
            ntok += s[i].completion_len;
        }
    st->n_samples = nk;
    st->n_tokens = ntok;
    if (!nk) goto out; /* nothing to learn from: gradients untouched */

    int mb = o->micro_batch > 0 ? o->micro_batch : 8;
    int Tcap = 0;
    for (int k = 0; k < nk; k++) {
        int T = s[idx[k]].prompt_len + s[idx[k]].completion_len - 1;
        if (T > Tcap) Tcap = T;
    }
    size_t cap = (size_t)mb * Tcap;
    tok = malloc(cap * sizeof(int));
    tgt = malloc(cap * sizeof(int));
    lp = malloc(cap * sizeof(float));
    rlp = malloc(cap * sizeof(float));
    dl = malloc(cap * sizeof(float));
    if (!tok || !tgt || !lp || !rlp || !dl) {
        rc = SPADE_POLICY_ENOMEM;
        snprintf(err, errlen, "grpo: out of memory");
        goto out;
    }
    double loss = 0.0, kl = 0.0, ratio_sum = 0.0;
    long nclip = 0;
    double inv = 1.0 / (double)ntok;
    for (int k0 = 0; k0 < nk; k0 += mb) {
        int B = nk - k0 < mb ? nk - k0 : mb, T = 0;
        for (int b = 0; b < B; b++) {
            const spade_grpo_sample *x = &s[idx[k0 + b]];
            if (x->prompt_len + x->completion_len - 1 > T) T = x->prompt_len + x->completion_len - 1;
        }
        /* Row b: prompt + completion[:-1], padded with <|end|>; a target only
         * where a completion token is predicted. */
        for (int b = 0; b < B; b++) {
            const spade_grpo_sample *x = &s[idx[k0 + b]];
            int *tr = tok + (size_t)b * T, *gr = tgt + (size_t)b * T;
            for (int t = 0; t < T; t++) {
                tr[t] = SPADE_TOK_END;
                gr[t] = -1;
            }
            memcpy(tr, x->prompt, (size_t)x->prompt_len * sizeof(int));
            memcpy(tr + x->prompt_len, x->completion, (size_t)(x->completion_len - 1) * sizeof(int));
            for (int j = 0; j < x->completion_len; j++) gr[x->prompt_len - 1 + j] = x->completion[j];
        }
        if (ref && o->beta > 0 &&
            (rc = spade_policy_forward(ref, tok, tgt, NULL, B, T, NULL, rlp, err, errlen)))
            goto out;
        if ((rc = spade_policy_forward(p, tok, tgt, NULL, B, T, NULL, lp, err, errlen))) goto out;
        for (size_t i = 0; i < (size_t)B * T; i++) dl[i] = 0.0f;
        for (int b = 0; b < B; b++) {
            int si = idx[k0 + b];
            const spade_grpo_sample *x = &s[si];
            double A = adv[si];
            for (int j = 0; j < x->completion_len; j++) {
                size_t pos = (size_t)b * T + x->prompt_len - 1 + j;
                double l = lp[pos], r = exp(l - (double)x->old_logprobs[j]);
                double lo = 1.0 - o->eps_low, hi = 1.0 + o->eps_high;
                double rc_ = r < lo ? lo : (r > hi ? hi : r);
                double un = r * A, cl = rc_ * A, g;
                if (un <= cl) { /* unclipped branch active: d(rA)/dlogp = rA */
                    loss -= un * inv;
                    g = -r * A;
                } else { /* clipped branch: constant in logp */
                    loss -= cl * inv;
                    g = 0.0;
                    nclip++;
                }
                ratio_sum += r;
                if (ref && o->beta > 0) {
                    double d = (double)rlp[pos] - l, ed = exp(d);
                    double k3 = ed - d - 1.0;
                    kl += k3 * inv;
                    loss += o->beta * k3 * inv;
                    g += o->beta * (1.0 - ed); /* d k3 / d logp */
                }
                dl[pos] = (float)(g * inv);
            }
        }
        if ((rc = spade_policy_backward_logp(p, dl, err, errlen))) goto out;
    }
    st->loss = (float)loss;
    st->kl = (float)kl;
    st->clip_frac = (float)((double)nclip / ntok);
    st->mean_ratio = (float)(ratio_sum / ntok);
out:
    free(adv);
    free(kept);
    free(idx);
    free(tok);
    free(tgt);
    free(lp);
    free(rlp);
    free(dl);
    return rc;
}
