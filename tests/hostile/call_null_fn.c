/* expect: crash
 * tries: calls a null function pointer in step (SIGSEGV).
 */
#include <spade/dsl.h>
ENV("call-null", "Hostile: calls a null function pointer.", .max_steps = 10)
STATE { int n; };
RESET { say("ready"); }
STEP { void (*volatile fn)(void) = 0; fn(); say("survived"); }
HINT { say("none"); }
