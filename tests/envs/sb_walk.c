/* sb_walk.c — test environment for core/sandbox: a seeded walk toward a goal.
 * Every step draws from the instance's generator (drift, noise in the reward),
 * episodes end by reaching the goal or by truncation at max_steps, so batched
 * and unbatched stepping only agree if every instance keeps its own state and
 * RNG exactly. Not part of stdenv. */
#include <spade/dsl.h>
ENV("sb-walk", "Walk left or right to a hidden goal; the ground drifts.", .max_steps = 12, .family = "logic")
PARAM(int, width, 9, 3, 99)
STATE { long pos, goal; double luck; };
RESET {
    S->pos = rand_range(0, width - 1);
    S->goal = rand_range(0, width - 1);
    S->luck = rand_real();
    say("At %ld of %d, luck %.6f. Answer L or R.", S->pos, width, S->luck);
}
STEP {
    const char *a = answer(action);
    long move = (a[0] == 'L' || a[0] == 'l') ? -1 : (a[0] == 'R' || a[0] == 'r') ? 1 : 0;
    if (chance(0.25))
        move += rand_range(-1, 1);
    S->pos += move;
    if (S->pos < 0)
        S->pos = 0;
    if (S->pos > width - 1)
        S->pos = width - 1;
    reward(rand_real() * 0.01 - 0.005);
    say("At %ld after %ld steps (moved %ld).", S->pos, steps() + 1, move);
    if (S->pos == S->goal)
        win();
}
HINT { say("The goal is %s.", S->goal < S->pos ? "to the left" : S->goal > S->pos ? "to the right" : "here"); }
SOLVE { act("%s", S->goal < S->pos ? "L" : "R"); }
