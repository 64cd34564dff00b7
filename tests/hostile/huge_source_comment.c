/* expect: ok
 * tries: a 10 MB source, almost all of it one comment (the runner expands @PAD@ below).
 * fill: @PAD@ 180000 padding padding padding padding padding padding padding\n
 * It must be read whole, compile, and run within the deadlines: no hang, no cap hit.
 */
#include <spade/dsl.h>
ENV("huge-comment", "Hostile: a 10 MB source.", .max_steps = 10)
STATE { int n; };
/* @PAD@ */
RESET { say("ready"); }
STEP { say("ok"); }
HINT { say("none"); }
