/* expect: link_error
 * tries: clone() as a C call in step.
 * A libc function outside the allowlist: tcc (-nostdlib) must fail to resolve it at relocation.
 */
#include <spade/dsl.h>
ENV("clone-call", "Hostile: calls a libc function outside the allowlist.", .max_steps = 10)
STATE { int n; };
int clone(int (*fn)(void *), void *stack, int flags, void *arg, ...);
RESET { say("ready"); }
STEP { clone(0, 0, 0, 0); say("survived"); }
HINT { say("none"); }
