/* gates.h — the validation gates a generated environment must pass before
 * the agent plays it for regret, in order, each with a classified reason:
 *
 *   compile               it compiles and validates in the sandbox
 *   limits                success threshold reachable (in (-1, 1]); at the
 *                         defaults and at every param's min and max: no
 *                         sandbox failure, returns within [-1, 1], a mean
 *                         step under max_step_ms (random and SOLVE play)
 *   reset_deterministic   the first observation of each seed is the same in
 *                         two workers that play the seeds in opposite orders and
 *                         whose fresh stack and heap hold different garbage
 *                         (state kept outside S, or an uninitialised read, differs)
 *   replay_deterministic  a fixed action script replays identically the same way
 *   probe_actions         the empty action, "1", "test", "42", \boxed{1}, a
 *                         4 KiB line and binary bytes never make a failure
 *   random_agent          the random agent wins at most random_max of `seeds`
 *                         seeds (a coin flip is not an environment)
 *   noop_agent            the empty action every step never wins
 *   constant_agent        no constant answer, played every step, wins more than
 *                         constant_max of the seeds: the probe strings, done, yes,
 *                         no, -1..10, each param's default, and every word and
 *                         number of the first observation of the first
 *                         determinism seed (an answer that ignores the seed)
 *   obs_echo              echoing the observation never wins more than
 *                         constant_max: the whole first observation, each of its
 *                         numbers, words and lines (one per episode, every step),
 *                         and the latest one's pieces in turn ("type back the
 *                         code shown")
 *   hint_echo             playing the hint wins at most constant_max: the whole
 *                         hint, each of its numbers, words and lines alone ("Not
 *                         12: the answer is 31"), and all its pieces in order, one
 *                         per step (a hint that lists the moves); the hint is the
 *                         one the hint arm sees (opts.hint when set)
 *   solve                 SOLVE, when present, wins every seed (require_solve:
 *                         it must be present)
 *   winnable              something won a seed: SOLVE, or one of the gates'
 *                         agents (random, a constant, an echo, a hint play) on
 *                         some seed within its limit. Without it an environment
 *                         nothing can win earns reward 0 for regret 0, above the
 *                         invalid penalty; now it is invalid (docs/selfplay.md)
 *   novelty               by text: no reference environment (the archive's valid
 *                         ones, the corpus) nor any source the prompt showed
 *                         (opts.shown) is within cosine novelty_max of it, on the
 *                         embedding of core/vendi.h; by behaviour: played on the
 *                         same seeds by the same scripted agents (SOLVE, random,
 *                         constants), it does not behave like any of the nearest
 *                         sources given (opts.ref_src, opts.shown): the same
 *                         lengths and rewards on nearly every episode and the same
 *                         observations once numbers are masked is a copy, whatever
 *                         its text
 *
 * The agent gates' seeds are drawn from the environment's fingerprint and
 * opts.run_seed (spade_gate_seed), so a designer cannot learn them while a
 * file and a run seed always get the same verdict. A call that times out
 * fails its gate and stops the gates there (SKIP the rest): every later play
 * would wait out the deadline again.
 * What it is: designer/ code over the episode layer and core's agents (a
 * failure of the environment is an outcome, never an abort). A gate that
 * cannot run because an earlier one failed is SKIP. Fail-closed: an error of
 * the machinery itself fails the gate it happened in (the reference's
 * validator accepts on error; spade does not).
 * What it is not: `spade check` (the checker for people writing
 * environments, with warnings and more probes); gates are the pass/fail
 * contract of the self-play loop.
 */
#ifndef SPADE_DESIGNER_GATES_H
#define SPADE_DESIGNER_GATES_H

#include <stddef.h>

#include "archive.h"
#include "designer/corpus.h"
#include "host.h"
#include "sandbox/sandbox.h"

typedef enum spade_gate {
    SPADE_GATE_COMPILE = 0,
    SPADE_GATE_LIMITS,
    SPADE_GATE_RESET_DET,
    SPADE_GATE_REPLAY_DET,
    SPADE_GATE_PROBE,
    SPADE_GATE_RANDOM,
    SPADE_GATE_NOOP,
    SPADE_GATE_CONSTANT,
    SPADE_GATE_OBS_ECHO,
    SPADE_GATE_HINT_ECHO,
    SPADE_GATE_SOLVE,
    SPADE_GATE_WINNABLE,
    SPADE_GATE_NOVELTY,
    SPADE_GATE_COUNT
} spade_gate;

/* "compile", "limits", "reset_deterministic", ... (the names above). */
const char *spade_gate_name(spade_gate g);

struct spade_gate_report;

typedef struct spade_gate_opts {
    int seeds; /* seeds for the agent gates (20) */
    double random_max; /* random_agent: largest success rate allowed (0.15) */
    /* constant_agent, obs_echo, and the hint's pieces alone: largest success
     * rate of one fixed answer (0.75, on 8 seeds; docs/selfplay.md says why not random_max) */
    double constant_max;
    int require_solve; /* designer.require_solve (0) */
    double max_step_ms; /* designer.max_step_ms (20) */
    double novelty_max; /* largest cosine allowed to a reference (0.95) */
    /* reference embeddings for novelty: n_refs rows of dim (SPADE_VENDI_DIM) */
    const double *refs;
    const char *const *ref_names;
    int n_refs, dim;
    int stop_at_first; /* the loop: skip the rest after a failure (0: run every gate that can run) */
    int max_live; /* episodes live at once per gate (32; gates sharing a run add theirs) */
    /* non-NULL: the hint the agent gates see instead of the environment's HINT
     * (designer.hint = self: hint_echo echoes the hint the hint arm will see) */
    const char *hint;
    size_t hint_len;
    /* non-NULL: the candidate's embedding (dim) that novelty compares instead of
     * embedding the source (designer.source = template: the filling's) */
    const double *embedding;
    /* non-NULL: refs' sources (n_refs, an entry may be NULL), for the
     * behavioural comparison with the nearest of them */
    const char *const *ref_src;
    const size_t *ref_len;
    /* what the designer's prompt showed (the grounding excerpt, the memory's
     * sources): compared by text and by behaviour like refs */
    const char *const *shown;
    const size_t *shown_len;
    const char *const *shown_names;
    int n_shown;
    int behave_k; /* nearest sources played for behavioural novelty (2; 0: none) */
    double behave_min_cosine; /* ... only those at a text cosine of at least this (0.5) */
    uint64_t run_seed; /* with the source's fingerprint, draws the gates' seeds */
    /* non-NULL: called after each verdict (spade check --gates prints each
     * gate's line as it is known) */
    void (*on_verdict)(void *arg, const struct spade_gate_report *rep, spade_gate g);
    void *on_verdict_arg;
} spade_gate_opts;
void spade_gate_opts_default(spade_gate_opts *o);

enum { SPADE_GATE_NOT_RUN = 0, SPADE_GATE_PASS = 1, SPADE_GATE_FAIL = 2, SPADE_GATE_SKIP = 3 };

typedef struct spade_gate_report {
    int status[SPADE_GATE_COUNT];
    char detail[SPADE_GATE_COUNT][300];
    int first_failed; /* the first FAIL, or -1 when every gate passed */
    spade_env_info info; /* valid when compile passed */
    double random_rate, noop_rate, hint_echo_rate, solve_rate, ms_per_step, max_cosine;
    double constant_rate, obs_echo_rate; /* the best constant's, the best echo's */
    double behave_match; /* the nearest behaviour's share of like episodes (NAN: none played) */
    int timed_out; /* a call timed out: the gates stopped there */
} spade_gate_report;

/* Seed i of the gates' seed stream `tag` (0 determinism, 1 limits, 2
 * probes, 3 the agent gates, 4 behaviour) for this source and run seed. */
uint64_t spade_gate_seed(const spade_gate_opts *o, const char *src, size_t len, int tag, int i);

/* Runs the gates on one source. Returns 0 (report filled; rep->first_failed
 * says the verdict) or -1 when nothing could be judged (out of memory). */
int spade_gates_run(spade_sandbox *sb, const char *filename, const char *src, size_t len, const spade_gate_opts *o,
                    spade_gate_report *rep, char *err, size_t errlen);

/* What a designer prompt showed, for novelty (opts.shown): the grounding
 * excerpt and the memory's sources, kept by the loop's prompt phase with the
 * slot (selfplay/iteration.h), the archive rows they point into owned here. */
typedef struct spade_gate_shown {
    int n;
    const char *src[5];
    size_t len[5];
    const char *name[5];
    spade_archive_env env[4];
    int n_env;
    char label[4][96];
} spade_gate_shown;
/* Frees the rows and empties it. */
void spade_gate_shown_clear(spade_gate_shown *sh);

/* One line per gate, "PASS name: detail" / "FAIL name: reason" / "SKIP name: why", into out. */
void spade_gate_report_text(const spade_gate_report *rep, char *out, size_t cap);

#endif /* SPADE_DESIGNER_GATES_H */
