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
 *   hint_echo             playing the hint's numbers, words and lines never
 *                         wins (else "impossible task + answer in the hint"
 *                         earns the maximal regret); the hint is the one the
 *                         hint arm sees (opts.hint when set)
 *   solve                 SOLVE, when present, wins every seed (require_solve:
 *                         it must be present)
 *   novelty               no reference environment (the archive's valid ones,
 *                         the corpus) is within cosine novelty_max of it, on the
 *                         embedding of core/vendi.h
 *
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
    SPADE_GATE_HINT_ECHO,
    SPADE_GATE_SOLVE,
    SPADE_GATE_NOVELTY,
    SPADE_GATE_COUNT
} spade_gate;

/* "compile", "limits", "reset_deterministic", ... (the names above). */
const char *spade_gate_name(spade_gate g);

typedef struct spade_gate_opts {
    int seeds;             /* seeds for the agent gates (20) */
    double random_max;     /* random_agent: largest success rate allowed (0.15) */
    int require_solve;     /* designer.require_solve (0) */
    double max_step_ms;    /* designer.max_step_ms (20) */
    double novelty_max;    /* largest cosine allowed to a reference (0.95) */
    /* reference embeddings for novelty: n_refs rows of dim (SPADE_VENDI_DIM) */
    const double *refs;
    const char *const *ref_names;
    int n_refs, dim;
    int stop_at_first;     /* the loop: skip the rest after a failure (0: run every gate that can run) */
    int max_live;          /* episodes live at once per gate (32; gates sharing a run add theirs) */
    /* non-NULL: the hint the agent gates see instead of the environment's HINT
     * (designer.hint = self: hint_echo echoes the hint the hint arm will see) */
    const char *hint;
    size_t hint_len;
    /* non-NULL: the candidate's embedding (dim) that novelty compares instead of
     * embedding the source (designer.source = template: the filling's) */
    const double *embedding;
} spade_gate_opts;
void spade_gate_opts_default(spade_gate_opts *o);

enum { SPADE_GATE_NOT_RUN = 0, SPADE_GATE_PASS = 1, SPADE_GATE_FAIL = 2, SPADE_GATE_SKIP = 3 };

typedef struct spade_gate_report {
    int status[SPADE_GATE_COUNT];
    char detail[SPADE_GATE_COUNT][300];
    int first_failed;     /* the first FAIL, or -1 when every gate passed */
    spade_env_info info;  /* valid when compile passed */
    double random_rate, noop_rate, hint_echo_rate, solve_rate, ms_per_step, max_cosine;
} spade_gate_report;

/* Runs the gates on one source. Returns 0 (report filled; rep->first_failed
 * says the verdict) or -1 when nothing could be judged (out of memory). */
int spade_gates_run(spade_sandbox *sb, const char *filename, const char *src, size_t len, const spade_gate_opts *o,
                    spade_gate_report *rep, char *err, size_t errlen);

/* One line per gate, "PASS name: detail" / "FAIL name: reason" / "SKIP name: why", into out. */
void spade_gate_report_text(const spade_gate_report *rep, char *out, size_t cap);

#endif /* SPADE_DESIGNER_GATES_H */
