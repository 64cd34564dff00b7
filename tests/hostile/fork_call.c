/* expect: link_error
 * tries: fork() as a C call in step.
 * A libc function outside the allowlist: tcc (-nostdlib) must fail to resolve it at relocation.
 */
#include <spade/dsl.h>
ENV("fork-call", "Hostile: calls a libc function outside the allowlist.", .max_steps = 10)
STATE { int n; };
int fork(void);
RESET { say("ready"); }
STEP { fork(); say("survived"); }
HINT { say("none"); }
