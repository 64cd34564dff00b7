/* expect: link_error
 * tries: creat("/tmp/spade_hostile_pwned_creat_call") as a C call.
 * A libc function outside the allowlist: tcc (-nostdlib) must fail to resolve it at relocation.
 */
#include <spade/dsl.h>
ENV("creat-call", "Hostile: calls a libc function outside the allowlist.", .max_steps = 10)
STATE { int n; };
int creat(const char *path, int mode);
RESET { say("ready"); }
STEP { creat("/tmp/spade_hostile_pwned_creat_call", 0644); say("survived"); }
HINT { say("none"); }
