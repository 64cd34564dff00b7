/* vec_resethang.c — test environment for the vector env: with hang = 1 the
 * reset of an episode whose number is 0 never returns, so a reset batch over
 * two workers can time out on one of them only. Not part of stdenv. */
#include <spade/dsl.h>
ENV("vec_resethang", "Say the number.", .max_steps = 3, .family = "test")
PARAM(int, hang, 0, 0, 1)
STATE { long k; };
RESET {
    S->k = rand_range(0, 3);
    for (volatile long spin = 0; hang && S->k == 0; spin++) {
    }
    say("Say %ld.", S->k);
}
STEP { finish(parse_int(action) == S->k); }
HINT { say("Repeat the number."); }
