/* expect: crash
 * tries: INT_MIN / -1 in step: the other way x86 raises SIGFPE.
 */
#include <spade/dsl.h>
ENV("div-overflow", "Hostile: INT_MIN / -1.", .max_steps = 10)
STATE { int n; };
RESET { say("ready"); }
STEP { volatile int a = INT_MIN, b = -1; say("%d", a / b); }
HINT { say("none"); }
