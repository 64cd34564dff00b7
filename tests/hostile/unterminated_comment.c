/* expect: compile_error
 * tries: a comment that never ends.
 */
#include <spade/dsl.h>
ENV("unterminated", "Hostile: unterminated comment.", .max_steps = 10)
STATE { int n; };
RESET { say("ready"); }
STEP { say("ok"); }
HINT { say("none"); }
/* never closed
