/* expect: invalid_env
 * tries: .success = 1e300, a threshold no episode can reach (a step rewards at most
 * SPADE_REWARD_MAX = 1e9, core/env.h); before, it was accepted and every episode lost.
 */
#include <spade/dsl.h>
ENV("huge-success", "Hostile: a success threshold beyond any return.", .max_steps = 10, .success = 1e300)
STATE { int n; };
RESET { say("ready"); }
STEP { win(); }
HINT { say("none"); }
