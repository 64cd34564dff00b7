/* expect: ok
 * tries: nothing: a well-behaved environment (the example of README.md), so the runner
 * proves it does not fail everything.
 */
#include <spade/dsl.h>
ENV("add", "Add two numbers drawn from a range.", .max_steps = 3, .family = "math")
PARAM(int, lo, 10, 0, 1000000)
PARAM(int, hi, 99, 0, 1000000)
STATE { long a, b; };
RESET { S->a = rand_range(lo, hi); S->b = rand_range(lo, hi);
        say("Compute %ld + %ld. Answer with the number.", S->a, S->b); }
STEP  { if (parse_int(action) == S->a + S->b) win(); else say("No, try again."); }
HINT  { say("Add the ones, carry, then add the tens."); }
SOLVE { act("%ld", S->a + S->b); }
