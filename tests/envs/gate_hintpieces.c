/* gate_hintpieces.c — test environment for hint_echo: the hint's second
 * number is the answer ("Not 12: the answer is 31"); its first piece is not,
 * so echoing only the first piece passed. Not part of stdenv. */
#include <spade/dsl.h>
ENV("gate_hintpieces", "Guess my number.", .max_steps = 1, .family = "test")
STATE { long secret; };
RESET { S->secret = rand_range(100, 999); say("Guess my three-digit number."); }
STEP { finish(parse_int(action) == S->secret); }
HINT { say("Not %ld: the answer is %ld.", S->secret + 7, S->secret); }
SOLVE { act("%ld", S->secret); }
