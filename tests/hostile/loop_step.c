/* expect: timeout
 * tries: an infinite loop in step (reset is fine).
 */
#include <spade/dsl.h>
ENV("loop-step", "Hostile: never returns from step.", .max_steps = 10)
STATE { int n; };
RESET { say("ready"); }
STEP { volatile int x = 0; for (;;) x++; }
HINT { say("none"); }
