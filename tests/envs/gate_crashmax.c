/* gate_crashmax.c — test environment for the limits gate: crashes when its param is at its max. */
#include <spade/dsl.h>
ENV("gate_crashmax", "Crashes at n = 9.", .max_steps = 3)
PARAM(int, n, 3, 1, 9)
STATE { int t; };
RESET { if (n == 9) { volatile int *p = (int *)0; *p = 1; } say("Say a number."); }
STEP { finish(parse_int(action) == 12345); }
HINT { say("Think of a number."); }
