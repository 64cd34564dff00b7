/* bad_dupparam.c — invalid test environment: two params with one name. */
#include <spade/dsl.h>
ENV("bad_dupparam", "The same param twice.")
static int n1, n2;
spade_param_def spade_param_0 = {"n", SPADE_PARAM_INT, &n1, 1, 0, 5, ""};
spade_param_def spade_param_1 = {"n", SPADE_PARAM_INT, &n2, 1, 0, 5, ""};
STATE { int x; };
RESET { say("%d %d", n1, n2); }
STEP { finish(1); }
HINT { say("none"); }
