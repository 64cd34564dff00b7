/* gate_direction.c — test environment for regret: one step, won by the hidden
 * direction; the hint says it in a sentence whose first word is not it. */
#include <spade/dsl.h>
ENV("gate_direction", "Pick the right way.", .max_steps = 1)
PARAM(int, n, 3, 1, 5)
STATE { int d; };
static const char *W[4] = {"north", "south", "east", "west"};
RESET { S->d = rand_range(0, 3); say("Which way: north, south, east or west?"); }
STEP { finish(str_ieq(action, W[S->d])); }
HINT { say("Travellers who went %s came back.", W[S->d]); }
SOLVE { act("%s", W[S->d]); }
