/* expect: crash
 * tries: a memory bomb on the stack: recursion with 1 MiB frames, each touched, in reset.
 * The stack limit is hit long before the address-space limit, and a stack overflow
 * is a SIGSEGV, so the outcome is crash (the sandbox cannot tell it from a wild pointer).
 */
#include <spade/dsl.h>
ENV("big-frames", "Hostile: recursion with huge frames.", .max_steps = 10)
STATE { int n; };
static long deep(long n) { volatile char frame[1 << 20]; long i; for (i = 0; i < (1 << 20); i += 4096) frame[i] = (char)n; return deep(n + 1) + frame[4096]; }
RESET { say("%ld", deep(0)); }
STEP { say("ok"); }
HINT { say("none"); }
