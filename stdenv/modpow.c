/* modpow.c — compute a power modulo m, far too large to expand.
 * Teaches: fast exponentiation by repeated squaring, reducing at every step.
 * Params: mod = largest modulus (m is drawn from [mod/2, mod]); power = largest
 * exponent (e is drawn from [power/2, power]). */
#include <spade/dsl.h>
ENV("modpow", "Compute a^e mod m.", .family = "math", .max_steps = 1)
PARAM(int, mod, 97, 5, 1000000000)
PARAM(int, power, 100, 2, 1000000000)
STATE { long a, e, m, r; };
RESET {
    S->m = rand_range(mod / 2 + 2, mod); S->a = rand_range(2, S->m - 1); S->e = rand_range(power / 2 + 1, power);
    S->r = 1;
    for (long b = S->a, e = S->e; e > 0; e /= 2, b = b * b % S->m) /* m < 2^31, so products fit in a long */
        if (e % 2) S->r = S->r * b % S->m;
    say("Compute %ld^%ld mod %ld, the remainder of %ld to the power %ld divided by %ld. Answer with the number.\n",
        S->a, S->e, S->m, S->a, S->e, S->m);
}
STEP {
    if (parse_int(action) == S->r) { say("Correct.\n"); win(); }
    else { say("Wrong: it is %ld.\n", S->r); lose(); }
}
HINT { say("Write the exponent in binary. Square the base again and again, reducing modulo m each time, and multiply together (again reducing) the squares whose bit is 1. Never compute the full power."); }
SOLVE { act("%ld", S->r); }
