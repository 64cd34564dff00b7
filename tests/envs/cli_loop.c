/* cli_loop.c — test environment for the checker: STEP never returns on a long
 * action (the arbitrary_actions check must fail with a timeout, and the
 * checker must go on). Not part of stdenv. */
#include <spade/dsl.h>
ENV("cli_loop", "Hangs on long actions.", .max_steps = 3, .family = "test")
STATE { long n; };
RESET { S->n = rand_range(1, 9); say("Repeat %ld.", S->n); }
STEP {
    volatile long spin = 0;
    while (action_len > 1000)
        spin++;
    finish(parse_int(action) == S->n);
}
HINT { say("Copy the number."); }
SOLVE { act("%ld", S->n); }
