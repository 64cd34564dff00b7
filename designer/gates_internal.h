/* gates_internal.h — what the files of the validation gates (designer/gates*.c) share.
 *
 * What it is: the gates' one context (gctx), the one run that plays several
 * gates' episodes on the shared vector env (gplay, over the mux agent of
 * gates_play.c), the traces the determinism and novelty gates compare, the
 * budgets the gates play, and each file's entry points: gates.c the runner
 * (compile, limits, the order and go_on), gates_play.c the shared run,
 * gates_determinism.c, gates_agents.c (probes and the behavioural gates) and
 * gates_novelty.c.
 * What it is not: API — nothing outside designer/gates*.c includes it; the
 * gates' interface is gates.h.
 */
#ifndef SPADE_GATES_INTERNAL_H
#define SPADE_GATES_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#include "agents.h"
#include "designer/gates.h"
#include "episodes.h"

/* The parts' shared names stay inside the objects that link them (spade_* is the API). */
#pragma GCC visibility push(hidden)

/* ---- the budgets ---- */

#define FIRST_OBS_MAX 2048
#define ACT_KEEP 40
#define N_PROBES 7 /* the probes agent's actions (gates_agents.c) */
#define MUX_MAX 10
#define MAX_SPECS (2 * SPADE_INFO_MAX_PARAMS + 1)
/* the two determinism workers' fresh memory (both the same: see gates_determinism.c) */
#define DET_POISON 0x5eed0001ULL
#define DET_SEEDS 6
#define LIMIT_SEEDS 4
#define MAX_CONST 40 /* constant answers tried (the fixed ones, the defaults, the first observation's) */
#define MAX_PIECES 17 /* an echo's pieces tried: the whole text and its first 16 numbers, words and lines */
#define ANSWER_SEEDS 8 /* seeds per answer of those (an answer that ignores the seed wins them all) */
#define BEHAVE_SEEDS 4 /* seeds per scripted agent in the behavioural comparison */
#define BEHAVE_MAX 4 /* sources played beside the candidate there */

/* the seed streams of spade_gate_seed's tag, one per group */
enum { SEED_DET = 0, SEED_LIMITS, SEED_PROBES, SEED_AGENTS, SEED_BEHAVE };

/* ---- what an episode showed, hashed per episode (the determinism and novelty gates) ---- */

typedef struct trace {
    uint64_t *h; /* [n] FNV-1a over every observation, action, reward and the end */
    long n;
    char *first_obs; /* non-NULL: episode 0's first observation lands here (FIRST_OBS_MAX bytes, NUL-ended) */
    char (*act)[ACT_KEEP]; /* non-NULL: each episode's first action, for the reasons (n of them) */
    int masked; /* numbers in observations hashed as one '#' (behavioural novelty) */
} trace;

/* ---- one run of several gates' episodes ----
 * Each gate used to be a run of its own on vector envs of its own: two dozen
 * worker spawns and compiles an environment, and as many rounds of batches
 * as the gates' longest episodes added up. Now two workers serve every gate
 * (the determinism gates' pair), the param corners are blocks of instances
 * in them (spade_vecenv_add_block), and the gates that can share a run do:
 * each gate's agent plays its own range of the run's episodes (the mux
 * agent of gates_play.c), as if alone: it sees its episodes numbered from 0, and SOLVE
 * or the hint is fetched only for the episodes of an agent that wants it. */

typedef struct mux {
    int n;
    spade_agent *a[MUX_MAX];
    long base[MUX_MAX + 1]; /* agent k plays episodes [base[k], base[k + 1]) */
    spade_ep_view *v; /* scratch: one agent's share of a round */
    spade_ep_act *act;
    int *at, cap;
} mux;

typedef struct gplay {
    spade_ep_spec spec[MAX_SPECS];
    spade_ep_place place[MAX_SPECS];
    char params[MAX_SPECS][256];
    int ns;
    spade_ep_request *req; /* [cap] */
    unsigned char *wants; /* [cap] */
    long n, cap;
    int oom;
    mux m;
} gplay;

/* ---- the gates, one function per group, over one context ---- */

typedef struct gctx {
    spade_sandbox *sb;
    const char *file, *src;
    size_t len;
    const spade_gate_opts *o;
    spade_gate_report *rep;
    const spade_env_info *info;
    gplay *r;
    spade_vecenv *V;
    int S, n_default, shared_corners;
    int A; /* seeds per answer of the many-answer plays: min(S, ANSWER_SEEDS) */
    long cap;
    spade_ep_outcome *det, *lim, *out;
    trace tr; /* the determinism gates' */
    char (*act)[ACT_KEEP]; /* [cap] the agent run's first actions */
    int det_ok;
    char det_err[1024];
    char first_obs[FIRST_OBS_MAX]; /* of the first determinism seed */
    int n_const;
    char consts[MAX_CONST][64];
    long at[SPADE_GATE_COUNT]; /* where each gate's episodes start in out */
    long n_at[SPADE_GATE_COUNT];
    long at_obs_cycle, at_hint_seq, at_probe;
    int agents_ok;
    char agents_err[1024];
    int too_slow; /* limits found it over max_step_ms: the agent run would cost that a step, 2,000 times */
} gctx;

/* ---- gates_play.c: the shared run ---- */

/* Adds a spec (the source at params, on v's block [first, first + count) or
 * on a vector of its own when v is NULL); returns its index. */
int spade_gates_add_spec(gplay *r, const char *file, const char *src, size_t len, const char *params, spade_vecenv *v,
                         int first, int count);
void spade_gates_add_agent(gplay *r, spade_agent *a);
void spade_gates_add_req(gplay *r, int spec, uint64_t seed);
void spade_gates_clear(gplay *r);
int spade_gates_play(spade_sandbox *sb, gplay *r, const spade_gate_opts *o, spade_ep_outcome *out, trace *tr, char *err,
                     size_t errlen);

/* ---- gates.c: the runner's helpers ---- */

void spade_gates_verdict(spade_gate_report *r, spade_gate g, int status, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
uint64_t spade_gates_seed_of(const gctx *g, int tag, int i);
void spade_gates_note_timeouts(gctx *g, const spade_ep_outcome *out, long n);

/* ---- gates_determinism.c ---- */

void spade_gates_play_determinism(gctx *g);
void spade_gates_determinism(gctx *g);

/* ---- gates_agents.c: probe_actions and the behavioural gates ---- */

long spade_gates_agent_requests(const gctx *g);
void spade_gates_play_agents(gctx *g);
void spade_gates_probes(gctx *g);
/* One of random_agent, noop_agent, constant_agent, obs_echo, hint_echo,
 * solve, winnable, from the agent run. */
void spade_gates_judge_agent(gctx *g, spade_gate k);

/* ---- gates_novelty.c ---- */

void spade_gates_novelty(gctx *g);

#pragma GCC visibility pop

#endif
