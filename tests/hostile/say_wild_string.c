/* expect: crash
 * tries: say("%s", (char *)1): the runtime trusts the pointer, as C does; the worker
 * crashes inside vsnprintf (SIGSEGV) and the parent classifies it.
 */
#include <spade/dsl.h>
ENV("say-wild", "Hostile: passes a wild pointer to say.", .max_steps = 10)
STATE { int n; };
RESET { say("ready"); }
STEP { say("%s", (const char *)1); }
HINT { say("none"); }
