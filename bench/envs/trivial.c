/* trivial.c — the cheapest possible environment: the stepping benchmark's measure of pure overhead.
   Not a useful task. */
#include <spade/dsl.h>
ENV("bench_trivial", "Count steps; every action is accepted.", .max_steps = 1000000)
STATE { long n; };
RESET { S->n = 0; say("0"); }
STEP  { S->n++; say("%ld", S->n); reward(0.0); }
HINT  { say("Any action works."); }
SOLVE { act("go"); }
