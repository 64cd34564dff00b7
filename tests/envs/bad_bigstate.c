/* bad_bigstate.c — invalid test environment: asks for more state than allowed. */
#include <spade/dsl.h>
ENV("bad_bigstate", "Too much state.")
STATE { char big[SPADE_STATE_MAX + 1]; };
RESET { say("hi"); }
STEP { finish(1); }
HINT { say("none"); }
