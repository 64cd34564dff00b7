/* expect: crash
 * tries: a 4 GiB variable-length array on the stack (tcc's alloca), written at its far end:
 * the write lands below the stack, in unmapped memory (SIGSEGV).
 */
#include <spade/dsl.h>
ENV("vla-bomb", "Hostile: a huge VLA.", .max_steps = 10)
STATE { int n; };
RESET { say("ready"); }
STEP { volatile long n = 1L << 32; char big[n]; big[0] = 1; say("%d", big[0]); }
HINT { say("none"); }
