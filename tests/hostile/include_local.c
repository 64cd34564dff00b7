/* expect: compile_error
 * tries: #include "x.h": a file next to the source; there is none, and open is denied.
 */
#include "x.h"
#include <spade/dsl.h>
ENV("include-local", "Hostile: includes a local header.", .max_steps = 10)
STATE { int n; };
RESET { say("ready"); }
STEP { say("ok"); }
HINT { say("none"); }
