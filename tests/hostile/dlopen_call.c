/* expect: link_error
 * tries: dlopen("libc.so.6") then dlsym("system").
 * A libc function outside the allowlist: tcc (-nostdlib) must fail to resolve it at relocation.
 */
#include <spade/dsl.h>
ENV("dlopen-call", "Hostile: calls a libc function outside the allowlist.", .max_steps = 10)
STATE { int n; };
void *dlopen(const char *file, int mode);
void *dlsym(void *h, const char *name);
RESET { void *h = dlopen("libc.so.6", 2); int (*sys)(const char *) = (int (*)(const char *))dlsym(h, "system"); if (sys) sys("touch /tmp/spade_hostile_pwned_dlopen"); say("survived"); }
STEP { say("ok"); }
HINT { say("none"); }
