/* expect: ok
 * tries: nothing: a well-behaved environment with a tool (probe), which the runner calls as
 * `probe(7)` through libffi.
 */
#include <spade/dsl.h>
ENV("ok-tool", "Call probe with a number.", .max_steps = 10)
STATE { long total; };
TOOL(probe, "Adds x to a running total and returns it.", long, (int x)) { S->total += x; return S->total; }
RESET { say("ready"); }
STEP { if (S->total >= 14) win(); else say("total %ld", S->total); }
HINT { say("Call probe(7) twice."); }
