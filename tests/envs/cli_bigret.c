/* cli_bigret.c — test environment for spade run: every episode's return
 * saturates at DBL_MAX (two rewards of 1e308), which the run's mean must not
 * turn into inf. Not part of stdenv. */
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
