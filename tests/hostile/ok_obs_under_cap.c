/* expect: ok
 * tries: an observation of 60000 bytes, just under the 64 KiB cap.
 */
#include <spade/dsl.h>
ENV("obs-under-cap", "Hostile: a large but legal observation.", .max_steps = 10)
STATE { int n; };
static char chunk[60001];
RESET { say("ready"); }
STEP { memset(chunk, 'o', 60000); chunk[60000] = 0; say("%s", chunk); }
HINT { say("none"); }
