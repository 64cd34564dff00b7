/* expect: invalid_env
 * tries: an ABI version the runtime does not speak (999).
 */
#include <spade/dsl.h>
const spade_env_meta spade_meta = {.abi = 999, .name = "abi-mismatch", .description = "Hostile: wrong ABI.", .max_steps = 10};
STATE { int n; };
RESET { say("ready"); }
STEP { say("ok"); }
HINT { say("none"); }
