/* rl.c — fixed-pool agent RL, one iteration (rl.h).
 *
 * What it is not: a scheduler of model and environment work: the episode
 * layer steps the environments, the policy agent batches the model.
 */
#include "agent/rl.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "agent/policy_agent.h"
#include "agent/transcript.h"
#include "episodes.h"
#include "errbuf.h"
#include "killpoint.h"
#include "rng.h"

void spade_rl_opts_default(spade_rl_opts *o) {
    memset(o, 0, sizeof *o);
    o->envs_per_iter = 8;
    o->plays = 8;
    o->max_live = 32;
    o->max_action_tokens = 32;
    o->temperature = 1.0f;
    o->top_p = 1.0f;
    o->zscore = 1;
    o->workers = 1;
    o->seed = 1;
    spade_grpo_opts_default(&o->grpo);
    spade_adamw_opts_default(&o->adamw);
    o->adamw.lr = 1e-4f;
}

int spade_rl_pick(int pool_size, int envs_per_iter, uint64_t seed, int it, int *out) {
    int n = envs_per_iter < pool_size ? envs_per_iter : pool_size;
    if (n > SPADE_RL_MAX_ENVS) n = SPADE_RL_MAX_ENVS;
    int *all = malloc((size_t)pool_size * sizeof *all);
    if (!all) return 0;
    for (int i = 0; i < pool_size; i++) all[i] = i;
    uint64_t r = spade_mix64(seed ^ spade_mix64(0x706f6f6cULL + (uint64_t)it));
    for (int k = 0; k < n; k++) {
        r = spade_mix64(r);
        int j = k + (int)(r % (uint64_t)(pool_size - k));
        int t = all[k];
        all[k] = all[j];
        all[j] = t;
        out[k] = all[k];
    }
    free(all);
    return n;
}

uint64_t spade_rl_seed(uint64_t seed, int it, int e, int k) {
    return spade_mix64(seed ^ spade_mix64(((uint64_t)it << 40) ^ ((uint64_t)e << 20) ^ (uint64_t)k));
}

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* One iteration's state, phase to phase: the environments picked, their
 * episodes' requests, what the plays kept, and the samples for GRPO. */
typedef struct rl_iter {
    spade_policy *p, *ref;
    spade_sandbox *sb;
    const spade_pool *pool;
    int it;
    const spade_rl_opts *o;
    const volatile sig_atomic_t *stop;
    spade_rl_metrics *m;
    int picked[SPADE_RL_MAX_ENVS], ne;
    long n; /* episodes: ne * plays */
    spade_ep_spec specs[SPADE_RL_MAX_ENVS];
    spade_ep_request *req; /* [n] */
    spade_kept_episodes c; /* [n] the transcripts, by episode */
    spade_ep_outcome *out; /* [n] */
    spade_grpo_sample *s; /* [n] of which ns are filled */
    int ns;
    spade_agent *agent;
} rl_iter;

/* Refuses what cannot train (too few plays, greedy plays, an empty pool),
 * picks the iteration's environments and makes room for their episodes. */
static int rl_begin(rl_iter *x, char *err, size_t errlen) {
    const spade_rl_opts *o = x->o;
    memset(x->m, 0, sizeof *x->m);
    x->m->iteration = x->it;
    if (o->plays < 2) {
        spade_errf(err, errlen, "agent.plays = %d: a group needs at least 2 plays", o->plays);
        return -1;
    }
    if (!(o->temperature > 0)) { /* a greedy play is drawn from a point mass: no ratio, no gradient */
        spade_errf(err, errlen, "agent.temperature = %g: training needs sampled plays (temperature > 0)",
                   o->temperature);
        return -1;
    }
    x->ne = spade_rl_pick(spade_pool_count(x->pool), o->envs_per_iter, o->seed, x->it, x->picked);
    if (x->ne <= 0) {
        spade_errf(err, errlen, "the pool is empty");
        return -1;
    }
    x->m->envs = x->ne;
    long n = x->n = (long)x->ne * o->plays;
    x->req = calloc((size_t)n, sizeof *x->req);
    x->c = (spade_kept_episodes){.tr = calloc((size_t)n, sizeof(spade_transcript)),
                                 .o = calloc((size_t)n, sizeof(spade_ep_outcome)),
                                 .have = calloc((size_t)n, sizeof(int)),
                                 .n = n};
    x->out = calloc((size_t)n, sizeof *x->out);
    x->s = calloc((size_t)n, sizeof *x->s);
    if (!x->req || !x->c.tr || !x->c.o || !x->c.have || !x->out || !x->s) {
        spade_errf(err, errlen, "out of memory for %ld episodes", n);
        return -1;
    }
    return 0;
}

/* Each picked environment (at its pool params, or the curriculum's) on
 * agent.plays seeds of its own. */
static void rl_requests(rl_iter *x) {
    const spade_rl_opts *o = x->o;
    for (int e = 0; e < x->ne; e++) {
        const spade_pool_entry *pe = spade_pool_entry_at(x->pool, x->picked[e]);
        x->m->env_index[e] = x->picked[e];
        const char *params = pe->params[0] ? pe->params : NULL;
        if (o->params_override && x->picked[e] < o->n_override && o->params_override[x->picked[e]])
            params = o->params_override[x->picked[e]];
        x->specs[e] = (spade_ep_spec){
            .filename = pe->path, .source = pe->source, .len = pe->len, .params = params, .expected = o->plays};
        for (int k = 0; k < o->plays; k++)
            x->req[(long)e * o->plays + k] = (spade_ep_request){.spec = e, .seed = spade_rl_seed(o->seed, x->it, e, k)};
    }
}

/* The plays: one policy agent over every episode, its transcripts kept for
 * the update. 0, 1 stopped, or -1 (err). */
static int rl_play(rl_iter *x, char *err, size_t errlen) {
    const spade_rl_opts *o = x->o;
    spade_policy_agent_opts ao;
    spade_policy_agent_opts_default(&ao);
    ao.max_live = o->max_live;
    ao.max_action_tokens = o->max_action_tokens;
    ao.reasoning_tokens = o->reasoning_tokens;
    ao.temperature = o->temperature;
    ao.top_p = o->top_p;
    ao.seed = spade_mix64(o->seed ^ 0x6167656e74ULL);
    ao.on_episode = spade_keep_episode;
    ao.ctx = &x->c;
    if (!(x->agent = spade_agent_policy(x->p, &ao, err, errlen))) return -1;
    spade_episodes_opts eo;
    spade_episodes_opts_default(&eo);
    eo.max_live = o->max_live;
    eo.workers = o->workers;
    eo.stop = x->stop;
    double t0 = now_s();
    int run = spade_episodes_play(x->sb, x->specs, x->ne, x->req, x->n, x->agent, &eo, x->out, err, errlen);
    x->m->t_play = now_s() - t0;
    spade_killpoint("plays", x->it);
    spade_policy_agent_counts(x->agent, &x->m->sampled_tokens, &x->m->turns);
    if (run < 0) return -1;
    if (run == SPADE_EPISODES_STOPPED) return 1;
    if (x->c.oom) return spade_errf(err, errlen, "out of memory keeping transcripts"), -1;
    return 0;
}

/* The outcomes into the metrics, and every play that reached the policy
 * and trained a token into a sample of its environment's group (its
 * return clamped to [-1, 1]; failed episodes are counted, not trained). */
static void rl_samples(rl_iter *x) {
    const spade_rl_opts *o = x->o;
    spade_rl_metrics *m = x->m;
    double ret = 0, steps = 0;
    for (long i = 0; i < x->n; i++) {
        const spade_ep_outcome *eo_ = &x->out[i];
        const spade_transcript *tr = &x->c.tr[i];
        int e = (int)(i / o->plays);
        m->episodes++;
        m->successes += eo_->success;
        m->env_success[e] += eo_->success / (double)o->plays;
        ret += eo_->ret;
        steps += eo_->steps;
        if (eo_->end == SPADE_EP_FAILED) {
            m->failed++;
            continue;
        }
        if (eo_->end == SPADE_EP_TRUNCATED) m->truncated++;
        if (eo_->end == SPADE_EP_AGENT_STOP && !strcmp(eo_->stop_reason, "context_full")) m->context_full++;
        if (!x->c.have[i] || tr->len < 2) continue; /* never reached the policy */
        int trained = 0;
        for (int t = 0; t < tr->len; t++) trained += tr->mask[t];
        if (!trained) continue;
        x->s[x->ns++] = (spade_grpo_sample){
            .tokens = tr->tok,
            .len = tr->len,
            .mask = tr->mask,
            .old_logprobs = tr->logp,
            .reward = (float)(eo_->ret > 1    ? 1
                              : eo_->ret < -1 ? -1
                                              : eo_->ret),
            .group = e,
            .role = 1,
            .temperature = o->temperature, /* its old log-probs' distribution */
            .top_p = o->top_p,
        };
    }
    m->success_rate = (double)m->successes / (double)m->episodes;
    m->mean_return = ret / (double)m->episodes;
    m->mean_steps = steps / (double)m->episodes;
}

/* One GRPO update on the samples (advantages z-scored, or centred, within
 * each environment's group), and its statistics into the metrics. */
static int rl_update(rl_iter *x, char *err, size_t errlen) {
    const spade_rl_opts *o = x->o;
    spade_rl_metrics *m = x->m;
    spade_grpo_opts go = o->grpo;
    go.adv_mode = o->zscore ? SPADE_GRPO_ADV_GROUP_Z : SPADE_GRPO_ADV_GROUP_MEAN;
    spade_grpo_stats st;
    memset(&st, 0, sizeof st);
    double t1 = now_s();
    if (x->ns > 0 && spade_grpo_update(x->p, x->ref, x->s, x->ns, &go, &o->adamw, &st, err, errlen) < 0) return -1;
    m->t_update = now_s() - t1;
    spade_killpoint("update", x->it);
    m->n_samples = st.n_samples;
    m->n_groups = st.n_groups;
    m->n_dropped = st.n_dropped_groups;
    m->trained_tokens = st.n_tokens;
    m->loss = st.loss;
    m->grad_norm = st.grad_norm;
    m->clip_frac = st.clip_frac;
    m->kl = st.kl;
    m->mean_ratio = st.mean_ratio;
    m->updated = st.n_steps > 0;
    return 0;
}

static void rl_end(rl_iter *x) {
    if (x->agent) spade_agent_free(x->agent);
    for (long i = 0; x->c.tr && i < x->n; i++) spade_transcript_free(&x->c.tr[i]);
    free(x->c.tr);
    free(x->c.o);
    free(x->c.have);
    free(x->req);
    free(x->out);
    free(x->s);
}

int spade_rl_iteration(spade_policy *p, spade_policy *ref, spade_sandbox *sb, const spade_pool *pool, int it,
                       const spade_rl_opts *o, const volatile sig_atomic_t *stop, spade_rl_metrics *m, char *err,
                       size_t errlen) {
    rl_iter x = {.p = p, .ref = ref, .sb = sb, .pool = pool, .it = it, .o = o, .stop = stop, .m = m};
    /* the phases in order: each hands the next what it made in x */
    int rc = rl_begin(&x, err, errlen);
    if (rc == 0) {
        rl_requests(&x);
        rc = rl_play(&x, err, errlen);
    }
    if (rc == 0) {
        rl_samples(&x);
        rc = rl_update(&x, err, errlen);
    }
    rl_end(&x);
    return rc;
}
