/* cli_bigret.c — test environment for spade run: rewards of 1e308, beyond
 * SPADE_REWARD_MAX, which fail the step (invalid_env) so that no return or
 * run mean can become inf. Not part of stdenv. */
#include <spade/dsl.h>
ENV("cli_bigret", "Returns the largest double.", .max_steps = 2, .family = "test")
STATE { long n; };
RESET { say("Say anything."); }
STEP {
    reward(1e308);
    reward(1e308);
    finish(0);
}
HINT { say("Anything wins big."); }
