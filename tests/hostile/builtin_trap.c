/* expect: link_error
 * tries: __builtin_trap() in step.
 * libtcc 0.9.27 has no __builtin_trap: it takes it for an implicitly declared
 * function (a warning) and then cannot resolve the symbol, so this is a link error, not
 * the crash gcc would give. ud2.c and int3.c are the trapping instructions themselves.
 */
#include <spade/dsl.h>
ENV("builtin-trap", "Hostile: __builtin_trap in step.", .max_steps = 10)
STATE { int n; };
RESET { say("ready"); }
STEP { __builtin_trap(); say("survived"); }
HINT { say("none"); }
