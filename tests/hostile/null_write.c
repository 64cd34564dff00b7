/* expect: crash
 * tries: writes through a null pointer in reset (SIGSEGV).
 */
#include <spade/dsl.h>
ENV("null-write", "Hostile: null write.", .max_steps = 10)
STATE { int n; };
RESET { volatile int *p = 0; *p = 42; say("survived"); }
STEP { say("ok"); }
HINT { say("none"); }
