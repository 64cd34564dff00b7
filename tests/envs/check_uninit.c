/* check_uninit.c — test environment for the checker: RESET sums an array it
 * never initialised. Two copies side by side used to read the same stack
 * leftovers and pass reset_deterministic; with the checker's poisoned memory
 * (a pattern per instance) they differ. Not part of stdenv. */
#include <spade/dsl.h>
ENV("check_uninit", "Say back the number.", .max_steps = 5, .family = "test")
STATE { long n; };
RESET {
    long counts[8];
    long i, sum = 0;
    for (i = 0; i < 8; i++) sum += counts[i] & 1; /* the bug: counts is never set */
    S->n = rand_range(1, 9) + sum;
    say("Number %ld.", S->n);
}
STEP { if (parse_int(action) == S->n) win(); else say("No."); }
HINT { say("Repeat it."); }
SOLVE { act("%ld", S->n); }
