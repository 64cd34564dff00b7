/* eval.c — the evaluation arms and their intervals (eval.h).
 *
 * What it is not: a report writer: cli/cmd_eval.c prints the table and JSONL.
 */
#include "agent/eval.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "agent/policy_agent.h"
#include "agents.h"
#include "errbuf.h"
#include "served_episodes.h"

void spade_wilson(long k, long n, double z, double *lo, double *hi) {
    if (n <= 0) {
        *lo = 0;
        *hi = 1;
        return;
    }
    double p = (double)k / (double)n, z2 = z * z, den = 1 + z2 / n;
    double centre = (p + z2 / (2.0 * n)) / den, half = z * sqrt(p * (1 - p) / n + z2 / (4.0 * n * n)) / den;
    *lo = centre - half < 0 ? 0 : centre - half;
    *hi = centre + half > 1 ? 1 : centre + half;
    if (k == 0) *lo = 0; /* exact at the ends, not 1e-17 */
    if (k == n) *hi = 1;
}

void spade_eval_opts_default(spade_eval_opts *o) {
    memset(o, 0, sizeof *o);
    o->episodes = 32;
    o->references = 1;
    o->max_live = 32;
    o->max_action_tokens = 32;
    o->temperature = 1.0f;
}

/* --servers: spec e's requests, one after another, their outcomes into res at e's rows. */
typedef struct served_arm {
    const spade_ep_request *req;
    spade_ep_outcome *res;
    long n, next;
} served_arm;

static int served_next(void *ctx, spade_ep_request *q) {
    served_arm *a = ctx;
    if (a->next >= a->n) return 0;
    *q = a->req[a->next++];
    q->spec = 0;
    return 1;
}

static void served_outcome(void *ctx, const spade_ep_outcome *o) {
    served_arm *a = ctx;
    if (o->episode >= 0 && o->episode < a->n) a->res[o->episode] = *o;
}

static int play_served(const spade_ep_spec *specs, int n, const spade_ep_request *req, spade_agent *agent,
                       const spade_eval_opts *o, spade_ep_outcome *res, char *err, size_t errlen) {
    for (int e = 0; e < n; e++) {
        served_arm a = {.req = req + (long)e * o->episodes, .res = res + (long)e * o->episodes, .n = o->episodes};
        memset(a.res, 0, (size_t)a.n * sizeof *a.res);
        spade_served_opts so = *o->served;
        so.max_live = o->max_live;
        so.on_outcome = served_outcome;
        so.on_event = NULL;
        so.ctx = &a;
        if (spade_served_run(&specs[e], served_next, &a, agent, &so, NULL, err, errlen) < 0) return -1;
        for (long k = 0; k < a.n; k++) a.res[k].spec = e;
    }
    return 0;
}

/* Decoding slots: no more than the episodes of an arm (a slot's KV cache
 * spans the whole context; an episode plays the same whatever its batch). */
static int live_slots(int n, const spade_eval_opts *o) {
    long total = (long)n * o->episodes;
    return total < o->max_live ? (int)(total > 0 ? total : 1) : o->max_live;
}

void spade_eval_count_writing(const spade_tokenizer *tok, const spade_transcript *t, long *tokens, long *turns,
                              long *unboxed) {
    for (int i = 0; i < t->len;) {
        if (!t->mask[i]) {
            i++;
            continue;
        }
        int start = i;
        while (i < t->len && t->mask[i]) i++;
        size_t len = 0, cap = (size_t)(i - start) * 64 + 1;
        char *text = malloc(cap);
        int boxed = 0; /* unreadable (no memory, a token outside the vocabulary): counted as unboxed */
        if (text && spade_tokenizer_decode(tok, t->tok + start, (size_t)(i - start), 0, text, cap, &len) == 0)
            boxed = strstr(text, "\\boxed{") != NULL;
        free(text);
        *tokens += i - start;
        *turns += 1;
        *unboxed += !boxed;
    }
}

/* The policy agent's on_episode: what it wrote, per environment (counts[spec]: tokens, turns, unboxed). */
typedef struct writing {
    const spade_tokenizer *tok;
    long (*counts)[3];
    int n;
} writing;

static void count_episode(void *ctx, const spade_ep_outcome *o, const spade_transcript *t) {
    writing *w = ctx;
    if (o->spec < 0 || o->spec >= w->n) return;
    long *c = w->counts[o->spec];
    spade_eval_count_writing(w->tok, t, &c[0], &c[1], &c[2]);
}

/* Plays one arm: every spec o->episodes times on seeds seed.., hint or not;
 * won (NULL, or n * episodes) gets each episode's success. */
static int arm(spade_sandbox *sb, const spade_ep_spec *specs, int n, spade_agent *agent, int hint,
               const spade_eval_opts *o, spade_eval_arm *out, size_t stride, unsigned char *won, char *err,
               size_t errlen) {
    long total = (long)n * o->episodes;
    spade_ep_request *req = malloc((size_t)total * sizeof *req);
    spade_ep_outcome *res = malloc((size_t)total * sizeof *res);
    int rc = -1;
    if (!req || !res) {
        spade_errf(err, errlen, "eval: out of memory");
        goto done;
    }
    for (long i = 0; i < total; i++)
        req[i] = (spade_ep_request){
            .spec = (int)(i / o->episodes), .seed = o->seed + (uint64_t)(i % o->episodes), .hint = hint};
    spade_episodes_opts eo;
    spade_episodes_opts_default(&eo);
    eo.max_live = live_slots(n, o);
    if (o->served ? play_served(specs, n, req, agent, o, res, err, errlen) < 0
                  : spade_episodes_play(sb, specs, n, req, total, agent, &eo, res, err, errlen) < 0)
        goto done;
    for (int e = 0; e < n; e++) {
        spade_eval_arm *a = (spade_eval_arm *)((char *)out + (size_t)e * stride);
        memset(a, 0, sizeof *a);
        double ret = 0, steps = 0;
        for (int k = 0; k < o->episodes; k++) {
            const spade_ep_outcome *r = &res[(long)e * o->episodes + k];
            a->n++;
            a->successes += r->success;
            if (won) won[(long)e * o->episodes + k] = r->success != 0;
            a->failed += r->end == SPADE_EP_FAILED;
            ret += r->ret;
            steps += r->steps;
        }
        a->success = (double)a->successes / (double)a->n;
        a->mean_return = ret / a->n;
        a->mean_steps = steps / a->n;
        spade_wilson(a->successes, a->n, 1.959964, &a->lo, &a->hi);
    }
    rc = 0;
done:
    free(req);
    free(res);
    return rc;
}

/* The policy's two arms (the hint arm when asked), with what each wrote and the hint arm's pairs. */
static int policy_arms(spade_policy *p, spade_sandbox *sb, const spade_ep_spec *specs, int n, const spade_eval_opts *o,
                       spade_eval_row *rows, char *err, size_t errlen) {
    size_t stride = sizeof *rows;
    long total = (long)n * o->episodes;
    unsigned char *won = calloc((size_t)total * 2, 1);
    long(*counts)[3] = calloc((size_t)n, sizeof *counts);
    writing w = {.tok = p ? spade_policy_tokenizer(p) : NULL, .counts = counts, .n = n};
    int rc = 0;
    if (!won || !counts) rc = (spade_errf(err, errlen, "eval: out of memory"), -1);
    spade_policy_agent_opts ao;
    spade_policy_agent_opts_default(&ao);
    ao.max_live = live_slots(n, o);
    ao.max_action_tokens = o->max_action_tokens;
    ao.reasoning_tokens = o->reasoning_tokens;
    ao.temperature = o->temperature;
    ao.seed = o->seed ^ 0x6576616cULL;
    if (w.tok) ao.on_episode = count_episode, ao.ctx = &w;
    for (int h = 0; !rc && h <= (o->hint ? 1 : 0); h++) {
        memset(counts, 0, (size_t)n * sizeof *counts);
        spade_agent *a = p ? spade_agent_policy(p, &ao, err, errlen) : o->make_agent(o->agent_ctx, err, errlen);
        if (!a) {
            rc = -1;
            break;
        }
        spade_eval_arm *out = h ? &rows[0].hint : &rows[0].policy;
        rc = arm(sb, specs, n, a, h, o, out, stride, won + (size_t)h * (size_t)total, err, errlen);
        spade_agent_free(a);
        for (int e = 0; !rc && e < n; e++) {
            spade_eval_arm *x = (spade_eval_arm *)((char *)out + (size_t)e * stride);
            x->tokens = counts[e][0], x->turns = counts[e][1], x->unboxed = counts[e][2];
        }
    }
    for (int e = 0; !rc && o->hint && e < n; e++)
        for (int k = 0; k < o->episodes; k++) {
            long i = (long)e * o->episodes + k;
            rows[e].hint_only += won[total + i] && !won[i];
            rows[e].policy_only += won[i] && !won[total + i];
        }
    free(won);
    free(counts);
    return rc;
}

int spade_eval(spade_policy *p, spade_sandbox *sb, const spade_ep_spec *specs, int n, const spade_eval_opts *o,
               spade_eval_row *rows, char *err, size_t errlen) {
    memset(rows, 0, (size_t)n * sizeof *rows);
    size_t stride = sizeof *rows;
    if ((p || o->make_agent) && policy_arms(p, sb, specs, n, o, rows, err, errlen) < 0) return -1;
    if (o->references) {
        spade_agent *r = spade_agent_random(o->seed), *s = spade_agent_solve();
        int rc = !r || !s ? (spade_errf(err, errlen, "eval: out of memory"), -1) : 0;
        if (!rc) rc = arm(sb, specs, n, r, 0, o, &rows[0].random, stride, NULL, err, errlen);
        if (!rc) rc = arm(sb, specs, n, s, 0, o, &rows[0].solve, stride, NULL, err, errlen);
        if (r) spade_agent_free(r);
        if (s) spade_agent_free(s);
        if (rc) return -1;
    }
    return 0;
}
