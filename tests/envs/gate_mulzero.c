/* gate_mulzero.c — test environment for constant_agent: a multiplying
 * variant of carry_add whose product starts at 0 (`S->sum *= x`), so "0"
 * wins every seed. Not part of stdenv. */
#include <spade/dsl.h>
ENV("gate_mulzero", "Multiply the numbers.", .max_steps = 1, .family = "test")
PARAM(int, terms, 2, 2, 4)
STATE { long sum; };
RESET {
    say("Compute");
    for (int i = 0; i < terms; i++) { long x = rand_range(10, 99); S->sum *= x; say("%s %ld", i ? " *" : "", x); }
    say(".");
}
STEP { finish(parse_int(action) == S->sum); }
HINT { say("Multiply the first two, then the next."); }
SOLVE { act("%ld", S->sum); }
