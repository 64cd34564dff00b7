/* expect: timeout
 * tries: a finite but far too long computation in step (about 10^12 multiply-adds).
 */
#include <spade/dsl.h>
ENV("busy-cpu", "Hostile: burns CPU in step.", .max_steps = 10)
STATE { int n; };
RESET { say("ready"); }
STEP { volatile double acc = 1.0; long i, j; for (i = 0; i < 1000000L; i++) for (j = 0; j < 1000000L; j++) acc = acc * 1.0000001 + 1e-9; say("%f", acc); }
HINT { say("none"); }
