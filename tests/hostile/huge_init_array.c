/* expect: out_of_memory
 * tries: a compile-time memory bomb: a 1.5 GiB static array with an initialiser, which tcc
 * builds in its data section while compiling, beyond the worker's memory limit
 * (1 GiB by default; test_hostile sets 256 MiB).
 */
#include <spade/dsl.h>
ENV("huge-init", "Hostile: a 1.5 GiB initialised array.", .max_steps = 10)
STATE { int n; };
static char big[3UL << 29] = {1, 2, 3};
RESET { say("%d", big[1]); }
STEP { say("ok"); }
HINT { say("none"); }
