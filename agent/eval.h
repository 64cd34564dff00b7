/* eval.h — evaluating a policy on a suite of environments: success per
 * environment with a Wilson 95% interval, mean return and steps, the hint
 * arm beside it when asked, and the random and SOLVE agents on the same
 * seeds as floor and ceiling.
 *
 * What it is: the measurement behind `spade eval` and `spade train`'s
 * periodic evaluation on the held-out suite. Every arm plays the same seeds
 * (seed, seed + 1, ...), so the columns are paired.
 * What it is not: a statistic over environments (a suite's mean is reported
 * with each environment's own interval; environments differ too much for one
 * pooled interval to mean much).
 */
#ifndef SPADE_AGENT_EVAL_H
#define SPADE_AGENT_EVAL_H

#include <stdint.h>

#include "episodes.h"
#include "policy/policy.h"
#include "sandbox/sandbox.h"
#include "agent/transcript.h"

/* The Wilson score interval of k successes in n trials at normal quantile z
 * (1.959964 for 95%): lo and hi in [0, 1]. n = 0 gives [0, 1]. */
void spade_wilson(long k, long n, double z, double *lo, double *hi);

typedef struct spade_eval_arm {
    long n, successes, failed;
    double success, lo, hi; /* rate and its Wilson 95% interval */
    double mean_return, mean_steps;
    /* a policy arm's writing (0 for random/SOLVE): tokens it sampled (each
     * turn's end-of-turn token included), its turns, and the turns with no
     * \boxed{ in them (with a reasoning budget: answers the budget cut, or
     * never boxed, which the environment then reads whole) */
    long tokens, turns, unboxed;
} spade_eval_arm;

typedef struct spade_eval_row {
    spade_eval_arm policy, hint, random, solve; /* hint/random/solve: n = 0 when not played */
    /* the hint arm's pairs: seeds won with the hint only, and without it only
     * (hint.successes - policy.successes = hint_only - policy_only) */
    long hint_only, policy_only;
} spade_eval_row;

typedef struct spade_eval_opts {
    int episodes; /* per environment and arm (32) */
    uint64_t seed; /* first reset seed (0) */
    int hint; /* also play the hint arm */
    int references; /* also play random and SOLVE (1) */
    int max_live; /* 32 */
    int max_action_tokens; /* 32 */
    int reasoning_tokens; /* 0: tokens the policy may write before its answer (policy_agent.h) */
    float temperature; /* 1.0: the policy as it samples in training; 0: greedy */
    /* non-NULL with p NULL: the policy arms' agent comes from here, one per arm
     * (a served model, agent/remote_agent.h) */
    spade_agent *(*make_agent)(void *ctx, char *err, size_t errlen);
    void *agent_ctx;
    /* non-NULL: every arm plays on these running servers (core/served_episodes.h:
     * servers, token, workers, retries; its max_live and callbacks are set
     * here), one environment after another, instead of the sandbox */
    const struct spade_served_opts *served;
} spade_eval_opts;
void spade_eval_opts_default(spade_eval_opts *o);

/* What a policy wrote in transcript t: its sampled tokens, its turns (runs
 * of sampled tokens) and the turns whose text has no "\boxed{", added to
 * *tokens, *turns and *unboxed. */
void spade_eval_count_writing(const spade_tokenizer *tok, const spade_transcript *t, long *tokens, long *turns,
                              long *unboxed);

/* Evaluates p (NULL: only the reference arms) on specs[0..n) into rows[0..n). */
int spade_eval(spade_policy *p, spade_sandbox *sb, const spade_ep_spec *specs, int n, const spade_eval_opts *o,
               spade_eval_row *rows, char *err, size_t errlen);

#endif /* SPADE_AGENT_EVAL_H */
