/* bandit.c — an example plugin: a multi-armed bandit with a reward on every step.
 * Each pull of a slot machine pays 1/pulls with a hidden probability; the episode
 * succeeds when the total reaches .success (0.6). Shows reward() for partial
 * credit, a success threshold instead of win(), double params, rand_real, and an
 * episode that ends itself after a fixed number of steps. Params: arms = machines;
 * pulls = length of the episode; gap = how much the best machine beats the others. */
#include <spade/dsl.h>
/* success: 0.6 less a margin for rounding (a sum of k/pulls is never in between) */
ENV("bandit", "Find and exploit the best slot machine.", .family = "logic", .max_steps = 100, .success = 0.5999)
PARAM(int, arms, 4, 2, 8)
PARAM(int, pulls, 30, 20, 100)
PARAM(double, gap, 0.5, 0.3, 0.6)
STATE { double p[8]; int best, tries[8], wins[8]; };
RESET {
    S->best = rand_range(0, arms - 1);
    for (int a = 0; a < arms; a++) S->p[a] = a == S->best ? 0.95 : (0.95 - gap) * rand_real();
    say("There are %d slot machines, numbered 1 to %d. Each pull of one pays %.3g with its own hidden chance.\n"
        "You have %d pulls; collect at least 0.6 in total. Say the number of the machine to pull.\n", arms, arms, 1.0 / pulls, pulls);
}
STEP {
    long m = parse_int(action); /* the machine, numbered from 1; NO_INT when the answer has no number */
    if (m < 1 || m > arms) say("Say a machine number from 1 to %d.\n", arms);
    else {
        int a = m - 1, paid = rand_real() < S->p[a];
        S->tries[a]++; S->wins[a] += paid;
        if (paid) reward(1.0 / pulls);
        say("Machine %ld %s. It has paid %d of %d times.\n", m, paid ? "pays" : "pays nothing", S->wins[a], S->tries[a]);
    }
    if (steps() + 1 == pulls) { say("That was your last pull.\n"); finish(0); } /* finish(0): end without a bonus; the rewards decide */
}
HINT { say("Explore briefly: pull each machine two or three times, then keep pulling the one with the best record, switching only if its record clearly falls behind."); }
SOLVE { act("%d", S->best + 1); }
