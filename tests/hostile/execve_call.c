/* expect: link_error
 * tries: execve("/bin/sh") as a C call in step.
 * A libc function outside the allowlist: tcc (-nostdlib) must fail to resolve it at relocation.
 */
#include <spade/dsl.h>
ENV("execve-call", "Hostile: calls a libc function outside the allowlist.", .max_steps = 10)
STATE { int n; };
int execve(const char *path, char *const argv[], char *const envp[]);
RESET { say("ready"); }
STEP { char *argv[2]; argv[0] = "/bin/sh"; argv[1] = 0; execve("/bin/sh", argv, 0); say("survived"); }
HINT { say("none"); }
