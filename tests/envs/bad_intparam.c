/* bad_intparam.c — invalid test environment: an int param with a fractional default. */
#include <spade/dsl.h>
ENV("bad_intparam", "Fractional default for an int.")
PARAM(int, size, 2.5, 1, 30)
STATE { int x; };
RESET { say("size %d", size); }
STEP { finish(1); }
HINT { say("none"); }
