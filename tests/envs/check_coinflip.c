/* check_coinflip.c — test environment for the checker: any answer of odd length
 * wins, so a random agent wins about half its episodes. A warning before; now
 * random_agent fails. Not part of stdenv. */
#include <spade/dsl.h>
ENV("check_coinflip", "Call the coin.", .max_steps = 1, .family = "test")
STATE { int n; };
RESET { say("Heads or tails?"); }
STEP { finish(action_len % 2 == 1); }
HINT { say("Say it short."); }
SOLVE { act("x"); }
