/* gate_stepglobal.c — test environment for replay_deterministic: a counter outside S shows in later observations only. */
#include <spade/dsl.h>
ENV("gate_stepglobal", "Step state outside S.", .max_steps = 4)
PARAM(int, n, 3, 1, 5)
STATE { int t; };
static int calls;
RESET { say("Say a number."); }
STEP { say("call %d", ++calls); if (parse_int(action) == 12345) win(); }
HINT { say("Think of a number."); }
