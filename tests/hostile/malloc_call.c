/* expect: link_error
 * tries: malloc() of the runtime's heap.
 * A libc function outside the allowlist: tcc (-nostdlib) must fail to resolve it at relocation.
 */
#include <spade/dsl.h>
ENV("malloc-call", "Hostile: calls a libc function outside the allowlist.", .max_steps = 10)
STATE { int n; };
void *malloc(size_t n);
RESET { say("ready"); }
STEP { char *p = (char *)malloc(100); if (p) p[0] = 1; say("survived"); }
HINT { say("none"); }
