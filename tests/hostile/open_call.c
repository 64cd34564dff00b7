/* expect: link_error
 * tries: open("/tmp/spade_hostile_pwned_open_call", O_CREAT) as a C call.
 * A libc function outside the allowlist: tcc (-nostdlib) must fail to resolve it at relocation.
 */
#include <spade/dsl.h>
ENV("open-call", "Hostile: calls a libc function outside the allowlist.", .max_steps = 10)
STATE { int n; };
int open(const char *path, int flags, ...);
RESET { say("ready"); }
STEP { open("/tmp/spade_hostile_pwned_open_call", 0101, 0644); say("survived"); }
HINT { say("none"); }
