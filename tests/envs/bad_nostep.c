/* bad_nostep.c — invalid test environment: has no STEP block. */
#include <spade/dsl.h>
ENV("bad_nostep", "Cannot be stepped.")
STATE { int x; };
RESET { say("hi"); }
HINT { say("none"); }
