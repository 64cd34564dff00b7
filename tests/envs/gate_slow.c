/* gate_slow.c — test environment for the limits gate: every step burns about 3 ms of CPU. */
#include <spade/dsl.h>
ENV("gate_slow", "A slow step.", .max_steps = 4)
PARAM(int, n, 3, 1, 5)
STATE { long x; };
RESET { say("Say anything."); }
STEP { for (long i = 0; i < 6000000; i++) S->x = S->x * 31 + i; say("%ld", S->x & 1); }
HINT { say("Be patient."); }
