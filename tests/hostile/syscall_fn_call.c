/* expect: link_error
 * tries: libc's syscall() function (fork, nr 57) as a C call.
 * A libc function outside the allowlist: tcc (-nostdlib) must fail to resolve it at relocation.
 */
#include <spade/dsl.h>
ENV("syscall-fn-call", "Hostile: calls a libc function outside the allowlist.", .max_steps = 10)
STATE { int n; };
long syscall(long nr, ...);
RESET { say("ready"); }
STEP { syscall(57); say("survived"); }
HINT { say("none"); }
