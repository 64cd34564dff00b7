/* expect: link_error
 * tries: system("touch /tmp/spade_hostile_pwned_system") as a C call.
 * A libc function outside the allowlist: tcc (-nostdlib) must fail to resolve it at relocation.
 */
#include <spade/dsl.h>
ENV("system-call", "Hostile: calls a libc function outside the allowlist.", .max_steps = 10)
STATE { int n; };
int system(const char *cmd);
RESET { say("ready"); }
STEP { system("touch /tmp/spade_hostile_pwned_system"); say("survived"); }
HINT { say("none"); }
