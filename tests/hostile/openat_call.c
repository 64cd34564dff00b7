/* expect: link_error
 * tries: openat(AT_FDCWD, "spade_hostile_pwned_openat_call", O_CREAT) as a C call.
 * A libc function outside the allowlist: tcc (-nostdlib) must fail to resolve it at relocation.
 */
#include <spade/dsl.h>
ENV("openat-call", "Hostile: calls a libc function outside the allowlist.", .max_steps = 10)
STATE { int n; };
int openat(int dirfd, const char *path, int flags, ...);
RESET { say("ready"); }
STEP { openat(-100, "spade_hostile_pwned_openat_call", 0101, 0644); say("survived"); }
HINT { say("none"); }
