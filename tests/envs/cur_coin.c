/* cur_coin.c — test environment for the adaptive curriculum's window: every
 * episode is won or lost by a fair coin from its seed, whatever the action and
 * the level, so window means fall above, below and between the thresholds and
 * the levels a run logs can be checked against the rule. Not part of stdenv. */
#include <spade/dsl.h>
ENV("cur_coin", "Won by a coin toss.", .max_steps = 1, .family = "test")
PARAM(int, hard, 0, 0, 4)
STATE { int x; };
RESET { say("Say anything."); }
STEP { finish(chance(0.5)); }
HINT { say("Nothing helps."); }
SOLVE { act("ok"); }
