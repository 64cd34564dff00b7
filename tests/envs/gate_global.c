/* gate_global.c — test environment for reset_deterministic: a counter kept outside S shows in the first observation. */
#include <spade/dsl.h>
ENV("gate_global", "State outside S.", .max_steps = 3)
PARAM(int, n, 3, 1, 5)
STATE { int t; };
static int resets;
RESET { say("Reset number %d. Say a number.", ++resets); }
STEP { finish(parse_int(action) == 12345); }
HINT { say("Think of a number."); }
