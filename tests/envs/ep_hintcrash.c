/* ep_hintcrash.c — test environment for a run's given hint: its own HINT
 * crashes the worker, so an episode that called it would fail. Won by any
 * action. Not part of stdenv. */
#include <spade/dsl.h>
ENV("ep-hintcrash", "Its own hint crashes.", .max_steps = 1, .family = "test")
STATE { long n; };
RESET { say("Say anything."); }
STEP { win(); }
HINT { volatile int *p = 0; *p = 1; say("never"); }
