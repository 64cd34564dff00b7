/* plays.h — the paired plays of one environment: each of N seeds played once
 * without and once with the hint, by one agent (one policy snapshot), in one
 * run of the episode layer; regret is measured from the per-seed pairs
 * (designer/reward.h's spade_paired_measure).
 *
 * What it is: the measurement the designer's reward rests on, with the
 * reference's pitfalls designed out: equal counts in both arms, the same
 * explicit seeds, the same agent state for both (a policy agent is not
 * updated between the arms; the loop plays before it trains).
 * What it is not: a trainer; the loop takes the no-hint episodes' transcripts
 * from the agent it passes in.
 */
#ifndef SPADE_DESIGNER_PLAYS_H
#define SPADE_DESIGNER_PLAYS_H

#include <stdint.h>

#include "designer/reward.h"
#include "episodes.h"

/* Each of the n seeds is played `repeats` times an arm (1: once; a repeat is
 * the request's repeat, so a sampling agent draws another stream for it).
 * With P = n * repeats plays an arm, out has room for 2P outcomes: out[i] is
 * seed i / repeats (its repeat i % repeats) without the hint, out[P + i] the
 * same with it. A failed episode counts as not solved in both arms' rates
 * (and is in out for the caller to see). eo may be NULL. 0, or -1 with err. */
int spade_paired_play(spade_sandbox *sb, const spade_ep_spec *spec, spade_agent *agent, const uint64_t *seeds, int n,
                      int repeats, const spade_episodes_opts *eo, spade_ep_outcome *out, spade_paired *m, char *err,
                      size_t errlen);

#endif /* SPADE_DESIGNER_PLAYS_H */
