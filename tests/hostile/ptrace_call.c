/* expect: link_error
 * tries: ptrace(PTRACE_ATTACH) on the parent as a C call.
 * A libc function outside the allowlist: tcc (-nostdlib) must fail to resolve it at relocation.
 */
#include <spade/dsl.h>
ENV("ptrace-call", "Hostile: calls a libc function outside the allowlist.", .max_steps = 10)
STATE { int n; };
long ptrace(int req, int pid, void *addr, void *data);
int getppid(void);
RESET { say("ready"); }
STEP { ptrace(16, getppid(), 0, 0); say("survived"); }
HINT { say("none"); }
