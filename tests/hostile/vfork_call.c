/* expect: link_error
 * tries: vfork() as a C call in reset.
 * A libc function outside the allowlist: tcc (-nostdlib) must fail to resolve it at relocation.
 */
#include <spade/dsl.h>
ENV("vfork-call", "Hostile: calls a libc function outside the allowlist.", .max_steps = 10)
STATE { int n; };
int vfork(void);
RESET { vfork(); say("survived"); }
STEP { say("ok"); }
HINT { say("none"); }
