/* expect: crash
 * tries: metadata with a wild pointer: spade_meta.name points at address 16, written by hand
 * against env.h. The host reads the name while loading (inside the worker), so the
 * worker dies of SIGSEGV during load: crash, and the parent is unharmed.
 */
#include <spade/dsl.h>
const spade_env_meta spade_meta = {.abi = SPADE_ENV_ABI, .name = (const char *)16, .description = "wild", .max_steps = 10};
STATE { int n; };
RESET { say("ready"); }
STEP { say("ok"); }
HINT { say("none"); }
