/* rl.h — one iteration of agent RL on a fixed pool: pick environments, play
 * each `plays` times on distinct seeds with the policy, turn the episodes into
 * masked GRPO samples (the action tokens), one update.
 *
 * What it is: the agent half of self-play, usable alone (the paper's fixed
 * environment pool baseline; `spade train` with [designer] enabled = false).
 * Everything an iteration draws (which environments, which seeds, the
 * policy's samples) depends only on the run seed, the iteration number and
 * the policy's weights, so a run resumed from the checkpoint of iteration k
 * replays iteration k+1 exactly as an uninterrupted run would.
 * Group = the plays of one environment in one iteration; advantage = the
 * z-score of the returns within the group (the reference's actor) or the
 * deviation from the group mean (zscore = 0); groups whose returns are all
 * equal are dropped (no signal). An episode the sandbox failed is not the
 * agent's doing: it is counted and left out of the update. An episode that
 * outgrew the context is counted (context_full) and trained on as it ended.
 * What it is not: the designer or the regret measurement (designer/), nor the
 * run directory, config and resume (cli/cmd_train.c).
 */
#ifndef SPADE_AGENT_RL_H
#define SPADE_AGENT_RL_H

#include <signal.h>
#include <stdint.h>

#include "agent/pool.h"
#include "policy/policy.h"
#include "sandbox/sandbox.h"

typedef struct spade_rl_opts {
    int envs_per_iter; /* agent.envs: environments per iteration (8; the whole pool when smaller) */
    int plays; /* agent.plays: episodes of each (8) */
    int max_live; /* episodes live at once = decoding slots (32) */
    int max_action_tokens; /* agent.max_action_tokens (32) */
    int reasoning_tokens; /* agent.reasoning_tokens (0): tokens before the answer (policy_agent.h) */
    float temperature, top_p; /* 1.0, 1.0 */
    int zscore; /* 1: z-score within the group; 0: mean only (1) */
    int workers; /* sandbox workers per environment (1) */
    uint64_t seed;
    spade_grpo_opts grpo; /* adv_mode is set from zscore */
    /* per pool entry (index), params that replace the entry's own for this
     * iteration (a curriculum's level), or NULL; the array may be NULL */
    const char *const *params_override;
    int n_override;
    spade_adamw_opts adamw;
} spade_rl_opts;
void spade_rl_opts_default(spade_rl_opts *o);

#define SPADE_RL_MAX_ENVS 64

typedef struct spade_rl_metrics {
    int iteration;
    int envs;
    long episodes, successes, failed, context_full, truncated;
    double success_rate, mean_return, mean_steps;
    int env_index[SPADE_RL_MAX_ENVS]; /* pool entries played */
    double env_success[SPADE_RL_MAX_ENVS];
    int n_samples, n_groups, n_dropped;
    long trained_tokens, sampled_tokens, turns;
    float loss, grad_norm, clip_frac, kl, mean_ratio;
    int updated; /* an optimiser step was taken */
    double t_play, t_update; /* seconds: rollouts (model + environments), the update */
} spade_rl_metrics;

/* One iteration. ref may be NULL (beta = 0). stop (may be NULL) ends the
 * plays early: then nothing is updated and 1 is returned. 0 done, -1 error. */
int spade_rl_iteration(spade_policy *p, spade_policy *ref, spade_sandbox *sb, const spade_pool *pool, int it,
                       const spade_rl_opts *o, const volatile sig_atomic_t *stop, spade_rl_metrics *m, char *err,
                       size_t errlen);

/* The pool entries iteration it plays: min(envs_per_iter, pool size) distinct
 * indices into out (a seeded partial shuffle); returns how many. */
int spade_rl_pick(int pool_size, int envs_per_iter, uint64_t seed, int it, int *out);
/* The reset seed of play k of slot e at iteration it. */
uint64_t spade_rl_seed(uint64_t seed, int it, int e, int k);

#endif /* SPADE_AGENT_RL_H */
