/* expect: timeout
 * tries: an infinite loop in reset.
 */
#include <spade/dsl.h>
ENV("loop-reset", "Hostile: never returns from reset.", .max_steps = 10)
STATE { int n; };
RESET { for (;;) {} }
STEP { say("ok"); }
HINT { say("none"); }
