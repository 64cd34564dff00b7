/* cli_crashempty.c — test environment for the checker: STEP dereferences a
 * null pointer when the action is empty (the arbitrary_actions check must fail
 * with a crash). Not part of stdenv. */
#include <spade/dsl.h>
ENV("cli_crashempty", "Crashes on an empty action.", .max_steps = 3, .family = "test")
STATE { long n; };
RESET { S->n = rand_range(1, 9); say("Repeat %ld.", S->n); }
STEP {
    if (action_len == 0) {
        volatile long *p = 0;
        *p = 1;
    }
    finish(parse_int(action) == S->n);
}
HINT { say("Copy the number."); }
SOLVE { act("%ld", S->n); }
