/* cli_nohint.c — test environment for the checker: everything works except
 * that HINT says nothing (the hint check must fail). Not part of stdenv. */
#include <spade/dsl.h>
ENV("cli_nohint", "Name the number shown; the hint is empty.", .max_steps = 2, .family = "test")
STATE { long n; };
RESET { S->n = rand_range(1, 1000); say("Repeat %ld.", S->n); }
STEP { finish(parse_int(action) == S->n); }
HINT { }
SOLVE { act("%ld", S->n); }
