/* add.c — test environment: add two numbers in one step. Exercises params
 * (lo, hi), a one-step episode, parse_int, HINT and SOLVE. Not part of stdenv. */
#include <spade/dsl.h>
ENV("add", "Add two numbers drawn from a range.", .max_steps = 1, .family = "math")
PARAM(int, lo, 10, 0, 1000000)
PARAM(int, hi, 99, 0, 1000000)
STATE { long a, b; };
RESET {
    S->a = rand_range(lo, hi);
    S->b = rand_range(lo, hi);
    say("Compute %ld + %ld. Answer with the number.", S->a, S->b);
}
STEP {
    long got = parse_int(action);
    say(got == S->a + S->b ? "Correct." : "Wrong.");
    finish(got == S->a + S->b);
}
HINT { say("Add the ones, carry, then add the tens."); }
SOLVE { act("The sum is \\boxed{%ld}", S->a + S->b); }
