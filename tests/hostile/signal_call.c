/* expect: link_error
 * tries: signal(SIGSEGV, handler) to survive its own crash.
 * A libc function outside the allowlist: tcc (-nostdlib) must fail to resolve it at relocation.
 */
#include <spade/dsl.h>
ENV("signal-call", "Hostile: calls a libc function outside the allowlist.", .max_steps = 10)
STATE { int n; };
typedef void (*handler_t)(int);
handler_t signal(int sig, handler_t h);
static void on_segv(int sig) { (void)sig; }
RESET { say("ready"); }
STEP { signal(11, on_segv); say("survived"); }
HINT { say("none"); }
