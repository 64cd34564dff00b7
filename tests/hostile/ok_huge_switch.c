/* expect: ok
 * tries: a switch of 3000 cases (a legitimate, if clumsy, lookup table). libtcc sorts the
 * cases with glibc's qsort, whose merge sort asks sysconf(_SC_PHYS_PAGES), i.e. the
 * sysinfo system call, how much memory the machine has before it allocates a buffer.
 * sysinfo is not on the allowlist, so the compile killed the worker: forbidden_syscall
 * for an honest environment. The filter now refuses sysinfo with EPERM (it would also
 * tell the environment the machine's uptime, load and process count), and glibc then
 * assumes memory is plentiful: ok.
 * fill: @CASES@ 3000 case __COUNTER__: r += 2; break;\n
 */
#include <spade/dsl.h>
ENV("ok-huge-switch", "A lookup table written as a switch.", .max_steps = 10)
STATE { int n; };
RESET { int r = 0; switch (S->n + 2) { @CASES@ default: r = -1; } say("ready %d", r); }
STEP { say("x"); }
HINT { say("none"); }
