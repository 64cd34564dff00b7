/* policy_agent.h — the policy as an agent of the episode layer: every live
 * episode is a slot of the policy's decoding batch, whose KV cache persists
 * across the episode's turns; the actions of all live episodes are sampled
 * together; an episode that outgrows the context ends as agent_stop
 * "context_full" (the caller counts it as truncated).
 *
 * What it is: the agent role's player. Each turn it appends what the episode
 * said since the last action (transcript.h's format) to the episode's slot in
 * one batched prefill, samples every live slot's action in one batched
 * decode, and records the sampled tokens with their log-probs in the
 * episode's transcript; when the episode ends, on_episode gets the
 * transcript and the outcome (the trainer turns them into masked GRPO
 * samples). Sampling is seeded per (agent seed, request seed and repeat,
 * step), the same in both arms of a paired play (common random numbers), so
 * an episode plays the same whatever the batch it shared.
 * What it is not: a trainer, nor a policy owner: the policy is borrowed and
 * must outlive the agent; after an optimiser step, make a new agent (its
 * slots' caches hold keys and values of the old weights).
 */
#ifndef SPADE_AGENT_POLICY_AGENT_H
#define SPADE_AGENT_POLICY_AGENT_H

#include <stdint.h>

#include "agent/transcript.h"
#include "episodes.h"
#include "policy/policy.h"

typedef struct spade_policy_agent_opts {
    int max_live; /* decoding slots: at least the episode layer's max_live (32) */
    int max_action_tokens; /* agent.max_action_tokens: tokens per action (48) */
    /* agent.reasoning_tokens (0): tokens the agent may write before its
     * answer, on top of max_action_tokens. With a budget, the environment
     * gets the answer: the last \boxed{...} (or <answer>...</answer>) of what
     * the agent wrote, else all of it; the transcript keeps, and trains, every
     * token it wrote. A chat model's system line states the budget. */
    int reasoning_tokens;
    float temperature; /* 1.0 */
    float top_p; /* 1.0 */
    uint64_t seed; /* 0 */
    /* 0 (default): both arms of a paired play draw the same stream for a
     * (seed, repeat), common random numbers; 1: the hint arm draws its own
     * (what it did before; kept to measure what the common stream buys,
     * bench/bench_crn.c). */
    int arm_streams;
    /* Each finished episode: its outcome and transcript (valid during the call). May be NULL. */
    void (*on_episode)(void *ctx, const spade_ep_outcome *o, const spade_transcript *t);
    void *ctx;
    /* May be NULL: wall seconds the agent spent reading observations into its
     * decoder (prefill) and sampling its actions (decoding) are added here, so
     * a caller can split its plays' time (selfplay's "time_s"). */
    double *t_prefill, *t_decode;
} spade_policy_agent_opts;
void spade_policy_agent_opts_default(spade_policy_agent_opts *o);

/* A heap agent (free with spade_agent_free), or NULL with err. */
spade_agent *spade_agent_policy(spade_policy *p, const spade_policy_agent_opts *o, char *err, size_t errlen);

/* Tokens the agent sampled and turns it took since it was made (for throughput figures). */
void spade_policy_agent_counts(const spade_agent *a, long *sampled_tokens, long *turns);

#endif /* SPADE_AGENT_POLICY_AGENT_H */
