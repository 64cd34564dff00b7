/* expect: crash
 * tries: a memory bomb on the stack: a 4 GiB variable-length array, touched one byte per page
 * from its top down, as a real stack probe would. The stack may grow to its rlimit and
 * no further, so a touch soon lands below it (SIGSEGV). (Touching only big[0] is not
 * deterministic: 4 GiB below the stack may fall inside some other mapping of the worker,
 * which the write then silently corrupts; the first version of this program did that.)
 */
#include <spade/dsl.h>
ENV("vla-bomb", "Hostile: a huge VLA.", .max_steps = 10)
STATE { int n; };
RESET { say("ready"); }
STEP { volatile long n = 1L << 32; long i; char big[n]; for (i = n - 1; i >= 0; i -= 4096) big[i] = 1; say("%d", big[0]); }
HINT { say("none"); }
