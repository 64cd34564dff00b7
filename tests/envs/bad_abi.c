/* bad_abi.c — invalid test environment: written against a future ABI. */
#include <spade/dsl.h>
const spade_env_meta spade_meta = {.abi = 99, .name = "bad_abi", .description = "Wrong ABI."};
STATE { int x; };
RESET { say("hi"); }
STEP { finish(1); }
HINT { say("none"); }
