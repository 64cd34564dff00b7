/* counter.c — test environment: walk a value to a hidden-sign target with + and
 * -. Needs several steps, and an agent that dawdles is truncated at max_steps.
 * Not part of stdenv. */
#include <spade/dsl.h>
ENV("counter", "Reach the target value one step at a time with + or -.", .max_steps = 20, .family = "logic")
PARAM(int, range, 5, 2, 15)
STATE { long value, target; };
RESET {
    S->target = rand_range(2, range) * (chance(0.5) ? 1 : -1);
    say("Value 0. Target %ld. Answer + to add one or - to subtract one.", S->target);
}
STEP {
    const char *a = answer(action);
    int plus = strchr(a, '+') != NULL, minus = strchr(a, '-') != NULL;
    if (plus == minus) {
        say("Answer + or -. Value %ld, target %ld.", S->value, S->target);
        return;
    }
    S->value += plus ? 1 : -1;
    say("Value %ld. Target %ld.", S->value, S->target);
    if (S->value == S->target)
        win();
}
HINT { say("Move toward the target: + while below it, - while above it."); }
SOLVE { act("%s", S->value < S->target ? "+" : "-"); }
