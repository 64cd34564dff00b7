/* check_latehang.c — test environment for the checker: SOLVE hangs on two of
 * the 20 seeds of the solve check (6 and 9: their numbers are 221 and 840),
 * none of the 5 seeds the earlier checks play. The solve check must blame
 * seed 6 with a timeout (not an episode the timeout's stop left unfinished)
 * and stop the checker there. Not part of stdenv. */
#include <spade/dsl.h>
ENV("check_latehang", "Say the number.", .max_steps = 3, .family = "test")
STATE { long k; };
RESET { S->k = rand_range(0, 999); say("Say %ld.", S->k); }
STEP { finish(parse_int(action) == S->k); }
HINT { say("Repeat the number."); }
SOLVE {
    for (volatile long spin = 0; S->k == 221 || S->k == 840; spin++) {
    }
    act("%ld", S->k);
}
