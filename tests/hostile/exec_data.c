/* expect: crash
 * tries: calls into a static data array filled with int3 (0xcc). If data is not executable,
 * SIGSEGV; if it is, the first int3 raises SIGTRAP: a crash either way.
 */
#include <spade/dsl.h>
ENV("exec-data", "Hostile: executes its data.", .max_steps = 10)
STATE { int n; };
static unsigned char blob[64] = {0xcc, 0xcc, 0xcc, 0xcc, 0xcc, 0xcc, 0xcc, 0xcc};
RESET { say("ready"); }
STEP { ((void (*)(void))(void *)blob)(); say("survived"); }
HINT { say("none"); }
