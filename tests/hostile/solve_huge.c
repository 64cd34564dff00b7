/* expect: output_too_large
 * tries: a 1 MiB reference action from solve (the cap is 64 KiB).
 */
#include <spade/dsl.h>
ENV("solve-huge", "Hostile: a 1 MiB reference action.", .max_steps = 10)
STATE { int n; };
static char chunk[1 << 20];
RESET { say("ready"); }
STEP { say("ok"); }
HINT { say("none"); }
SOLVE { memset(chunk, 's', sizeof chunk - 1); act("%s", chunk); }
