/* gate_hang.c — test environment for a hanging STEP: every step loops
 * forever. `spade check` must FAIL naming the deadline (not SKIP and exit 0)
 * and the gates must fail it at the first timeout and skip the rest. Not
 * part of stdenv. */
#include <spade/dsl.h>
ENV("gate_hang", "Say anything.", .max_steps = 3, .family = "test")
STATE { int n; };
RESET { S->n = rand_range(1, 9); say("Say a number."); }
STEP {
    for (volatile int spin = 0; S->n > 0; spin++) {
    }
    finish(0);
}
HINT { say("Any number will do."); }
