/* expect: crash
 * tries: reads through a null pointer in step (SIGSEGV).
 */
#include <spade/dsl.h>
ENV("null-read", "Hostile: null dereference.", .max_steps = 10)
STATE { int n; };
RESET { say("ready"); }
STEP { volatile int *p = 0; say("%d", *p); }
HINT { say("none"); }
