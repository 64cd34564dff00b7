/* expect: crash
 * tries: a wild pointer: writes 0x5a bytes from its own state upward, one page at a time,
 * through the runtime's heap until it reaches unmapped memory (SIGSEGV). The write loop
 * faults before the corrupted runtime runs again, so the outcome is crash.
 */
#include <spade/dsl.h>
ENV("scribble-state", "Hostile: scribbles over the runtime's memory.", .max_steps = 10)
STATE { int n; };
RESET { say("ready"); }
STEP { volatile char *p = (volatile char *)S; for (;;) { *p = 0x5a; p += 64; } }
HINT { say("none"); }
