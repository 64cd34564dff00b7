/* gate_yes_or.c — test environment for constant_agent: a wrong `||` makes
 * "yes" win every seed (the check meant "the right one of yes and no").
 * Not part of stdenv. */
#include <spade/dsl.h>
ENV("gate_yes_or", "Is the number prime?", .max_steps = 1, .family = "test")
STATE { long n; int prime; };
static int is_prime(long n) { if (n < 2) return 0; for (long d = 2; d * d <= n; d++) if (n % d == 0) return 0; return 1; }
RESET { S->n = rand_range(100, 999); S->prime = is_prime(S->n); say("Is %ld prime? Answer yes or no.", S->n); }
STEP { finish(str_ieq(action, "yes") || (str_ieq(action, "no") && !S->prime)); }
HINT { say("Try dividing by the primes up to its square root."); }
SOLVE { act("%s", S->prime ? "yes" : "no"); }
