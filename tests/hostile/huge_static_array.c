/* expect: out_of_memory
 * tries: a 1.5 GiB zero-initialised static array (bss), touched in reset. tcc accepts the
 * size (3 GiB is an "invalid array size" to it) and must allocate the image when
 * it relocates, beyond the worker's memory limit (1 GiB by default, 256 MiB in
 * test_hostile). (Bare libtcc 0.9.27
 * calls exit(1) on that failed malloc; the jit must turn it into out_of_memory.)
 */
#include <spade/dsl.h>
ENV("huge-static", "Hostile: a 1.5 GiB static array.", .max_steps = 10)
STATE { int n; };
static char big[3UL << 29];
RESET { big[(3UL << 29) - 1] = 1; say("%d", big[0]); }
STEP { say("ok"); }
HINT { say("none"); }
