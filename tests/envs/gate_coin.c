/* gate_coin.c — test environment for random_agent: any answer wins half the time. */
#include <spade/dsl.h>
ENV("gate_coin", "A coin flip.", .max_steps = 1)
PARAM(int, n, 3, 1, 5)
STATE { int t; };
RESET { say("Heads or tails?"); }
STEP { finish(chance(0.5)); }
HINT { say("It is luck."); }
SOLVE { act("heads"); }
