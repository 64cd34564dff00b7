/* expect: output_too_large
 * tries: a 1 MiB hint (the cap is 64 KiB).
 */
#include <spade/dsl.h>
ENV("hint-huge", "Hostile: a 1 MiB hint.", .max_steps = 10)
STATE { int n; };
static char chunk[1 << 20];
RESET { say("ready"); }
STEP { say("ok"); }
HINT { memset(chunk, 'h', sizeof chunk - 1); say("%s", chunk); }
