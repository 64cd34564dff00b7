/* vec_resethang.c — test environment for the vector env: with hang = 1 its
 * RESET never returns, so a subset reset can time out in one worker while
 * another worker's envs reset fine (the envs of that worker must then be
 * usable: tests/test_vecenv.c). Not part of stdenv. */
#include <spade/dsl.h>
ENV("vec-resethang", "Say anything.", .max_steps = 4, .family = "test")
PARAM(int, hang, 0, 0, 1)
STATE { long k; };
RESET {
    for (volatile long spin = 0; hang; spin++) {
    }
    S->k = rand_range(0, 999);
    say("ready %ld", S->k);
}
STEP { say("got %ld", S->k); if (steps() >= 2) finish(1); }
HINT { say("Anything goes."); }
