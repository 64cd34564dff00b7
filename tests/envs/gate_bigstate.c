/* gate_bigstate.c — test environment for the gates: a valid environment whose state is near SPADE_STATE_MAX (16 MiB), which the gates' shared workers must still hold. */
#include <spade/dsl.h>
ENV("gate_bigstate", "Say back the number.", .max_steps = 2, .family = "test")
PARAM(int, a, 1, 1, 3)
PARAM(int, b, 1, 1, 3)
PARAM(double, c, 0.5, 0.0, 1.0)
STATE { char big[SPADE_STATE_MAX - 4096]; int n; };
RESET { S->n = rand_range(1000, 9999); S->big[S->n] = 1; say("Say %d.", S->n); }
STEP { finish(parse_int(action) == S->n && S->big[S->n] == 1); }
HINT { say("Repeat it."); }
SOLVE { act("%d", S->n); }
