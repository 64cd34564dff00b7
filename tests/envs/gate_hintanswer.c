/* gate_hintanswer.c — test environment for hint_echo: the hint says the answer. */
#include <spade/dsl.h>
ENV("gate_hintanswer", "The hint gives it away.", .max_steps = 3)
PARAM(int, n, 3, 1, 5)
STATE { long secret; };
RESET { S->secret = rand_range(100000, 999999); say("Guess my six-digit number."); }
STEP { finish(parse_int(action) == S->secret); }
HINT { say("The number is %ld.", S->secret); }
SOLVE { act("%ld", S->secret); }
