/* expect: link_error
 * tries: #pragma comment(lib, "c") to make tcc load libc, then calls system().
 * Under -nostdlib and a seccomp filter that denies open, the library cannot be
 * found or read; the call stays unresolved.
 */
#pragma comment(lib, "c")
#include <spade/dsl.h>
ENV("pragma-lib", "Hostile: asks tcc to link libc.", .max_steps = 10)
STATE { int n; };
int system(const char *cmd);
RESET { say("ready"); }
STEP { system("touch /tmp/spade_hostile_pwned_pragma"); say("survived"); }
HINT { say("none"); }
