/* gate_const7.c — test environment for constant_agent: the answer never
 * depends on the seed ("7" always wins), whatever the observation says.
 * Not part of stdenv. */
#include <spade/dsl.h>
ENV("gate_const7", "Find the lucky number.", .max_steps = 3, .family = "test")
STATE { long a, b; };
RESET { S->a = rand_range(10, 99); S->b = rand_range(10, 99); say("Between %ld and %ld lies the lucky number.", S->a, S->b); }
STEP { finish(parse_int(action) == 7); }
HINT { say("Luck is not in the range."); }
SOLVE { act("7"); }
