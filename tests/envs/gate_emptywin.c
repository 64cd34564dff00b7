/* gate_emptywin.c — test environment for noop_agent: the empty action wins. */
#include <spade/dsl.h>
ENV("gate_emptywin", "Silence wins.", .max_steps = 2)
PARAM(int, n, 3, 1, 5)
STATE { int t; };
RESET { say("Say the secret word."); }
STEP { finish(action_len == 0); }
HINT { say("Less is more."); }
SOLVE { act("%s", ""); }
