/* gate_impossible.c — test environment for regret: nothing wins, hint or not. */
#include <spade/dsl.h>
ENV("gate_impossible", "Cannot be won.", .max_steps = 1)
PARAM(int, n, 3, 1, 5)
STATE { int d; };
RESET { say("Which way: north, south, east or west?"); }
STEP { finish(0); }
HINT { say("Travellers who went west came back."); }
