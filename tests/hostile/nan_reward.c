/* expect: invalid_env
 * tries: reward(NaN) in step (0.0/0.0, computed so that tcc cannot fold it away). A NaN
 * reward is a bug in the environment: before, reward() silently dropped it and the step
 * passed as if nothing had happened (spade check said PASS). Now the host fails the step
 * (SPADE_HOST_BAD_REWARD) and the parent reports invalid_env naming reward().
 */
#include <spade/dsl.h>
ENV("nan-reward", "Hostile: rewards NaN.", .max_steps = 10)
STATE { double zero; };
RESET { S->zero = 0.0; say("ready"); }
STEP { reward(S->zero / S->zero); say("rewarded"); }
HINT { say("none"); }
