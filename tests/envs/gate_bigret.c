/* gate_bigret.c — test environment for the limits gate: three rewards of 0.6 make a return of 1.8. */
#include <spade/dsl.h>
ENV("gate_bigret", "Returns more than 1.", .max_steps = 3)
PARAM(int, n, 3, 1, 5)
STATE { int t; };
RESET { say("Say anything."); }
STEP { reward(0.6); say("again"); }
HINT { say("Keep talking."); }
