/* cli_global.c — test environment for the checker: keeps a counter in a static
 * variable instead of S, so two instances reset with the same seed differ (the
 * reset_deterministic check must fail). Not part of stdenv. */
#include <spade/dsl.h>
ENV("cli_global", "Counts resets in a global (a bug).", .max_steps = 1, .family = "test")
static long resets;
STATE { long n; };
RESET { resets++; S->n = resets; say("Round %ld: repeat %ld.", resets, S->n); }
STEP { finish(parse_int(action) == S->n); }
HINT { say("Copy the number."); }
SOLVE { act("%ld", S->n); }
