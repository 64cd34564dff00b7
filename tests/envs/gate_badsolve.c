/* gate_badsolve.c — test environment for the solve gate: SOLVE answers wrong. */
#include <spade/dsl.h>
ENV("gate_badsolve", "A wrong SOLVE.", .max_steps = 1)
PARAM(int, n, 3, 1, 5)
STATE { long secret; };
RESET { S->secret = rand_range(100000, 999999); say("Guess my six-digit number."); }
STEP { finish(parse_int(action) == S->secret); }
HINT { say("It has six digits."); }
SOLVE { act("%ld", S->secret + 1); }
