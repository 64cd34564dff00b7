/* check.h — the environment checker: runs one environment source through every
 * check an environment must pass before an agent or a trainer uses it.
 *
 * What it is: Gymnasium's check_env in spirit, stricter, and run entirely in the
 * sandbox (core/sandbox), so checking hostile code is safe. Its episodes are
 * played by the episode layer (core/episodes.h) with core's agents. The checks, in order
 * (report lines are `PASS name (detail)`, `FAIL name: reason`, `WARN name: ...`):
 *   compile             compiles and validates (tcc's message with the line on failure)
 *   params              the params given parse against the declared ones (only when given)
 *   reset               reset works and says something for `seeds` seeds
 *   reset_deterministic the same seed gives byte-identical observations, in two
 *                       instances at once and again after playing (no hidden global state)
 *   step_deterministic  the same seed and actions give identical observations, rewards, ends
 *   seeds_vary          different seeds do not all give the same episode for the same
 *                       actions (WARN only)
 *   arbitrary_actions   empty, 1 MB, binary, invalid UTF-8 and odd actions never crash or hang it
 *   max_steps           playing a do-nothing action ends the episode by max_steps,
 *                       and does not win it
 *   hint                the hint exists and is non-empty, at reset and mid-episode
 *   solve               SOLVE wins on `solve_seeds` seeds (WARN when there is no SOLVE)
 *   random_agent        a random agent wins at most 15% (FAIL above: a coin flip is not a task)
 *   param_extremes      at each param's min and max and at 4 random combinations, SOLVE
 *                       wins and a long random episode (up to 2000 steps) runs clean
 *   obs_size            no observation, hint or action exceeded SPADE_OBS_MAX
 * Every worker runs with its memory poisoned (spade_vecenv_new_poisoned: a
 * pattern per instance on the fresh stack and past the action), so reading an
 * uninitialised local fails reset_deterministic or step_deterministic. The
 * first call that times out stops the check: the later checks are SKIPped.
 * A check that cannot run because an earlier one failed (no reset, no compile)
 * is reported as `WARN name: skipped (...)`.
 *
 * What it is not: the designer's validation gate (designer/ adds the hint-leak
 * and pass-rate gates and the reward), nor a proof of safety (the sandbox is).
 */
#ifndef SPADE_CHECK_H
#define SPADE_CHECK_H

#include <stddef.h>
#include <stdint.h>

#include "rng.h" /* spade_splitmix64, which the random agent draws from */
#include "sandbox/sandbox.h"

typedef struct spade_check_opts {
    int seeds; /* seeds for the reset/step/hint checks; default 5 */
    int solve_seeds; /* episodes the SOLVE (and random) agent plays; default 20 */
    uint64_t first_seed; /* seeds used are first_seed, first_seed + 1, ...; default 0 */
    int verbose; /* add INFO lines: first observation, hint, solve action */
    /* Called as each check starts (the CLI shows it on a terminal); may be NULL. */
    void (*progress)(const char *check, void *arg);
    void *progress_arg;
    /* How the caller sets the call deadline (e.g. "--timeout S"), named in a
     * timeout's FAIL line; NULL names nothing. */
    const char *timeout_option;
} spade_check_opts;

typedef struct spade_check_report {
    int passed, failed, warned;
    char text[16384]; /* one line per check; truncated with "..." if longer */
} spade_check_report;

/* Fills opts with the defaults. */
void spade_check_opts_default(spade_check_opts *opts);

/* Runs every check. params: "key=value,..." or NULL. opts NULL = defaults.
 * Returns 0 when every check passed (warnings allowed), 1 when one failed,
 * -1 on an internal error (the sandbox could not spawn a worker; the text says
 * why). filename is used in messages only. */
int spade_check(spade_sandbox *sb, const char *filename, const char *source, size_t len, const char *params,
                const spade_check_opts *opts, spade_check_report *rep);

/* The random agent (used by the random_agent check and by `spade run --agent
 * random`): writes a short random action to buf — an integer, a direction word,
 * a common word or a few random letters — and returns its length. *rng is a
 * splitmix64 state the caller seeds. */
size_t spade_random_action(uint64_t *rng, char *buf, size_t cap);

#endif /* SPADE_CHECK_H */
