/* expect: timeout
 * tries: an infinite loop in hint (reset and step are fine).
 */
#include <spade/dsl.h>
ENV("loop-hint", "Hostile: never returns from hint.", .max_steps = 10)
STATE { int n; };
RESET { say("ready"); }
STEP { say("ok"); }
HINT { for (;;) {} }
