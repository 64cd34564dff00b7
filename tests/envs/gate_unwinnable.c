/* gate_unwinnable.c — test environment for winnable: no SOLVE, and no agent
 * ever wins (six digits, one guess, no feedback), so before it earned reward
 * 0, above the invalid penalty. Not part of stdenv. */
#include <spade/dsl.h>
ENV("gate_unwinnable", "Guess my six-digit number.", .max_steps = 1, .family = "test")
STATE { long secret; };
RESET { S->secret = rand_range(100000, 999999); say("Guess my six-digit number in one try."); }
STEP { finish(parse_int(action) == S->secret); }
HINT { say("Think of a number."); }
