/* hint_seedreturn.c — test environment for designer.hint = self: one step
 * whose return is the seed's alone (so the no-hint plays differ and the agent
 * trains on them), never won by the policy; the hint cannot matter. Its
 * SOLVE's word wins, so the winnable gate sees it can be won. */
#include <spade/dsl.h>
ENV("hint_seedreturn", "Say anything; the return is the seed's.", .max_steps = 1)
STATE { int r; };
RESET { S->r = (int)rand_range(0, 4); say("Say anything."); }
STEP {
    if (str_ieq(action, "xyzzy-plugh-7")) { finish(1); return; }
    reward(0.1 * S->r);
    finish(0);
}
HINT { say("Anything will do."); }
SOLVE { act("xyzzy-plugh-7"); }
