/* reward.h — what the designer is rewarded for and how it is measured from
 * paired plays: hint-based regret, the pass-rate plateau, their blend, and the
 * alternatives the ablations switch to.
 *
 * What it is: arithmetic on outcomes that the loop has already measured. The
 * paired plays are N seeds each played once without and once with the hint by
 * one policy snapshot (the reference's arms are 16 vs 8, unseeded vs seeded,
 * partly on a moving agent); regret is the mean of the per-seed differences,
 * which is the difference of the means with the noise of unpaired seeds gone.
 * Rewards (designer.reward):
 *   blend (default, the paper's): 0.4 clip(regret / 0.15, 0, 1) + 0.6 plateau(pass)
 *   regret:                       clip(regret / 0.15, 0, 1)
 *   solve_rate:                   plateau(pass)
 *   learning_potential:           max(0, pass after a trial agent step - pass before)
 * plateau(p) = 1 on [0.4, 0.6], linear to 0 at 0.15 and at 0.85, 0 outside.
 * An environment that failed a gate gets designer.invalid_reward (penalise,
 * the default) or is dropped (the reference's behaviour). Rewards are then
 * centred per family (no division by the std, as the reference), and spade's
 * GRPO normalises each role to unit RMS instead of the reference's x32.
 * What it is not: the plays (the episode layer) nor the update (core/policy).
 */
#ifndef SPADE_DESIGNER_REWARD_H
#define SPADE_DESIGNER_REWARD_H

#include <stddef.h>
#include <stdint.h>

typedef enum {
    SPADE_DREWARD_BLEND = 0,
    SPADE_DREWARD_REGRET,
    SPADE_DREWARD_SOLVE_RATE,
    SPADE_DREWARD_LEARNING_POTENTIAL,
} spade_dreward_kind;

/* "blend" | "regret" | "solve_rate" | "learning_potential" -> kind; -1 for another word. */
int spade_dreward_parse(const char *word);

double spade_plateau(double pass);

/* Paired plays of one environment: success (0/1, or a fraction) of play i
 * without and with the hint, n plays an arm: n / repeats seeds, each played
 * `repeats` times in a row (selfplay.repeats; 1: every play its own seed).
 *
 * Bimodal environments (the reference's pitfall: trivial on some seeds,
 * impossible on others, they score the full plateau at a mean pass rate of
 * 0.5) are what repeats are for: with repeats >= 2 the plateau is the mean
 * over seeds of plateau(that seed's own pass rate), so the designer is paid
 * for seeds at the agent's frontier, not for a mean of 0s and 1s. A bimodal
 * environment then earns 0, one at 0.5 on every seed earns 2p(1 - p) in
 * expectation at 2 repeats (0.5 at p = 0.5). With repeats = 1 a seed's pass
 * rate is its one 0 or 1, so the plateau is that of the mean, as the
 * reference's. */
typedef struct spade_paired {
    double pass_nohint, pass_hint; /* means over the n plays */
    double regret; /* mean of success_hint[i] - success_nohint[i] */
    double regret_se; /* standard error of that mean, over seeds (0 with fewer than 2) */
    double plateau; /* the pass-rate term of blend and solve_rate, as above */
    int n, repeats;
} spade_paired;
void spade_paired_measure(const double *success_nohint, const double *success_hint, int n, int repeats,
                          spade_paired *out);

/* Learning potential, measured in the iteration the environment was written
 * (the reference's |fast EMA - slow EMA| of a win rate over later iterations
 * would reward the designer iterations after it wrote the source, a stale
 * sample). The loop takes a trial agent-only GRPO step on a copy of the
 * policy, replays the no-hint arm on the same seeds with the same sampling
 * streams (common random numbers: what changes is the policy, not the luck)
 * and compares: learning potential = max(0, pass_after - pass_before), how
 * much one step of agent training on this iteration's plays lifts the agent
 * here. Signed and clipped, not |.|: a step that makes the agent worse on an
 * environment (interference, or noise) is not potential to reward, and under
 * pure noise the clip earns half what |.| would. 0 when either is not
 * finite. */
double spade_lp_lookahead(double pass_before, double pass_after);

/* The designer reward of one valid environment. pass_after: the look-ahead's
 * no-hint pass rate, read only for learning_potential (NULL there: 0). */
double spade_dreward(spade_dreward_kind kind, const spade_paired *m, const double *pass_after);

/* Centres r[i] per family: r[i] -= mean of r over the samples of family[i]
 * with keep[i] set (keep may be NULL: all). Samples not kept are left as they
 * are. Families are compared as strings. */
void spade_center_per_family(double *r, const char *const *family, const int *keep, int n);

#endif /* SPADE_DESIGNER_REWARD_H */
