/* hint_fixed.c — test environment for a given (self-written) hint and the
 * hint_echo gate: the password is the same on every seed, and the
 * environment's own HINT does not say it. */
#include <spade/dsl.h>
ENV("hint_fixed", "Say the password.", .max_steps = 8)
STATE { int tries; };
RESET { S->tries = 0; say("Say the password."); }
STEP { S->tries++; if (str_ieq(action, "marmalade")) win(); else say("No."); }
HINT { say("It is something sweet to spread on toast."); }
SOLVE { act("marmalade"); }
