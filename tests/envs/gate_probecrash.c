/* gate_probecrash.c — test environment for probe_actions: the action "test" crashes it. */
#include <spade/dsl.h>
ENV("gate_probecrash", "Crashes on test.", .max_steps = 3)
PARAM(int, n, 3, 1, 5)
STATE { int t; };
RESET { say("Say a number."); }
STEP { if (str_ieq(action, "test")) { volatile int *p = (int *)0; *p = 1; } finish(parse_int(action) == 12345); }
HINT { say("Think of a number."); }
