/* expect: link_error
 * tries: getenv("HOME") to read the worker's environment.
 * A libc function outside the allowlist: tcc (-nostdlib) must fail to resolve it at relocation.
 */
#include <spade/dsl.h>
ENV("getenv-call", "Hostile: calls a libc function outside the allowlist.", .max_steps = 10)
STATE { int n; };
char *getenv(const char *name);
RESET { say("%s", getenv("HOME")); say("survived"); }
STEP { say("ok"); }
HINT { say("none"); }
