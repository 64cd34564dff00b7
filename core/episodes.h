/* episodes.h — the one episode layer: plays a list (or a stream) of episode
 * requests through sandboxed vector envs with an agent, and reports each
 * episode's outcome, in episode order.
 *
 * What it is: everything that plays episodes (spade run, the checker, the
 * agent's rollouts, the designer's gates) goes through spade_episodes_run. A
 * request names an environment (source + params), a seed and whether the hint
 * is appended to the first observation. Up to max_live episodes are live at
 * once; each round the agent gets every live episode's latest observation (one
 * call, in episode order) and answers with one action each, then the live
 * episodes step together (one batch per worker) and finished ones are refilled
 * from the queue. An agent is a struct of function pointers and a context
 * (spade_agent below): the policy (agent/) makes each live episode a slot of its
 * decoding batch; core/agents.h has random, solve, stdin and scripted agents.
 *
 * Outcomes: terminated, truncated (max_steps), agent_stop (the agent ended the
 * episode, e.g. "context_full"), failed (the sandbox failed in THIS episode:
 * crash, timeout, ... with the class and message; never an abort of the run).
 * When a worker dies, the episodes it held are played again from their seeds
 * and recorded actions in a new worker (the agent is not asked again), each
 * alone, so the episode that fails alone is the one blamed and the others go
 * on. An environment that does not compile fails each of its requests. The
 * actions kept for a replay are bounded (SPADE_EP_REPLAY_MAX bytes an
 * episode); an episode past that which loses its worker fails with it.
 *
 * Deterministic: an episode depends only on its request and the agent's
 * answers to its own observations, never on max_live, the number of workers
 * or which episodes shared a batch (tests/test_episodes.c).
 * What it is not: a trainer (no rewards shaping, no batching of model calls:
 * the agent does that), nor a transcript renderer (the agent's).
 */
#ifndef SPADE_EPISODES_H
#define SPADE_EPISODES_H

#include <signal.h>
#include <stddef.h>
#include <stdint.h>

#include "sandbox/sandbox.h"

/* Bytes of actions (and 8 per step) an episode keeps for a replay. */
#define SPADE_EP_REPLAY_MAX (8 * 1024 * 1024)

/* One environment the requests may name: source and params ("k=v,..." or
 * NULL). Different params are different specs (a vector env shares them). */
typedef struct spade_ep_spec {
    const char *filename; /* for messages */
    const char *source;
    size_t len;
    const char *params;
    /* requests of this spec expected in the run (0: unknown): its vector env
     * gets min(max_live, expected) instances instead of max_live */
    long expected;
} spade_ep_spec;

/* Where a spec plays when the caller brings the vector env (episodes opts
 * `places`): envs [first, first + count) of vec, one episode at a time each.
 * The caller made vec (auto-reset disabled) from the spec's source and params
 * (spade_vecenv_add_block for several settings of one source); the run only
 * resets and steps those envs, and revives vec when a worker dies. Specs
 * placed on the same vector share its batches. vec outlives the run, so
 * several runs reuse one spawn and compile per worker (the designer's gates). */
typedef struct spade_ep_place {
    spade_vecenv *vec;
    int first, count;
} spade_ep_place;

typedef struct spade_ep_request {
    int spec; /* index into the run's specs */
    uint64_t seed; /* the environment's reset seed */
    int hint; /* append the hint to the first observation (the hint arm) */
    /* which play of this seed (0, 1, ...): the same seed played again, e.g.
     * selfplay.repeats; a sampling agent draws another stream for it */
    int repeat;
} spade_ep_request;

typedef enum spade_ep_end {
    SPADE_EP_TERMINATED = 0, /* the environment finished the task */
    SPADE_EP_TRUNCATED, /* max_steps reached */
    SPADE_EP_AGENT_STOP, /* the agent ended it (stop reason in the outcome) */
    SPADE_EP_FAILED, /* the sandbox failed in this episode (failure in the outcome) */
    SPADE_EP_STOPPED, /* the run stopped (signal, agent out of input) before it ended */
} spade_ep_end;

/* "terminated", "truncated", "agent_stop", "failed", "stopped" */
const char *spade_ep_end_name(spade_ep_end e);

/* The call of a failed episode that failed (a checker says "step 3: crash",
 * not just "crash"). */
typedef enum spade_ep_op {
    SPADE_EP_OP_NONE = 0, /* not failed */
    SPADE_EP_OP_LOAD, /* the worker could not be (re)started: compile, spawn */
    SPADE_EP_OP_RESET,
    SPADE_EP_OP_STEP,
    SPADE_EP_OP_HINT,
    SPADE_EP_OP_SOLVE,
} spade_ep_op;

/* "none", "load", "reset", "step", "hint", "solve" */
const char *spade_ep_op_name(spade_ep_op op);

typedef struct spade_ep_outcome {
    long episode; /* index of the request in the run (0, 1, ...) */
    int spec;
    uint64_t seed;
    int hint;
    spade_ep_end end;
    double ret; /* return (so far, for agent_stop, failed and stopped) */
    int success; /* ret >= the environment's .success; 0 when failed or stopped */
    int steps; /* steps taken (a failed step is not counted) */
    char stop_reason[32]; /* agent_stop: the agent's reason ("context_full", "script_end", ...) */
    spade_failure failure; /* failed: class (failure.outcome) and message */
    /* failed: the call that failed; a step's is step steps + 1 (a replay
     * that fails names the call of the replay that failed) */
    spade_ep_op failed_in;
} spade_ep_outcome;

/* What the agent sees of one live episode. Pointers are valid until the
 * agent's call returns. */
typedef struct spade_ep_view {
    long episode;
    int spec;
    uint64_t seed;
    int repeat; /* the request's repeat */
    int step; /* steps taken so far: 0 at the first observation */
    const char *obs; /* the latest observation (hint appended at step 0 of a hint episode) */
    size_t obs_len;
    /* the hint at reset, when the request is a hint episode or the agent
     * wants it (SPADE_AGENT_WANTS_HINT); else NULL */
    const char *hint;
    size_t hint_len;
    /* SOLVE's action for the current state when the agent wants it
     * (SPADE_AGENT_WANTS_SOLVE and the environment has SOLVE); else NULL */
    const char *solve;
    size_t solve_len;
    double reward, ret; /* last step's reward and the return so far */
    const spade_env_info *info;
    void *state; /* what the agent's begin stored for this episode */
} spade_ep_view;

/* The agent's answer for one view: an action (bytes of the agent's, valid
 * until its next act call; NULL with len 0 is the empty action), or stop
 * (non-NULL: end this episode now as agent_stop with that reason). */
typedef struct spade_ep_act {
    const char *text;
    size_t len;
    const char *stop;
} spade_ep_act;

enum {
    SPADE_AGENT_WANTS_HINT = 1, /* fetch the hint at reset for every episode */
    SPADE_AGENT_WANTS_SOLVE = 2, /* fetch SOLVE's action before every step */
};

typedef struct spade_agent {
    const char *name;
    unsigned wants; /* SPADE_AGENT_WANTS_* */
    void *ctx;
    /* An episode starts (its first observation is in v). May store a
     * per-episode pointer in *state (handed back in every view and to end).
     * -1 stops the run with err. NULL: nothing to do. */
    int (*begin)(void *ctx, const spade_ep_view *v, void **state, char *err, size_t errlen);
    /* One action for each of views[0..n) (in episode order) into acts[0..n).
     * Returns 0, or 1 when the agent has no more actions (stdin ended: the
     * run stops), or -1 on an error (the run stops with err). */
    int (*act)(void *ctx, int n, const spade_ep_view *views, spade_ep_act *acts, char *err, size_t errlen);
    /* The episode ended (any way, after its begin); free what begin stored.
     * NULL: nothing to do. */
    void (*end)(void *ctx, const spade_ep_view *v, void *state, const spade_ep_outcome *o);
    /* Frees ctx (spade_agent_free calls it); NULL when nothing to free. */
    void (*free)(void *ctx);
} spade_agent;

/* Frees a heap agent from core/agents.h (calls a->free(a->ctx), then a). */
void spade_agent_free(spade_agent *a);

/* Something happened in a live episode (for --show, transcripts, logs). */
typedef enum spade_ep_event_kind {
    SPADE_EV_OBS = 0, /* an observation: the first (step 0) or after a step */
    SPADE_EV_ACTION, /* the agent's action, before it is played */
} spade_ep_event_kind;

typedef struct spade_ep_event {
    spade_ep_event_kind kind;
    long episode;
    int step; /* OBS: steps taken; ACTION: the step it will be (1, 2, ...) */
    const char *text;
    size_t len;
    double reward; /* OBS after a step: its reward */
} spade_ep_event;

typedef struct spade_episodes_opts {
    int max_live; /* episodes live at once: the agent's batch (default 32) */
    int workers; /* worker processes per spec (default 1) */
    /* non-zero: the workers' fresh memory is poisoned by this seed
     * (spade_vecenv_new_poisoned); two runs with different poisons see
     * different garbage in uninitialised memory (default 0: off) */
    uint64_t poison;
    /* checked between round trips: non-zero stops the run (live episodes end
     * as stopped); may be NULL */
    const volatile sig_atomic_t *stop;
    /* non-zero: the first episode blamed for a timeout stops the run (the
     * live episodes end as stopped), so a hanging environment costs two
     * deadlines (the batch's, then the replay that finds it), not one per
     * episode; the checker's "one timeout stops the check" (default 0) */
    int stop_on_timeout;
    /* each outcome, in episode order (held until the episodes before it ended) */
    void (*on_outcome)(void *ctx, const spade_ep_outcome *o);
    void (*on_event)(void *ctx, const spade_ep_event *e); /* may be NULL */
    void *ctx;
    /* NULL, or one entry per spec: a non-NULL hints[s] (hint_lens[s] bytes)
     * is the hint of every episode of spec s (appended for the hint arm, and
     * the view's hint for a SPADE_AGENT_WANTS_HINT agent) in place of the
     * environment's HINT, which is then not called: the self-play designer's
     * self-written hint (designer.hint = self, docs/selfplay.md) */
    const char *const *hints;
    const size_t *hint_lens;
    /* [n_specs] or NULL: where each spec plays (a NULL vec: a vector env of
     * the run's own, made from the spec and freed at the end) */
    const spade_ep_place *places;
    /* [n_wants] or NULL: what episode i wants (SPADE_AGENT_WANTS_*) instead of
     * the agent's `wants` (an agent that plays episodes differently, SOLVE in
     * some only, then fetches nothing for the others); later episodes get
     * the agent's */
    const unsigned char *wants;
    long n_wants;
} spade_episodes_opts;

void spade_episodes_opts_default(spade_episodes_opts *o);

/* Where the requests come from: next fills *req and returns 1, or returns 0
 * when there are no more. */
typedef int (*spade_ep_next_fn)(void *ctx, spade_ep_request *req);

/* How a run ended. */
enum {
    SPADE_EPISODES_DONE = 0, /* every request played */
    SPADE_EPISODES_STOPPED = 1, /* opts.stop was set */
    SPADE_EPISODES_AGENT_END = 2, /* the agent had no more actions */
};

/* Plays every request from next through the agent. Returns a SPADE_EPISODES_*
 * value, or -1 (with err) when the run itself could not go on: out of memory,
 * the agent's error, a bad request, an internal error of the sandbox. Every
 * episode started has its outcome delivered before it returns. */
int spade_episodes_run(spade_sandbox *sb, const spade_ep_spec *specs, int n_specs, spade_ep_next_fn next,
                       void *next_ctx, spade_agent *agent, const spade_episodes_opts *opts, char *err, size_t errlen);

/* The simple form: plays reqs[0..n) and writes out[0..n) (outcome i is
 * request i). opts may be NULL (defaults); its on_outcome is called too. */
int spade_episodes_play(spade_sandbox *sb, const spade_ep_spec *specs, int n_specs, const spade_ep_request *reqs,
                        long n, spade_agent *agent, const spade_episodes_opts *opts, spade_ep_outcome *out, char *err,
                        size_t errlen);

/* The first observation of a hint episode: obs, a newline if obs does not end
 * with one, "Hint: ", the hint. Into buf (cap bytes, NUL-terminated,
 * truncated to fit); returns the length it would have. */
size_t spade_ep_with_hint(const char *obs, size_t obs_len, const char *hint, size_t hint_len, char *buf, size_t cap);

/* How much of v's observation the environment wrote: at step 0 of a hint
 * episode, the length before the "Hint: HINT" that spade_ep_with_hint
 * appended (a transcript gives the hint its own token instead); else all. */
size_t spade_ep_obs_len_without_hint(const spade_ep_view *v);

#endif /* SPADE_EPISODES_H */
