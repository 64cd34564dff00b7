/* check_internal.h — what the files of the checker (core/check*.c) share.
 *
 * What it is: the checker's state (ctx), the thresholds the checks use, the
 * report and direct-call helpers of check.c, the episode-layer plays of
 * check_play.c, and the checks each file defines for spade_check's list.
 * What it is not: API — nothing outside core/check*.c includes it; the
 * checker's interface is check.h.
 */
#ifndef SPADE_CHECK_INTERNAL_H
#define SPADE_CHECK_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#include "check.h"
#include "episodes.h"
#include "host.h"

/* The parts' shared names stay inside libspade.so (libspade.map exports spade_*). */
#pragma GCC visibility push(hidden)

#define RANDOM_WIN_MAX 0.15 /* docs/architecture.md: a random guesser wins at most 15% */
#define DETERMINISM_STEPS 64
#define EXTREME_RANDOM_COMBOS 4 /* random parameter combinations, besides each one's min and max */
#define EXTREME_SEEDS 2 /* seeds played at each parameter setting */
#define LONG_EPISODE_CAP 2000 /* steps of a long random episode, at most (max_steps may be 1e6) */
/* Worker memory is poisoned for uninitialised reads (spade_host_set_poison);
 * the pattern also depends on the instance, so the two side-by-side
 * instances see different garbage. Any nonzero seed does. */
#define CHECK_POISON 0x5ade5ade0badf00dULL
#define RANDOM_AGENT_SEED 0x5eed5eedULL /* spade_agent_random's, for random_agent and param_extremes */

/* ---- the checker's state --------------------------------------------------- */

typedef struct ctx {
    spade_sandbox *sb;
    const char *filename, *source;
    size_t len;
    const char *params;
    spade_check_opts o;
    spade_check_report *rep;
    size_t off; /* end of rep->text */

    /* the vector env every check plays on at the params given (one worker
     * start for all of them): instances id[0] and id[1] side by side for the
     * direct calls of reset and hint, all of them for the episode layer */
    spade_vecenv *vec;
    int id[2];
    spade_env_info info;
    double pvals[SPADE_INFO_MAX_PARAMS];
    int internal; /* a worker could not be spawned again */

    const char *check; /* the check running now, for obs_size's report */
    int timed_out; /* a call timed out: the remaining checks are skipped */
    char timeout_what[600];
    char timeout_why[1400]; /* the failure, with the deadline */
    int failed_at_timeout; /* rep->failed when it happened: no FAIL since means none named it */
    size_t max_obs;
    int over; /* an output exceeded the cap */
    char over_where[256];
} ctx;

typedef struct saved {
    char *obs;
    size_t len;
    double reward;
    int terminated, truncated;
} saved;

/* What one episode showed, step by step, for the determinism checks: a hash
 * of everything (seeds_vary) and, when kept, every observation and action
 * (step_deterministic names the byte where two episodes part). */
typedef struct ep_log {
    uint64_t hash; /* FNV-1a: first observation, then each action, observation and reward */
    int n, cap; /* steps kept */
    saved *obs; /* [n]: the result of step t + 1 */
    char **act; /* [n]: the action of step t + 1 */
    size_t *act_len;
    int n_act;
} ep_log;

static inline uint64_t seed_of(const ctx *c, int k) { return c->o.first_seed + (uint64_t)k; }

/* The default spec: the source at the params given. */
static inline spade_ep_spec spec_given(const ctx *c) {
    spade_ep_spec s = {c->filename, c->source, c->len, c->params, 0};
    return s;
}

/* ---- check.c: the report and the direct calls on instances 0 and 1 ---------- */

/* One report line: kind PASS, FAIL, WARN, SKIP or INFO, then the check's name and fmt. */
void spade_check_put(ctx *c, const char *kind, const char *name, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
/* A short printable rendering of text for report lines. */
const char *spade_check_shown(const char *s, size_t len, char *buf, size_t cap);
/* A failure as one line of the report (with the option that sets a deadline). */
const char *spade_check_why(const spade_failure *f, char *buf, size_t cap);
/* Notes a timeout (it stops the checks) or an oversized output (obs_size's FAIL). */
void spade_check_note_failure(ctx *c, const spade_failure *f, const char *where);
/* Notes an output's length for obs_size. */
void spade_check_note_obs(ctx *c, size_t len);
int spade_check_reset_n(ctx *c, int n, const uint64_t *seeds, spade_step_result *res, spade_failure *f);
int spade_check_step_one(ctx *c, int inst, const char *act, size_t len, spade_step_result *res, spade_failure *f);
/* The hint (solve 0) or the solve action of instance 0, copied; NULL on failure. */
char *spade_check_text_call(ctx *c, int solve, size_t *len, spade_failure *f);
/* A copy of a step's result (s->obs malloc'd; NULL when out of memory). */
void spade_check_save(saved *s, const spade_step_result *r);

/* ---- check_play.c: playing through the episode layer ------------------------ */

int spade_check_play_eps(ctx *c, const spade_ep_spec *specs, int n_specs, spade_vecenv *const *vecs, int max_live,
                         const spade_ep_request *reqs, long n, spade_agent *inner, int cap, int stop_on_win,
                         int show_solve, ep_log *log, int keep, spade_ep_outcome *out);
const char *spade_check_ep_why(const spade_ep_outcome *o, char *buf, size_t cap);
void spade_check_free_logs(ep_log *log, long n);
spade_agent *spade_check_mixed_agent(int use_solve, uint64_t mul, uint64_t add, int pairs);

/* ---- the checks, in the order spade_check runs them ------------------------- */

/* check_determinism.c */
int spade_check_reset(ctx *c); /* -1: reset does not work at all */
void spade_check_step_deterministic(ctx *c);
void spade_check_seeds_vary(ctx *c);
/* check_checks.c */
void spade_check_arbitrary_actions(ctx *c);
void spade_check_max_steps(ctx *c);
void spade_check_hint(ctx *c);
void spade_check_solve(ctx *c);
void spade_check_random_agent(ctx *c);
void spade_check_param_extremes(ctx *c);

#pragma GCC visibility pop

#endif
