/* expect: crash
 * tries: unbounded recursion in step until the stack runs out (SIGSEGV).
 */
#include <spade/dsl.h>
ENV("stack-overflow", "Hostile: unbounded recursion.", .max_steps = 10)
STATE { int n; };
static long down(volatile long n) { volatile char pad[64]; pad[0] = (char)n; return down(n + 1) + pad[0]; }
RESET { say("ready"); }
STEP { say("%ld", down(0)); }
HINT { say("none"); }
