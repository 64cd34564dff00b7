/* expect: invalid_env
 * tries: a tool whose signature is not a C signature the runtime can call.
 */
#include <spade/dsl.h>
ENV("tool-bad-sig", "Hostile: an unparseable tool signature.", .max_steps = 10)
STATE { int n; };
static int t(void) { return 1; }
spade_tool_def spade_tool_0 = {"t", "struct evil (*)(...)[", "bad", (void *)t};
RESET { say("ready"); }
STEP { say("ok"); }
HINT { say("none"); }
