/* expect: ok
 * tries: say("%n") to make the runtime's printf write through a pointer (to address 8). The
 * runtime refuses any format containing %n and prints nothing, so the call is ok.
 */
#include <spade/dsl.h>
ENV("say-percent-n", "Hostile: printf %n through say.", .max_steps = 10)
STATE { int n; };
RESET { say("ready"); }
STEP { say("abc%n", (int *)8); say("still here"); }
HINT { say("none"); }
