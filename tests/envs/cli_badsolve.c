/* cli_badsolve.c — test environment for the checker: SOLVE answers one too
 * many, so it never wins (the solve check must fail). Not part of stdenv. */
#include <spade/dsl.h>
ENV("cli_badsolve", "Name the number shown; the reference answer is wrong.", .max_steps = 1, .family = "test")
STATE { long n; };
RESET { S->n = rand_range(1, 1000); say("Repeat %ld.", S->n); }
STEP { finish(parse_int(action) == S->n); }
HINT { say("Copy the number."); }
SOLVE { act("%ld", S->n + 1); }
