/* expect: output_too_large
 * tries: a huge observation: say() 100 KiB a hundred times in step (10 MiB, the cap is 64 KiB).
 */
#include <spade/dsl.h>
ENV("say-loop", "Hostile: a 10 MiB observation.", .max_steps = 10)
STATE { int n; };
static char chunk[100 * 1024];
RESET { say("ready"); }
STEP { int i; memset(chunk, 'x', sizeof chunk - 1); for (i = 0; i < 100; i++) say("%s", chunk); }
HINT { say("none"); }
