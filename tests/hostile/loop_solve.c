/* expect: timeout
 * tries: an infinite loop in solve (reset, step, hint are fine).
 */
#include <spade/dsl.h>
ENV("loop-solve", "Hostile: never returns from solve.", .max_steps = 10)
STATE { int n; };
RESET { say("ready"); }
STEP { say("ok"); }
HINT { say("none"); }
SOLVE { for (;;) {} }
