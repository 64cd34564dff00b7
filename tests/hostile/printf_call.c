/* expect: link_error
 * tries: printf() to the worker's stdout.
 * A libc function outside the allowlist: tcc (-nostdlib) must fail to resolve it at relocation.
 */
#include <spade/dsl.h>
ENV("printf-call", "Hostile: calls a libc function outside the allowlist.", .max_steps = 10)
STATE { int n; };
int printf(const char *fmt, ...);
RESET { say("ready"); }
STEP { printf("pwned\n"); say("survived"); }
HINT { say("none"); }
