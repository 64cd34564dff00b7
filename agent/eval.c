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

/* Plays one arm: every spec o->episodes times on seeds seed.., hint or not. */
static int arm(spade_sandbox *sb, const spade_ep_spec *specs, int n, spade_agent *agent, int hint,
               const spade_eval_opts *o, spade_eval_arm *out, size_t stride, char *err, size_t errlen) {
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

int spade_eval(spade_policy *p, spade_sandbox *sb, const spade_ep_spec *specs, int n, const spade_eval_opts *o,
               spade_eval_row *rows, char *err, size_t errlen) {
    memset(rows, 0, (size_t)n * sizeof *rows);
    size_t stride = sizeof *rows;
    if (p || o->make_agent) {
        spade_policy_agent_opts ao;
        spade_policy_agent_opts_default(&ao);
        ao.max_live = live_slots(n, o);
        ao.max_action_tokens = o->max_action_tokens;
        ao.reasoning_tokens = o->reasoning_tokens;
        ao.temperature = o->temperature;
        ao.seed = o->seed ^ 0x6576616cULL;
        for (int h = 0; h <= (o->hint ? 1 : 0); h++) {
            spade_agent *a = p ? spade_agent_policy(p, &ao, err, errlen) : o->make_agent(o->agent_ctx, err, errlen);
            if (!a) return -1;
            int rc = arm(sb, specs, n, a, h, o, h ? &rows[0].hint : &rows[0].policy, stride, err, errlen);
            spade_agent_free(a);
            if (rc < 0) return -1;
        }
    }
    if (o->references) {
        spade_agent *r = spade_agent_random(o->seed), *s = spade_agent_solve();
        int rc = !r || !s ? (spade_errf(err, errlen, "eval: out of memory"), -1) : 0;
        if (!rc) rc = arm(sb, specs, n, r, 0, o, &rows[0].random, stride, err, errlen);
        if (!rc) rc = arm(sb, specs, n, s, 0, o, &rows[0].solve, stride, err, errlen);
        if (r) spade_agent_free(r);
        if (s) spade_agent_free(s);
        if (rc) return -1;
    }
    return 0;
}
