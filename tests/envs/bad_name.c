/* bad_name.c — invalid test environment: a name outside [a-z0-9_-]. */
#include <spade/dsl.h>
ENV("Bad Name", "Spaces and capitals in the name.")
STATE { int x; };
RESET { say("hi"); }
STEP { finish(1); }
HINT { say("none"); }
