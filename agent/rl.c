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

int spade_rl_iteration(spade_policy *p, spade_policy *ref, spade_sandbox *sb, const spade_pool *pool, int it,
                       const spade_rl_opts *o, const volatile sig_atomic_t *stop, spade_rl_metrics *m, char *err,
                       size_t errlen) {
    memset(m, 0, sizeof *m);
    m->iteration = it;
    if (o->plays < 2) {
        spade_errf(err, errlen, "agent.plays = %d: a group needs at least 2 plays", o->plays);
        return -1;
    }
    if (!(o->temperature > 0)) { /* a greedy play is drawn from a point mass: no ratio, no gradient */
        spade_errf(err, errlen, "agent.temperature = %g: training needs sampled plays (temperature > 0)",
                   o->temperature);
        return -1;
    }
    int picked[SPADE_RL_MAX_ENVS];
    int ne = spade_rl_pick(spade_pool_count(pool), o->envs_per_iter, o->seed, it, picked);
    if (ne <= 0) {
        spade_errf(err, errlen, "the pool is empty");
        return -1;
    }
    m->envs = ne;
    long n = (long)ne * o->plays;
    spade_ep_spec specs[SPADE_RL_MAX_ENVS];
    spade_ep_request *req = calloc((size_t)n, sizeof *req);
    spade_kept_episodes c = {.tr = calloc((size_t)n, sizeof(spade_transcript)),
                             .o = calloc((size_t)n, sizeof(spade_ep_outcome)),
                             .have = calloc((size_t)n, sizeof(int)),
                             .n = n};
    spade_ep_outcome *out = calloc((size_t)n, sizeof *out);
    spade_grpo_sample *s = calloc((size_t)n, sizeof *s);
    spade_agent *agent = NULL;
    int rc = -1;
    if (!req || !c.tr || !c.o || !c.have || !out || !s) {
        spade_errf(err, errlen, "out of memory for %ld episodes", n);
        goto done;
    }
    for (int e = 0; e < ne; e++) {
        const spade_pool_entry *pe = spade_pool_entry_at(pool, picked[e]);
        m->env_index[e] = picked[e];
        const char *params = pe->params[0] ? pe->params : NULL;
        if (o->params_override && picked[e] < o->n_override && o->params_override[picked[e]])
            params = o->params_override[picked[e]];
        specs[e] = (spade_ep_spec){
            .filename = pe->path, .source = pe->source, .len = pe->len, .params = params, .expected = o->plays};
        for (int k = 0; k < o->plays; k++)
            req[(long)e * o->plays + k] = (spade_ep_request){.spec = e, .seed = spade_rl_seed(o->seed, it, e, k)};
    }
    spade_policy_agent_opts ao;
    spade_policy_agent_opts_default(&ao);
    ao.max_live = o->max_live;
    ao.max_action_tokens = o->max_action_tokens;
    ao.reasoning_tokens = o->reasoning_tokens;
    ao.temperature = o->temperature;
    ao.top_p = o->top_p;
    ao.seed = spade_mix64(o->seed ^ 0x6167656e74ULL);
    ao.on_episode = spade_keep_episode;
    ao.ctx = &c;
    if (!(agent = spade_agent_policy(p, &ao, err, errlen))) goto done;
    spade_episodes_opts eo;
    spade_episodes_opts_default(&eo);
    eo.max_live = o->max_live;
    eo.workers = o->workers;
    eo.stop = stop;
    double t0 = now_s();
    int run = spade_episodes_play(sb, specs, ne, req, n, agent, &eo, out, err, errlen);
    m->t_play = now_s() - t0;
    spade_killpoint("plays", it);
    spade_policy_agent_counts(agent, &m->sampled_tokens, &m->turns);
    if (run < 0) goto done;
    if (run == SPADE_EPISODES_STOPPED) {
        rc = 1;
        goto done;
    }
    if (c.oom) {
        spade_errf(err, errlen, "out of memory keeping transcripts");
        goto done;
    }
    double ret = 0, steps = 0;
    int ns = 0;
    for (long i = 0; i < n; i++) {
        const spade_ep_outcome *eo_ = &out[i];
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
        if (!c.have[i] || c.tr[i].len < 2) continue; /* never reached the policy */
        int trained = 0;
        for (int t = 0; t < c.tr[i].len; t++) trained += c.tr[i].mask[t];
        if (!trained) continue;
        spade_grpo_sample *g = &s[ns++];
        g->tokens = c.tr[i].tok;
        g->len = c.tr[i].len;
        g->mask = c.tr[i].mask;
        g->old_logprobs = c.tr[i].logp;
        g->reward = (float)(eo_->ret > 1 ? 1 : eo_->ret < -1 ? -1 : eo_->ret);
        g->group = e;
        g->role = 1;
        g->temperature = o->temperature, g->top_p = o->top_p; /* its old log-probs' distribution */
    }
    m->success_rate = (double)m->successes / (double)m->episodes;
    m->mean_return = ret / (double)m->episodes;
    m->mean_steps = steps / (double)m->episodes;
    spade_grpo_opts go = o->grpo;
    go.adv_mode = o->zscore ? SPADE_GRPO_ADV_GROUP_Z : SPADE_GRPO_ADV_GROUP_MEAN;
    spade_grpo_stats st;
    memset(&st, 0, sizeof st);
    double t1 = now_s();
    if (ns > 0) {
        int up = spade_grpo_update(p, ref, s, ns, &go, &o->adamw, &st, err, errlen);
        if (up < 0) goto done;
    }
    m->t_update = now_s() - t1;
    spade_killpoint("update", it);
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
    rc = 0;
done:
    if (agent) spade_agent_free(agent);
    for (long i = 0; c.tr && i < n; i++) spade_transcript_free(&c.tr[i]);
    free(c.tr);
    free(c.o);
    free(c.have);
    free(req);
    free(out);
    free(s);
    return rc;
}
