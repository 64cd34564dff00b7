/* expect: crash
 * tries: patches the runtime's own code: writes over the first bytes of spade_say (a native
 * function of the worker, mapped read+execute), so the write faults (SIGSEGV).
 */
#include <spade/dsl.h>
ENV("scribble-code", "Hostile: writes into the runtime's code.", .max_steps = 10)
STATE { int n; };
RESET { say("ready"); }
STEP { volatile unsigned char *p = (volatile unsigned char *)(void *)spade_say; p[0] = 0xc3; say("survived"); }
HINT { say("none"); }
