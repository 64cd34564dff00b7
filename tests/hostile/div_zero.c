/* expect: crash
 * tries: integer division by zero in step (SIGFPE).
 */
#include <spade/dsl.h>
ENV("div-zero", "Hostile: integer division by zero.", .max_steps = 10)
STATE { int n; };
RESET { say("ready"); }
STEP { volatile int z = 0; say("%d", 1 / z); }
HINT { say("none"); }
