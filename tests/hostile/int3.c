/* expect: crash
 * tries: a breakpoint instruction (int3) in step (SIGTRAP).
 */
#include <spade/dsl.h>
ENV("int3", "Hostile: breakpoint trap.", .max_steps = 10)
STATE { int n; };
RESET { say("ready"); }
STEP { __asm__ __volatile__("int3"); say("survived"); }
HINT { say("none"); }
