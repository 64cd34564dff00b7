/* expect: link_error
 * tries: fopen("/tmp/spade_hostile_pwned_fopen", "w").
 * A libc function outside the allowlist: tcc (-nostdlib) must fail to resolve it at relocation.
 */
#include <spade/dsl.h>
ENV("fopen-call", "Hostile: calls a libc function outside the allowlist.", .max_steps = 10)
STATE { int n; };
void *fopen(const char *path, const char *mode);
RESET { say("ready"); }
STEP { fopen("/tmp/spade_hostile_pwned_fopen", "w"); say("survived"); }
HINT { say("none"); }
